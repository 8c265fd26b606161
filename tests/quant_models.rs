//! Quantized models (`tests/models/quant/`, made by scripts/gen_quantized.py) through `model!`,
//! against onnxruntime's integer execution of the same file (default optimisations, int8 QDQ kept
//! int8: see the script's docs), on the fixture's sample and its extra samples. Each model states
//! the largest difference it may have from onnxruntime, in quantization steps of the output, and
//! the fraction of output elements that must be exactly equal (the figures measured, rounded
//! down); `cargo test --workspace --test quant_models -- --nocapture` prints them.
//!
//! Where the two differ: onnxruntime requantizes in float with ties to even and runs part of a QDQ
//! graph in float (`ort_executed_ops`), sramfit uses TFLite's fixed-point arithmetic everywhere
//! except the output stage of convolutions and fully connected layers, which rounds the 64-bit
//! product once, to even (`quant::RequantRounding::SingleHalfToEven`; with TFLite's 32-bit
//! arithmetic ResNet-18 was 4 steps off, 37% equal), and average pooling, which rounds as onnxruntime does (the exact mean, ties to even:
//! `quant::avg_pool2d_half_even`; with TFLite's rounding lenet_qdq_s8 was 3 steps off, its pool2
//! agreeing on 94% of its elements); softmax computes its probabilities in fixed point: on
//! kws_dscnn_qdq_s8, whose logits agree exactly, the one differing output is 230.887 / 255, which
//! sramfit writes as 231 and onnxruntime's QLinearSoftmax as 230;
//! one-step differences grow through later layers. The QOperator files, which onnxruntime runs
//! with integer kernels throughout, agree exactly. Requantization multipliers of at least 1/4096
//! round once (`ops::qparams::requant`); with TFLite's double rounding below 1/1024, as before,
//! mobilenetv2_035 was 4 steps off (0% equal): one element of b11_project (a 1x1 convolution
//! whose inputs agree exactly), exact value -56.49952, became -57 through the tie -56.5 of the
//! first rounding where onnxruntime's single rounding gives -56, and grew over the 20 layers after
//! it; shufflenetv2_qdq_s8 was 2 steps off (53% equal). resnet8_qdq_s8, where onnxruntime adds the
//! residuals in float, went from 3 to 6 differing elements of 30 (1 step each).
//!
//! The transformer layer is not here: its LayerNormalization runs in float between a
//! DequantizeLinear and a QuantizeLinear, which sramfit refuses (planner-core's
//! `tests/quant_import.rs` checks the error).

mod common;

/// Checks the agreement of a compiled model with onnxruntime.
fn check(
    model_rel: &str,
    out_types: &[sramfit::DType],
    out_shapes: &[&[usize]],
    run: common::quant::RunTyped,
    max_steps: f64,
    min_equal: f64,
) {
    let a = common::quant::agreement(model_rel, out_types, out_shapes, run);
    println!(
        "{model_rel}: max {} steps, {:.2}% of {} elements equal{}",
        a.max_steps,
        100.0 * a.equal_fraction(),
        a.elements,
        if a.max_float_error > 0.0 {
            format!(", float outputs within {:.2e}", a.max_float_error)
        } else {
            String::new()
        }
    );
    assert!(a.max_steps <= max_steps, "{model_rel}: {} steps from onnxruntime (at most {max_steps})", a.max_steps);
    assert!(a.equal_fraction() >= min_equal, "{model_rel}: {:.4} equal (at least {min_equal})", a.equal_fraction());
}

/// One `model!` per quantized model, and its test: `name => path, max steps, min equal fraction;`.
macro_rules! quant_models {
    ($($name:ident => $path:literal, $max_steps:expr, $min_equal:expr;)*) => {$(
        mod $name {
            sramfit::model! { pub mod model { path: $path } }

            #[test]
            fn matches_onnxruntime() {
                crate::check($path, model::OUTPUT_TYPES, model::OUTPUT_SHAPES, model::run_typed, $max_steps, $min_equal);
            }
        }
    )*};
}

