//! `io: arena { "NAME": caller }`: an input the caller places itself (a sensor's DMA target) stays
//! in the caller's buffer, passed to `run_in`, while every other port lives in the arena. The
//! models match onnxruntime (fixtures) and tract, and the arena no longer has room for that input.

mod common;

/// A MobileNetV2 block: its input is live at the `io: arena` arena's peak, so leaving the
/// 36,864-byte input with the caller takes exactly its bytes off that arena. Both untiled:
/// patch-based execution moves the peak (the search finds a different band split for each). The
/// depthwise layers overlap their input and output (the default), 260,352 B without the input.
mod mobilenetv2_block {
    const PATH: &str = "tests/models/mobilenetv2_block.onnx";
    sramfit::model! {
        pub mod placed {
            path: "tests/models/mobilenetv2_block.onnx",
            io: arena { "input": caller },
            optimize: { tile: false },
        }
    }
    sramfit::model! {
        pub mod in_arena { path: "tests/models/mobilenetv2_block.onnx", io: arena, optimize: { tile: false } }
    }

    fn run_dyn(inputs: &[&[f32]], outputs: &mut [&mut [f32]]) -> Result<(), sramfit::Error> {
        let mut arena = Box::new(placed::Arena::new());
        // The only input is the caller's: the arena has no input accessor left.
        assert_eq!(arena.inputs_mut().len(), 0);
        placed::run_in(&mut arena, inputs[0].try_into().unwrap())?;
        outputs[0].copy_from_slice(arena.outputs()[0]);
        Ok(())
    }

    #[test]
    fn matches_onnxruntime_and_tract() {
        crate::common::check_model(PATH, placed::OUTPUT_SHAPES, run_dyn);
    }

    #[test]
    fn arena_is_smaller_by_the_input() {
        let input_bytes = placed::INPUT_SHAPES[0].iter().product::<usize>() * 4;
        assert_eq!(input_bytes, 36_864);
        assert_eq!((placed::ARENA_BYTES, in_arena::ARENA_BYTES), (260_352, 260_352 + input_bytes));
    }

    #[test]
    fn typed_entry_point_passes_the_placed_input_through() {
        let x = crate::common::random(16 * 24 * 24, 7);
        let (mut want, mut got) = (vec![f32::NAN; 24 * 12 * 12], vec![f32::NAN; 24 * 12 * 12]);
        let mut arena = Box::new(in_arena::Arena::new());
        arena.input().copy_from_slice(&x);
        in_arena::run_in(&mut arena).unwrap();
        want.copy_from_slice(arena.outputs()[0]);
        let mut arena = Box::new(placed::Arena::new());
        placed::run_typed_in(&mut arena, &[x.as_slice().into()], &mut [got.as_mut_slice().into()]).unwrap();
        // Same kernels, same order: the same bits wherever the input lives.
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want));
    }
}

/// Two inputs, one placed by the caller: per port, the other keeps its arena accessor.
mod two_inputs {
    const PATH: &str = "tests/models/two_inputs_two_outputs.onnx";
    sramfit::model! { pub mod placed { path: "tests/models/two_inputs_two_outputs.onnx", io: arena { "input_1": caller } } }

    fn run_dyn(inputs: &[&[f32]], outputs: &mut [&mut [f32]]) -> Result<(), sramfit::Error> {
        let mut arena = placed::Arena::new();
        arena.input_0().copy_from_slice(inputs[0]);
        placed::run_in(&mut arena, inputs[1].try_into().unwrap())?;
        for (dst, src) in outputs.iter_mut().zip(arena.outputs()) {
            dst.copy_from_slice(src);
        }
        Ok(())
    }

    #[test]
    fn matches_onnxruntime_and_tract() {
        crate::common::check_model(PATH, placed::OUTPUT_SHAPES, run_dyn);
    }
}
