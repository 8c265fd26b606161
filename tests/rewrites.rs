//! The memory-saving rewrites change where bytes live, never what is computed: every model compiled
//! with activation fusion, in-place execution, concat elision, scheduling and tiling gives bit-identical
//! outputs to the same model compiled without them, in a smaller or equal arena. (Scratch fitting,
//! scale/shift folding and Winograd convolutions are off on both sides: the first may pick the
//! direct convolution, whose sums run in another order, the second folds a BatchNormalization into
//! weights and the third sums in another basis, which round differently; tests/models.rs checks
//! the default build, with all three on, against onnxruntime and tract.)

mod common;

type RunDyn = common::RunDyn;

/// Runs both builds on the same random inputs and compares the outputs bit for bit.
fn check(
    name: &str,
    inputs: &[&[usize]],
    outputs: &[&[usize]],
    (optimized, plain): (RunDyn, RunDyn),
    (optimized_arena, plain_arena): (usize, usize),
) {
    assert!(optimized_arena <= plain_arena, "{name}: {optimized_arena} > {plain_arena}");
    for seed in 1..=3u64 {
        let ins: Vec<Vec<f32>> =
            inputs.iter().enumerate().map(|(i, s)| common::random(s.iter().product(), seed * 7 + i as u64)).collect();
        let ins: Vec<&[f32]> = ins.iter().map(Vec::as_slice).collect();
        let run = |f: RunDyn| {
            let mut outs: Vec<Vec<f32>> = outputs.iter().map(|s| vec![f32::NAN; s.iter().product()]).collect();
            let mut refs: Vec<&mut [f32]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
            f(&ins, &mut refs).unwrap();
            outs
        };
        let (a, b) = (run(optimized), run(plain));
        for (k, (a, b)) in a.iter().zip(&b).enumerate() {
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(a), bits(b), "{name}: output {k} differs (seed {seed})");
        }
    }
}

macro_rules! rewrites_keep_results {
    ($($name:ident => $path:literal),* $(,)?) => {
        $(
            mod $name {
                sramfit::model! { pub mod optimized { path: $path, optimize: { fit_scratch: false, fold_scale_shift: false, winograd: false } } }
                sramfit::model! {
                    pub mod plain {
                        path: $path,
                        optimize: { fold_scale_shift: false, winograd: false, fuse_activations: false, in_place: false, fit_scratch: false, schedule: false, tile: false, elide_concat: false, transpose: false, subsample: false, pack_weights: false },
                    }
                }

                #[test]
                fn fused_and_in_place_outputs_are_bit_identical() {
                    super::check(
                        stringify!($name),
                        optimized::INPUT_SHAPES,
                        optimized::OUTPUT_SHAPES,
                        (optimized::run_dyn, plain::run_dyn),
                        (optimized::ARENA_BYTES, plain::ARENA_BYTES),
                    );
                }
            }
        )*
    };
}

common::bundled_models!(
    rewrites_keep_results,
    shufflenetv2 => "tests/models/arch/shufflenetv2.onnx",
    squeezenet11 => "tests/models/arch/squeezenet11.onnx",
);

/// The subsampling fold against the same default build without it, on ResNet-8, whose shortcuts
/// are strided 1x1 convolutions (tract's two `Downsample` copies and a matrix product, which the
/// scale/shift fold makes a 1x1 convolution): bit-identical outputs, a smaller or equal arena.
mod subsampling {
    sramfit::model! { pub mod folded { path: "tests/models/resnet8.onnx" } }
    sramfit::model! { pub mod copied { path: "tests/models/resnet8.onnx", optimize: { subsample: false } } }

    #[test]
    fn folded_shortcuts_give_bit_identical_outputs() {
        super::check(
            "resnet8",
            folded::INPUT_SHAPES,
            folded::OUTPUT_SHAPES,
            (folded::run_dyn, copied::run_dyn),
            (folded::ARENA_BYTES, copied::ARENA_BYTES),
        );
    }
}