quant_models! {
    branch_merge_qdq_s8 => "tests/models/quant/branch_merge_qdq_s8.onnx", 2.0, 0.99;
    concat_branches_qdq_s8 => "tests/models/quant/concat_branches_qdq_s8.onnx", 2.0, 0.99;
    fc_autoencoder_qdq_s8 => "tests/models/quant/fc_autoencoder_qdq_s8.onnx", 2.0, 0.99;
    fc_autoencoder_qdq_u8 => "tests/models/quant/fc_autoencoder_qdq_u8.onnx", 2.0, 0.99;
    fc_autoencoder_qop_s8 => "tests/models/quant/fc_autoencoder_qop_s8.onnx", 2.0, 0.99;
    kws_dscnn_qdq_s8 => "tests/models/quant/kws_dscnn_qdq_s8.onnx", 2.0, 0.99;
    kws_dscnn_qdq_u8 => "tests/models/quant/kws_dscnn_qdq_u8.onnx", 2.0, 0.99;
    kws_dscnn_qop_s8 => "tests/models/quant/kws_dscnn_qop_s8.onnx", 2.0, 0.99;
    kws_dscnn_qop_u8 => "tests/models/quant/kws_dscnn_qop_u8.onnx", 2.0, 0.99;
    lenet_qdq_s8 => "tests/models/quant/lenet_qdq_s8.onnx", 2.0, 0.72;
    mlp_qdq_s8 => "tests/models/quant/mlp_qdq_s8.onnx", 2.0, 0.99;
    mnist_cnn_qdq_s8 => "tests/models/quant/mnist_cnn_qdq_s8.onnx", 2.0, 0.99;
    mnist_cnn_qdq_u8 => "tests/models/quant/mnist_cnn_qdq_u8.onnx", 2.0, 0.99;
    mnist_cnn_qop_s8 => "tests/models/quant/mnist_cnn_qop_s8.onnx", 2.0, 0.99;
    mobilenetv2_035_qdq_s8 => "tests/models/quant/mobilenetv2_035_qdq_s8.onnx", 2.0, 0.99;
    mobilenetv2_035_qdq_u8 => "tests/models/quant/mobilenetv2_035_qdq_u8.onnx", 2.0, 0.99;
    mobilenetv2_035_qop_s8 => "tests/models/quant/mobilenetv2_035_qop_s8.onnx", 2.0, 0.99;
    mobilenetv2_block_qdq_s8 => "tests/models/quant/mobilenetv2_block_qdq_s8.onnx", 2.0, 0.99;
    reshape_views_qdq_s8 => "tests/models/quant/reshape_views_qdq_s8.onnx", 2.0, 0.99;
    resnet8_qdq_s8 => "tests/models/quant/resnet8_qdq_s8.onnx", 2.0, 0.86;
    resnet8_qdq_u8 => "tests/models/quant/resnet8_qdq_u8.onnx", 2.0, 0.96;
    resnet8_qop_s8 => "tests/models/quant/resnet8_qop_s8.onnx", 2.0, 0.99;
    resnet8_qop_u8 => "tests/models/quant/resnet8_qop_u8.onnx", 2.0, 0.99;
    shufflenetv2_qdq_s8 => "tests/models/quant/shufflenetv2_qdq_s8.onnx", 2.0, 0.99;
    squeezenet11_qdq_s8 => "tests/models/quant/squeezenet11_qdq_s8.onnx", 2.0, 0.99;
    transformer_encoder_qdq_s8 => "tests/models/quant/transformer_encoder_qdq_s8.onnx", 2.0, 0.99;
    two_inputs_two_outputs_qdq_s8 => "tests/models/quant/two_inputs_two_outputs_qdq_s8.onnx", 2.0, 0.99;
    vww_mobilenetv1_qdq_s8 => "tests/models/quant/vww_mobilenetv1_qdq_s8.onnx", 2.0, 0.99;
    vww_mobilenetv1_qdq_u8 => "tests/models/quant/vww_mobilenetv1_qdq_u8.onnx", 2.0, 0.99;
    vww_mobilenetv1_qop_s8 => "tests/models/quant/vww_mobilenetv1_qop_s8.onnx", 2.0, 0.99;
}

// ResNet-18 (64x64, 11.2M weights): its int8 file is not committed but made from the committed f32
// model by `python3 scripts/gen_quantized.py models resnet18 --big` (deterministic; `.ci/run` does
// it), with the onnxruntime fixture beside it.
#[cfg(sramfit_quant_big)]
quant_models! {
    resnet18_qdq_s8 => "tests/models/quant/big/resnet18_qdq_s8.onnx", 2.0, 0.5;
}

