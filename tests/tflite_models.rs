//! `.tflite` models through `model!`, against TensorFlow Lite Micro's interpreter on the same file
//! (fixtures made by scripts/gen_tflite.py: TFLM's outputs on 20 inputs each, its arena figures):
//! every output of the integer models bit-identical (full-integer int8 and TFLite's 16x8 mode,
//! `*_a16w8`: int16 activations, int8 weights, int64 biases), and the arena at most TFLM's tensor
//! arena (head).
//!
//! The MLPerf Tiny reference models are read from `../shared/mlperf-tiny/` in place (compiled
//! only when that folder is beside the checkout: `cfg(sramfit_mlperf_tiny)`, set by build.rs);
//! the Keras models from `tests/models/tflite/keras/`.
//!
//! float32 files are compared within 1e-5 of each output's magnitude (`check_float`), and so is
//! the hybrid KWS file (`kws_ref_model_float32.tflite`: int8 weights, float activations), which
//! TFLM refuses: its fixture holds TensorFlow Lite's reference-kernel outputs and no TFLM arena.

mod common;

/// Checks a compiled model against TFLM's outputs and arena.
fn check(
    fixture: &str,
    out_types: &[sramfit::DType],
    out_shapes: &[&[usize]],
    run: common::quant::RunTyped,
    arena: usize,
) {
    let a = common::quant::agreement_with(fixture, out_types, out_shapes, run);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(common::repo_path(fixture)).unwrap()).unwrap();
    let head = v["tflm_arena"]["head"].as_u64().expect("TFLM's arena in the fixture") as usize;
    println!(
        "{fixture}: {} of {} elements equal, max {} steps; arena {arena} B, TFLM's tensor arena {head} B",
        a.equal, a.elements, a.max_steps
    );
    assert_eq!(a.equal, a.elements, "{fixture}: outputs differ from TFLM's (max {} steps)", a.max_steps);
    assert!(arena <= head, "{fixture}: arena {arena} B, above TFLM's {head} B");
}

/// Checks a compiled float32 model against TFLM's outputs: every element within `1e-5` of the
/// largest magnitude of its output (the float kernels sum in their own order), and the arena at
/// most TFLM's tensor arena. A file TFLM refuses (the hybrid KWS) has TensorFlow Lite's
/// reference-kernel outputs and no TFLM arena to compare with.
fn check_float(fixture: &str, out_shapes: &[&[usize]], run: common::quant::RunTyped, arena: usize) {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(common::repo_path(fixture)).unwrap()).unwrap();
    let engine = v["engine_name"].as_str().expect("the fixture's engine");
    let head = v["tflm_arena"]["head"].as_u64().map(|h| h as usize);
    assert!(head.is_some() || engine == "tflite_builtin_ref", "{fixture}: no TFLM arena");
    let mut worst = 0f64;
    for sample in common::quant::samples(fixture) {
        let inputs: Vec<Vec<f32>> = sample.inputs.iter().map(|t| t.data.iter().map(|&x| x as f32).collect()).collect();
        let mut outputs: Vec<Vec<f32>> = out_shapes.iter().map(|s| vec![0.0; s.iter().product()]).collect();
        let refs: Vec<sramfit::TensorRef<'_>> = inputs.iter().map(|x| sramfit::TensorRef::F32(x)).collect();
        let mut muts: Vec<sramfit::TensorMut<'_>> = outputs.iter_mut().map(|y| sramfit::TensorMut::F32(y)).collect();
        run(&refs, &mut muts).unwrap_or_else(|e| panic!("{fixture}: run_typed: {e:?}"));
        for (got, want) in outputs.iter().zip(&sample.outputs) {
            let scale = want.data.iter().fold(0f64, |m, &x| m.max(x.abs())).max(f64::MIN_POSITIVE);
            for (&g, &w) in got.iter().zip(&want.data) {
                worst = worst.max((g as f64 - w).abs() / scale);
            }
        }
    }
    let theirs = head.map_or("TFLM refuses the file".to_string(), |h| format!("TFLM's tensor arena {h} B"));
    println!(
        "{fixture}: largest difference {worst:.2e} of the output's magnitude ({engine}); arena {arena} B, {theirs}"
    );
    assert!(worst <= 1e-5, "{fixture}: outputs {worst:.2e} from {engine}'s");
    if let Some(head) = head {
        assert!(arena <= head, "{fixture}: arena {arena} B, above TFLM's {head} B");
    }
}

/// One `model!` per float32 `.tflite` model, and its test: `name => model path, fixture;`.
macro_rules! float_models {
    ($($name:ident => $path:literal, $fixture:literal;)*) => {$(
        mod $name {
            sramfit::model! { pub mod model { path: $path } }

            #[test]
            fn matches_tflite_micro() {
                crate::check_float($fixture, model::OUTPUT_SHAPES, model::run_typed, model::ARENA_BYTES);
            }
        }
    )*};
}

