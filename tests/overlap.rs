//! Overlapping input and output (`optimize: { overlap }`, on by default) changes where a step's
//! output is written, never what: each model is compiled with it and without it, with tiling (asked
//! for: on x86-64 it is not the default) and without, all run on the same inputs and the outputs
//! compared bit for bit (random inputs). The overlapped arena must not be larger, and on the models
//! whose peak is a depthwise convolution (the MobileNetV2 ones, f32 and the int8 QDQ files, whose
//! NCHW depthwise layers have a plane order too) it must be smaller, so the overlapped steps really
//! ran. The arena figures are printed (`--nocapture`). The `.tflite` files' int8 convolutions are
//! NHWC, overlapped row by row with `overlap_rows`: those models are compiled the same four ways
//! and each run bit for bit against TensorFlow Lite Micro's outputs (their fixtures), and those
//! whose peak is a convolution (the ResNets, MobileNetV2, the KWS DS-CNN, whose equal layers
//! overlap as one chain) must shrink.

mod common;

/// The arenas, printed; the overlapped one must not be larger, and smaller where `shrinks`.
fn arenas(name: &str, (overlapped, apart): (usize, usize), shrinks: bool) {
    println!("{name}: arena {apart} B without overlap, {overlapped} B with");
    assert!(overlapped <= apart, "{name}: overlap raised the arena ({apart} -> {overlapped} B)");
    assert!(!shrinks || overlapped < apart, "{name}: no step overlapped ({apart} B either way)");
}

macro_rules! models {
    ($($name:ident => $path:literal),* $(,)?) => {$(
        mod $name {
            sramfit::model! { pub mod on { path: $path, optimize: { tile: true } } }
            sramfit::model! { pub mod off { path: $path, optimize: { tile: true, overlap: false } } }
            sramfit::model! { pub mod untiled_on { path: $path, optimize: { tile: false } } }
            sramfit::model! { pub mod untiled_off { path: $path, optimize: { tile: false, overlap: false } } }

            #[test]
            fn overlapped_outputs_are_bit_identical() {
                let name = stringify!($name);
                let shrinks = crate::SHRINKS.contains(&name);
                crate::arenas(name, (on::ARENA_BYTES, off::ARENA_BYTES), shrinks);
                crate::arenas(&format!("{name} untiled"), (untiled_on::ARENA_BYTES, untiled_off::ARENA_BYTES), shrinks);
                crate::common::same_bits(name, (on::INPUT_SHAPES, on::OUTPUT_SHAPES), (on::run_dyn, off::run_dyn));
                crate::common::same_bits(name, (on::INPUT_SHAPES, on::OUTPUT_SHAPES), (untiled_on::run_dyn, untiled_off::run_dyn));
            }
        }
    )*};
}

/// The ONNX models of `models!` whose arena overlap must lower, tiled and untiled (every
/// `.tflite` model of `tflite_models!` must).
const SHRINKS: &[&str] = &["mobilenetv2_block", "mobilenetv2_035", "mobilenetv2_035_qdq_s8", "mobilenetv2_035_qdq_u8"];

/// `.tflite` int8 models (typed ports), compiled the four ways of `models!` with their NHWC layers
/// overlapped row by row (`overlap_rows`, off by default), each checked bit for bit against
/// TensorFlow Lite Micro's outputs on its fixture's samples; overlap lowers each one's arena,
/// tiled and untiled.
macro_rules! tflite_models {
    ($($name:ident => $path:literal, $fixture:literal;)*) => {$(
        mod $name {
            sramfit::model! { pub mod on { path: $path, optimize: { tile: true, overlap_rows: true } } }
            sramfit::model! { pub mod off { path: $path, optimize: { tile: true, overlap: false } } }
            sramfit::model! { pub mod untiled_on { path: $path, optimize: { tile: false, overlap_rows: true } } }
            sramfit::model! { pub mod untiled_off { path: $path, optimize: { tile: false, overlap: false } } }

            #[test]
            fn overlapped_outputs_match_tflite_micro() {
                let name = stringify!($name);
                crate::arenas(name, (on::ARENA_BYTES, off::ARENA_BYTES), true);
                crate::arenas(&format!("{name} untiled"), (untiled_on::ARENA_BYTES, untiled_off::ARENA_BYTES), true);
                let runs = [on::run_typed, off::run_typed, untiled_on::run_typed, untiled_off::run_typed];
                for (way, run) in ["tiled, overlapped", "tiled", "overlapped", "neither"].into_iter().zip(runs) {
                    let a = crate::common::quant::agreement_with($fixture, on::OUTPUT_TYPES, on::OUTPUT_SHAPES, run);
                    assert_eq!(a.equal, a.elements, "{name} ({way}): outputs differ from TFLM's (max {} steps)", a.max_steps);
                }
            }
        }
    )*};
}

tflite_models! {
    resnet_int8 => "tests/models/tflite/keras/resnet_int8.tflite", "tests/models/tflite/keras/resnet_int8.ref.json";
    mobilenet_v2_035_int8 => "tests/models/tflite/keras/mobilenet_v2_035_int8.tflite", "tests/models/tflite/keras/mobilenet_v2_035_int8.ref.json";
}

#[cfg(sramfit_mlperf_tiny)]
mod mlperf {
    tflite_models! {
        pretrained_resnet_quant => "../shared/mlperf-tiny/pretrainedResnet_quant.tflite", "tests/models/tflite/mlperf/pretrainedResnet_quant.ref.json";
        kws_ref_model => "../shared/mlperf-tiny/kws_ref_model.tflite", "tests/models/tflite/mlperf/kws_ref_model.ref.json";
    }
}

common::bundled_models!(
    models,
    mobilenetv2_035 => "tests/models/arch/mobilenetv2_035.onnx",
    mobilenetv2_035_qdq_s8 => "tests/models/quant/mobilenetv2_035_qdq_s8.onnx",
    mobilenetv2_035_qdq_u8 => "tests/models/quant/mobilenetv2_035_qdq_u8.onnx",
    kws_dscnn_qdq_s8 => "tests/models/quant/kws_dscnn_qdq_s8.onnx",
    vww_mobilenetv1_qdq_s8 => "tests/models/quant/vww_mobilenetv1_qdq_s8.onnx",
);