/// Ports follow the graph: a float input followed by QuantizeLinear and a float output after the
/// last DequantizeLinear keep `run(&[f32; N], &mut [f32; M])`, with no port quantization to state;
/// integer ports take integers and state their scale and zero point (tests/quant_ops.rs).
#[test]
fn float_ports_of_a_quantized_model_stay_float() {
    use kws_dscnn_qdq_s8::model;
    assert_eq!((model::INPUT_TYPES, model::OUTPUT_TYPES), (&[sramfit::DType::F32][..], &[sramfit::DType::F32][..]));
    assert_eq!((model::INPUT_QUANT, model::OUTPUT_QUANT), (&[None][..], &[None][..]));
    let mut probabilities = [0.0f32; 12];
    // Its own arena: the model's static one may be busy with the other test of this model.
    let mut arena = Box::new(model::Arena::new());
    model::run_in(&mut arena, &[0.5f32; 490], &mut probabilities).unwrap();
    assert!((probabilities.iter().sum::<f32>() - 1.0).abs() < 0.05, "{probabilities:?}");
}

/// An int8 port is an `i8` array (a QOperator convolution between int8 ports).
#[test]
fn int8_ports_take_i8_arrays() {
    sramfit::model! { mod conv { path: "tests/models/quant/ops/qop_conv3x3_s8.onnx" } }
    let mut y = [0i8; 6 * 8 * 8];
    conv::run(&[3i8; 4 * 8 * 8], &mut y).unwrap();
    assert_eq!(conv::INPUT_TYPES, &[sramfit::DType::I8]);
}

/// The int8 firmware's expected outputs (`examples/cortex-m/expected/NAME.json`, read by its
/// build script) are this host build's outputs on the fixture's first input, as `f32` bit patterns,
/// with that input's bit patterns: the chip must reproduce them bit for bit, a cross-path check of
/// the same generated code (the chip's kernels against the host's portable integer kernels; how
/// far both are from onnxruntime is the test above). This test keeps the files equal to what the
/// host computes; `SRAMFIT_BLESS=1` rewrites them after a deliberate change of the arithmetic.
#[test]
fn firmware_expected_outputs_are_the_host_outputs() {
    use sramfit::{TensorMut, TensorRef};
    /// The model's outputs in its own arena (the static one may be busy with its other test).
    macro_rules! own_arena {
        ($m:ident) => {
            |i: &[TensorRef<'_>], o: &mut [TensorMut<'_>]| {
                $m::model::run_typed_in(&mut Box::new($m::model::Arena::new()), i, o)
            }
        };
    }
    type Run = Box<dyn Fn(&[TensorRef<'_>], &mut [TensorMut<'_>]) -> Result<(), sramfit::Error>>;
    let models: [(&str, &[&[usize]], Run); 4] = [
        ("kws_dscnn_qdq_s8", kws_dscnn_qdq_s8::model::OUTPUT_SHAPES, Box::new(own_arena!(kws_dscnn_qdq_s8))),
        (
            "vww_mobilenetv1_qdq_s8",
            vww_mobilenetv1_qdq_s8::model::OUTPUT_SHAPES,
            Box::new(own_arena!(vww_mobilenetv1_qdq_s8)),
        ),
        ("resnet8_qdq_s8", resnet8_qdq_s8::model::OUTPUT_SHAPES, Box::new(own_arena!(resnet8_qdq_s8))),
        (
            "fc_autoencoder_qdq_s8",
            fc_autoencoder_qdq_s8::model::OUTPUT_SHAPES,
            Box::new(own_arena!(fc_autoencoder_qdq_s8)),
        ),
    ];
    let bless = std::env::var_os("SRAMFIT_BLESS").is_some();
    for (name, shapes, run) in models {
        let model = format!("tests/models/quant/{name}.onnx");
        let (inputs, outputs) = common::quant::host_run_bits(&model, shapes, run);
        let want = serde_json::json!({
            "about": "Host outputs of sramfit's generated code (portable integer kernels) on the first input of the fixture, as f32 bit patterns: the firmware in examples/cortex-m must reproduce them bit for bit. Written by `SRAMFIT_BLESS=1 cargo test --test quant_models firmware_expected`.",
            "model": model,
            "inputs": inputs,
            "outputs": outputs,
        });
        let path = common::repo_path(&format!("examples/cortex-m/expected/{name}.json"));
        if bless {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, serde_json::to_string(&want).unwrap() + "\n").unwrap();
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let have: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(have == want, "{}: not this build's host outputs (SRAMFIT_BLESS=1 rewrites it)", path.display());
    }
}