#[cfg(sramfit_mlperf_tiny)]
mod mlperf_float {
    float_models! {
        ad01_fp32 => "../shared/mlperf-tiny/ad01_fp32.tflite", "tests/models/tflite/mlperf/ad01_fp32.ref.json";
        kws_ref_model_float32 => "../shared/mlperf-tiny/kws_ref_model_float32.tflite", "tests/models/tflite/mlperf/kws_ref_model_float32.ref.json";
        pretrained_resnet => "../shared/mlperf-tiny/pretrainedResnet.tflite", "tests/models/tflite/mlperf/pretrainedResnet.ref.json";
        vww_96_float => "../shared/mlperf-tiny/vww_96_float.tflite", "tests/models/tflite/mlperf/vww_96_float.ref.json";
    }
}

mod keras_float {
    float_models! {
        arith_f32 => "tests/models/tflite/keras/arith_f32.tflite", "tests/models/tflite/keras/arith_f32.ref.json";
        attention_f32 => "tests/models/tflite/keras/attention_f32.tflite", "tests/models/tflite/keras/attention_f32.ref.json";
        audio_conv1d_f32 => "tests/models/tflite/keras/audio_conv1d_f32.tflite", "tests/models/tflite/keras/audio_conv1d_f32.ref.json";
        branches_f32 => "tests/models/tflite/keras/branches_f32.tflite", "tests/models/tflite/keras/branches_f32.ref.json";
        ds_cnn_f32 => "tests/models/tflite/keras/ds_cnn_f32.tflite", "tests/models/tflite/keras/ds_cnn_f32.ref.json";
        fc_autoencoder_f32 => "tests/models/tflite/keras/fc_autoencoder_f32.tflite", "tests/models/tflite/keras/fc_autoencoder_f32.ref.json";
        gating_f32 => "tests/models/tflite/keras/gating_f32.tflite", "tests/models/tflite/keras/gating_f32.ref.json";
        lenet_f32 => "tests/models/tflite/keras/lenet_f32.tflite", "tests/models/tflite/keras/lenet_f32.ref.json";
        misc_ops_f32 => "tests/models/tflite/keras/misc_ops_f32.tflite", "tests/models/tflite/keras/misc_ops_f32.ref.json";
        mobilenet_v1_025_f32 => "tests/models/tflite/keras/mobilenet_v1_025_f32.tflite", "tests/models/tflite/keras/mobilenet_v1_025_f32.ref.json";
        mobilenet_v2_035_f32 => "tests/models/tflite/keras/mobilenet_v2_035_f32.tflite", "tests/models/tflite/keras/mobilenet_v2_035_f32.ref.json";
        resnet_f32 => "tests/models/tflite/keras/resnet_f32.tflite", "tests/models/tflite/keras/resnet_f32.ref.json";
    }
}

/// One `model!` per `.tflite` model, and its test: `name => model path, fixture;`.
macro_rules! tflite_models {
    ($($name:ident => $path:literal, $fixture:literal;)*) => {$(
        mod $name {
            sramfit::model! { pub mod model { path: $path } }

            #[test]
            fn matches_tflite_micro() {
                crate::check($fixture, model::OUTPUT_TYPES, model::OUTPUT_SHAPES, model::run_typed, model::ARENA_BYTES);
            }
        }
    )*};
}

/// The whole working memory with `io: arena` (inputs and outputs planned into the arena too)
/// against TFLite Micro's smallest arena that runs the same file (head + tail).
#[cfg(sramfit_mlperf_tiny)]
macro_rules! whole_memory {
    ($($name:ident => $path:literal, $fixture:literal;)*) => {$(
        mod $name {
            sramfit::model! { pub mod model { path: $path, io: arena } }

            #[test]
            fn io_arena_below_tflite_micro_minimum() {
                let fixture = crate::common::repo_path($fixture);
                let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
                let total = v["tflm_arena"]["total"].as_u64().unwrap() as usize;
                println!("{}: io: arena {} B, TFLM's minimum arena {total} B", $path, model::ARENA_BYTES);
                assert!(model::ARENA_BYTES < total, "{} B, not below TFLM's {total} B", model::ARENA_BYTES);
            }
        }
    )*};
}

#[cfg(sramfit_mlperf_tiny)]
mod mlperf_io_arena {
    whole_memory! {
        ad01_int8 => "../shared/mlperf-tiny/ad01_int8.tflite", "tests/models/tflite/mlperf/ad01_int8.ref.json";
        kws_ref_model => "../shared/mlperf-tiny/kws_ref_model.tflite", "tests/models/tflite/mlperf/kws_ref_model.ref.json";
        pretrained_resnet_quant => "../shared/mlperf-tiny/pretrainedResnet_quant.tflite", "tests/models/tflite/mlperf/pretrainedResnet_quant.ref.json";
        vww_96_int8 => "../shared/mlperf-tiny/vww_96_int8.tflite", "tests/models/tflite/mlperf/vww_96_int8.ref.json";
    }
}

