//! Patch-based execution (`optimize: { tile }`, on by default for microcontrollers, asked for here:
//! on x86-64 it runs only for a budget) changes where rows are computed, never what: each model is
//! compiled with it and without it, both run on the same inputs, and the outputs compared bit for
//! bit (f32 models on random inputs; the int8 MLPerf Tiny models on TFLite Micro's fixture samples,
//! where both builds must equal TFLM's outputs; the f32 ones without Winograd convolutions, which
//! a band's smaller map may not take and which round differently); the tiled arena must not be
//! larger. The arena figures are printed (`--nocapture`). The default builds are also checked
//! against onnxruntime and tract (`tests/models.rs`, `tests/architectures.rs`) and TFLM
//! (`tests/tflite_models.rs`).

mod common;

/// The arenas, printed; the tiled one must not be larger.
fn arenas(name: &str, (tiled, untiled): (usize, usize)) {
    println!("{name}: arena {untiled} B untiled, {tiled} B tiled");
    assert!(tiled <= untiled, "{name}: tiling raised the arena ({untiled} -> {tiled} B)");
}

macro_rules! f32_models {
    ($($name:ident => $path:literal),* $(,)?) => {$(
        mod $name {
            sramfit::model! { pub mod tiled { path: $path, optimize: { tile: true, winograd: false } } }
            sramfit::model! { pub mod untiled { path: $path, optimize: { tile: false, winograd: false } } }

            #[test]
            fn tiled_outputs_are_bit_identical() {
                let name = stringify!($name);
                crate::arenas(name, (tiled::ARENA_BYTES, untiled::ARENA_BYTES));
                crate::common::same_bits(name, (tiled::INPUT_SHAPES, tiled::OUTPUT_SHAPES), (tiled::run_dyn, untiled::run_dyn));
            }
        }
    )*};
}

common::bundled_models!(
    f32_models,
    mobilenetv2_035 => "tests/models/arch/mobilenetv2_035.onnx",
);

/// A tighter bound on the extra multiply-accumulates (`tile: 5%`): other bands, the same bits.
mod vww_within_5_percent {
    sramfit::model! { pub mod bounded { path: "tests/models/vww_mobilenetv1.onnx", optimize: { tile: 5% } } }
    sramfit::model! { pub mod tiled { path: "tests/models/vww_mobilenetv1.onnx", optimize: { tile: true } } }
    sramfit::model! { pub mod untiled { path: "tests/models/vww_mobilenetv1.onnx", optimize: { tile: false } } }

    #[test]
    fn bounded_tiling_is_bit_identical_and_between_the_two() {
        crate::arenas("vww within 5%", (bounded::ARENA_BYTES, untiled::ARENA_BYTES));
        const { assert!(tiled::ARENA_BYTES <= bounded::ARENA_BYTES, "a looser bound (10%) gave a larger arena") };
        let shapes = (bounded::INPUT_SHAPES, bounded::OUTPUT_SHAPES);
        crate::common::same_bits("vww within 5%", shapes, (bounded::run_dyn, untiled::run_dyn));
    }
}

#[cfg(sramfit_mlperf_tiny)]
macro_rules! int8_models {
    ($($name:ident => $path:literal, $fixture:literal;)*) => {$(
        mod $name {
            sramfit::model! { pub mod tiled { path: $path, optimize: { tile: true } } }
            sramfit::model! { pub mod untiled { path: $path, optimize: { tile: false } } }

            #[test]
            fn tiled_and_untiled_equal_tflite_micro() {
                let name = stringify!($name);
                crate::arenas(name, (tiled::ARENA_BYTES, untiled::ARENA_BYTES));
                for (build, types, shapes, run) in [
                    ("tiled", tiled::OUTPUT_TYPES, tiled::OUTPUT_SHAPES, tiled::run_typed as crate::common::quant::RunTyped),
                    ("untiled", untiled::OUTPUT_TYPES, untiled::OUTPUT_SHAPES, untiled::run_typed),
                ] {
                    let a = crate::common::quant::agreement_with($fixture, types, shapes, run);
                    assert_eq!(a.equal, a.elements, "{name} {build}: outputs differ from TFLM's (max {} steps)", a.max_steps);
                }
            }
        }
    )*};
}

#[cfg(sramfit_mlperf_tiny)]
mod mlperf {
    int8_models! {
        ad01_int8 => "../shared/mlperf-tiny/ad01_int8.tflite", "tests/models/tflite/mlperf/ad01_int8.ref.json";
        kws_ref_model => "../shared/mlperf-tiny/kws_ref_model.tflite", "tests/models/tflite/mlperf/kws_ref_model.ref.json";
        pretrained_resnet_quant => "../shared/mlperf-tiny/pretrainedResnet_quant.tflite", "tests/models/tflite/mlperf/pretrainedResnet_quant.ref.json";
        vww_96_int8 => "../shared/mlperf-tiny/vww_96_int8.tflite", "tests/models/tflite/mlperf/vww_96_int8.ref.json";
    }
}
