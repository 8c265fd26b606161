//! `io: arena`: the inputs and outputs live in the arena, planned with everything else. Every bundled
//! model built that way matches onnxruntime (fixtures) and tract, and its arena is never larger than
//! the caller-buffer build's arena plus its input and output bytes (usually it is not larger at all).

mod common;

/// Runs an `io: arena` model the way `run_dyn` runs a caller-buffer one: copy the inputs into the
/// arena, run, copy the outputs out.
macro_rules! io_arena_models {
    ($($name:ident => $path:literal),* $(,)?) => {
        $(
            mod $name {
                sramfit::model! { pub mod model { path: $path, io: arena } }
                sramfit::model! { pub mod caller { path: $path } }

                fn run_dyn(inputs: &[&[f32]], outputs: &mut [&mut [f32]]) -> Result<(), sramfit::Error> {
                    let mut arena = Box::new(model::Arena::new());
                    for (dst, src) in arena.inputs_mut().into_iter().zip(inputs) {
                        dst.copy_from_slice(src);
                    }
                    model::run_in(&mut arena)?;
                    for (dst, src) in outputs.iter_mut().zip(arena.outputs()) {
                        dst.copy_from_slice(src);
                    }
                    Ok(())
                }

                #[test]
                fn matches_onnxruntime_and_tract() {
                    crate::common::check_model($path, model::OUTPUT_SHAPES, run_dyn);
                }

                #[test]
                fn arena_holds_the_inputs_and_outputs_in_no_more_room() {
                    let io: usize = (model::INPUT_SHAPES.iter().chain(model::OUTPUT_SHAPES))
                        .map(|s| s.iter().product::<usize>() * 4)
                        .sum();
                    assert!(
                        model::ARENA_BYTES <= caller::ARENA_BYTES + io,
                        "{} > {} + {io}",
                        model::ARENA_BYTES,
                        caller::ARENA_BYTES
                    );
                }
            }
        )*
    };
}

common::bundled_models!(io_arena_models);

/// The named accessors and the module's shared arena, on the keyword-spotting model.
mod named_accessors {
    sramfit::model! { pub mod kws { path: "tests/models/kws_dscnn.onnx", sram: 64000, io: arena } }
    sramfit::model! { pub mod kws_caller { path: "tests/models/kws_dscnn.onnx" } }

    #[test]
    fn shared_arena_runs_and_is_busy_while_held() {
        let x = crate::common::random(49 * 10, 5);
        let mut want = [f32::NAN; 12];
        kws_caller::run(x.as_slice().try_into().unwrap(), &mut want).unwrap();

        let mut arena = kws::shared().unwrap();
        arena.input().copy_from_slice(&x);
        assert_eq!(kws::shared().err(), Some(sramfit::Error::Busy), "a second holder is refused");
        kws::run_in(&mut arena).unwrap();
        let got = *arena.softmax();
        drop(arena);
        assert!(kws::shared().is_ok(), "released when the guard drops");
        // Same kernels, same order: the caller-buffer build gives the same bits.
        assert_eq!(got.map(f32::to_bits), want.map(f32::to_bits));
    }

    #[test]
    fn whole_working_memory_is_the_arena() {
        // 64,000 bytes hold the 1,960-byte input and the 48-byte output as well: they live where
        // the arena is not at its peak.
        assert_eq!(kws::ARENA_BYTES, 64_000);
        assert_eq!(kws::ARENA_BYTES, kws_caller::ARENA_BYTES);
    }
}