#[cfg(sramfit_mlperf_tiny)]
mod mlperf {
    tflite_models! {
        ad01_int8 => "../shared/mlperf-tiny/ad01_int8.tflite", "tests/models/tflite/mlperf/ad01_int8.ref.json";
        kws_ref_model => "../shared/mlperf-tiny/kws_ref_model.tflite", "tests/models/tflite/mlperf/kws_ref_model.ref.json";
        pretrained_resnet_quant => "../shared/mlperf-tiny/pretrainedResnet_quant.tflite", "tests/models/tflite/mlperf/pretrainedResnet_quant.ref.json";
        str_ww_ref_model => "../shared/mlperf-tiny/str_ww_ref_model.tflite", "tests/models/tflite/mlperf/str_ww_ref_model.ref.json";
        vww_96_int8 => "../shared/mlperf-tiny/vww_96_int8.tflite", "tests/models/tflite/mlperf/vww_96_int8.ref.json";
    }
}

mod keras {
    tflite_models! {
        arith_int8 => "tests/models/tflite/keras/arith_int8.tflite", "tests/models/tflite/keras/arith_int8.ref.json";
        attention_int8 => "tests/models/tflite/keras/attention_int8.tflite", "tests/models/tflite/keras/attention_int8.ref.json";
        audio_conv1d_int8 => "tests/models/tflite/keras/audio_conv1d_int8.tflite", "tests/models/tflite/keras/audio_conv1d_int8.ref.json";
        branches_int8 => "tests/models/tflite/keras/branches_int8.tflite", "tests/models/tflite/keras/branches_int8.ref.json";
        ds_cnn_int8 => "tests/models/tflite/keras/ds_cnn_int8.tflite", "tests/models/tflite/keras/ds_cnn_int8.ref.json";
        fc_autoencoder_int8 => "tests/models/tflite/keras/fc_autoencoder_int8.tflite", "tests/models/tflite/keras/fc_autoencoder_int8.ref.json";
        fc_autoencoder_int8_fio => "tests/models/tflite/keras/fc_autoencoder_int8_fio.tflite", "tests/models/tflite/keras/fc_autoencoder_int8_fio.ref.json";
        gating_int8 => "tests/models/tflite/keras/gating_int8.tflite", "tests/models/tflite/keras/gating_int8.ref.json";
        lenet_int8 => "tests/models/tflite/keras/lenet_int8.tflite", "tests/models/tflite/keras/lenet_int8.ref.json";
        misc_ops_int8 => "tests/models/tflite/keras/misc_ops_int8.tflite", "tests/models/tflite/keras/misc_ops_int8.ref.json";
        mobilenet_v1_025_int8 => "tests/models/tflite/keras/mobilenet_v1_025_int8.tflite", "tests/models/tflite/keras/mobilenet_v1_025_int8.ref.json";
        mobilenet_v1_025_int8_u8io => "tests/models/tflite/keras/mobilenet_v1_025_int8_u8io.tflite", "tests/models/tflite/keras/mobilenet_v1_025_int8_u8io.ref.json";
        mobilenet_v2_035_int8 => "tests/models/tflite/keras/mobilenet_v2_035_int8.tflite", "tests/models/tflite/keras/mobilenet_v2_035_int8.ref.json";
        resnet_int8 => "tests/models/tflite/keras/resnet_int8.tflite", "tests/models/tflite/keras/resnet_int8.ref.json";
    }
}

/// TFLite's 16x8 mode (int16 activations, int8 weights, int64 biases; int16 or float ports), bit for
/// bit.
mod keras_a16w8 {
    tflite_models! {
        arith_a16w8 => "tests/models/tflite/keras/arith_a16w8.tflite", "tests/models/tflite/keras/arith_a16w8.ref.json";
        branches_a16w8 => "tests/models/tflite/keras/branches_a16w8.tflite", "tests/models/tflite/keras/branches_a16w8.ref.json";
        audio_conv1d_a16w8 => "tests/models/tflite/keras/audio_conv1d_a16w8.tflite", "tests/models/tflite/keras/audio_conv1d_a16w8.ref.json";
        ds_cnn_a16w8 => "tests/models/tflite/keras/ds_cnn_a16w8.tflite", "tests/models/tflite/keras/ds_cnn_a16w8.ref.json";
        fc_autoencoder_a16w8 => "tests/models/tflite/keras/fc_autoencoder_a16w8.tflite", "tests/models/tflite/keras/fc_autoencoder_a16w8.ref.json";
        fc_autoencoder_a16w8_fio => "tests/models/tflite/keras/fc_autoencoder_a16w8_fio.tflite", "tests/models/tflite/keras/fc_autoencoder_a16w8_fio.ref.json";
        mobilenet_v1_025_a16w8 => "tests/models/tflite/keras/mobilenet_v1_025_a16w8.tflite", "tests/models/tflite/keras/mobilenet_v1_025_a16w8.ref.json";
        mobilenet_v2_035_a16w8 => "tests/models/tflite/keras/mobilenet_v2_035_a16w8.tflite", "tests/models/tflite/keras/mobilenet_v2_035_a16w8.ref.json";
        resnet_a16w8 => "tests/models/tflite/keras/resnet_a16w8.tflite", "tests/models/tflite/keras/resnet_a16w8.ref.json";
    }
}
