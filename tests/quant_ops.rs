//! One-operator quantized models (`tests/models/quant/ops/`, made by scripts/gen_quantized.py:
//! QDQ regions, QOperator nodes, QuantizeLinear and DequantizeLinear alone; int8 and uint8)
//! through `model!`, against onnxruntime: every output within one quantization step, and the
//! fraction of equal elements printed (`cargo test --test quant_ops -- --nocapture`). ConvInteger
//! and MatMulInteger (by a constant and of two activations) write int32 accumulators, compared
//! exactly.

mod common;

/// The most an operator's output may differ from onnxruntime's, in steps: onnxruntime rounds its
/// float requantization to even, TFLite's fixed-point arithmetic (sramfit's kernels) can differ by
/// one step where the exact value is within about 2^-24 of a rounding tie; a softmax or an average
/// pool into another output scale rounds twice.
const MAX_STEPS: f64 = 1.0;

/// Cases whose file states no quantization at all (an integer MaxPool, Pad, Reshape or Transpose
/// between integer ports: the fixture's scales come from its generator): no port constants.
const RAW_PORTS: &[&str] =
    &["qop_maxpool", "qop_pad", "qop_reshape", "qop_transpose", "qop_convinteger", "qop_matmulinteger"];

/// One `model!` per case, and its tests: the outputs against onnxruntime's, and the stated
/// quantization of the integer ports (`INPUT_QUANT` / `OUTPUT_QUANT`) against the fixture's.
macro_rules! quant_ops {
    ($($name:ident => $path:literal;)*) => {$(
        mod $name {
            sramfit::model! { pub mod model { path: $path } }

            #[test]
            fn matches_onnxruntime() {
                let a = crate::common::quant::agreement($path, model::OUTPUT_TYPES, model::OUTPUT_SHAPES, model::run_typed);
                println!("{}: max {} steps, {:.2}% of {} elements equal, float error {}", $path, a.max_steps, 100.0 * a.equal_fraction(), a.elements, a.max_float_error);
                assert!(a.max_steps <= crate::MAX_STEPS, "{}: {} steps from onnxruntime", $path, a.max_steps);
                // int32 accumulators (ConvInteger, MatMulInteger) are integer sums: exact.
                if model::OUTPUT_TYPES.contains(&sramfit::DType::I32) {
                    assert_eq!(a.max_steps, 0.0, "{}: accumulators differ from onnxruntime's", $path);
                }
            }

            #[test]
            fn states_the_quantization_of_its_integer_ports() {
                let pairs = |q: &[Option<sramfit::Quantization>]| -> Vec<Option<(f32, i32)>> {
                    q.iter().map(|q| q.map(|q| (q.scale, q.zero_point))).collect()
                };
                let (mut inputs, mut outputs) = crate::common::quant::port_quant($path);
                if crate::RAW_PORTS.iter().any(|c| $path.contains(c)) {
                    inputs.iter_mut().chain(&mut outputs).for_each(|q| *q = None);
                }
                assert_eq!((pairs(model::INPUT_QUANT), pairs(model::OUTPUT_QUANT)), (inputs, outputs), "{}", $path);
            }
        }
    )*};
}

quant_ops! {
    q_dequantizelinear_axis_s8 => "tests/models/quant/ops/q_dequantizelinear_axis_s8.onnx";
    q_dequantizelinear_axis_u8 => "tests/models/quant/ops/q_dequantizelinear_axis_u8.onnx";
    q_dequantizelinear_s8 => "tests/models/quant/ops/q_dequantizelinear_s8.onnx";
    q_dequantizelinear_u8 => "tests/models/quant/ops/q_dequantizelinear_u8.onnx";
    q_quantizelinear_axis_s8 => "tests/models/quant/ops/q_quantizelinear_axis_s8.onnx";
    q_quantizelinear_axis_u8 => "tests/models/quant/ops/q_quantizelinear_axis_u8.onnx";
    q_quantizelinear_s8 => "tests/models/quant/ops/q_quantizelinear_s8.onnx";
    q_quantizelinear_u8 => "tests/models/quant/ops/q_quantizelinear_u8.onnx";
    qdq_add_bcast_s8 => "tests/models/quant/ops/qdq_add_bcast_s8.onnx";
    qdq_add_bcast_u8 => "tests/models/quant/ops/qdq_add_bcast_u8.onnx";
    qdq_add_s8 => "tests/models/quant/ops/qdq_add_s8.onnx";
    qdq_add_u8 => "tests/models/quant/ops/qdq_add_u8.onnx";
    qdq_avgpool_include_pad_s8 => "tests/models/quant/ops/qdq_avgpool_include_pad_s8.onnx";
    qdq_avgpool_include_pad_u8 => "tests/models/quant/ops/qdq_avgpool_include_pad_u8.onnx";
    qdq_avgpool_rescale_s8 => "tests/models/quant/ops/qdq_avgpool_rescale_s8.onnx";
    qdq_avgpool_rescale_u8 => "tests/models/quant/ops/qdq_avgpool_rescale_u8.onnx";
    qdq_avgpool_s8 => "tests/models/quant/ops/qdq_avgpool_s8.onnx";
    qdq_avgpool_u8 => "tests/models/quant/ops/qdq_avgpool_u8.onnx";
    qdq_concat_s8 => "tests/models/quant/ops/qdq_concat_s8.onnx";
    qdq_concat_same_scale_s8 => "tests/models/quant/ops/qdq_concat_same_scale_s8.onnx";
    qdq_concat_same_scale_u8 => "tests/models/quant/ops/qdq_concat_same_scale_u8.onnx";
    qdq_concat_u8 => "tests/models/quant/ops/qdq_concat_u8.onnx";
    qdq_conv3x3_s8 => "tests/models/quant/ops/qdq_conv3x3_s8.onnx";
    qdq_conv3x3_u8 => "tests/models/quant/ops/qdq_conv3x3_u8.onnx";
    qdq_conv_1d_s8 => "tests/models/quant/ops/qdq_conv_1d_s8.onnx";
    qdq_conv_1d_u8 => "tests/models/quant/ops/qdq_conv_1d_u8.onnx";
    qdq_conv_depthwise_mult2_s8 => "tests/models/quant/ops/qdq_conv_depthwise_mult2_s8.onnx";
    qdq_conv_depthwise_mult2_u8 => "tests/models/quant/ops/qdq_conv_depthwise_mult2_u8.onnx";
    qdq_conv_depthwise_s8 => "tests/models/quant/ops/qdq_conv_depthwise_s8.onnx";
    qdq_conv_depthwise_u8 => "tests/models/quant/ops/qdq_conv_depthwise_u8.onnx";
    qdq_conv_dilated_s8 => "tests/models/quant/ops/qdq_conv_dilated_s8.onnx";
    qdq_conv_dilated_u8 => "tests/models/quant/ops/qdq_conv_dilated_u8.onnx";
    qdq_conv_per_tensor_nobias_s8 => "tests/models/quant/ops/qdq_conv_per_tensor_nobias_s8.onnx";
    qdq_conv_per_tensor_nobias_u8 => "tests/models/quant/ops/qdq_conv_per_tensor_nobias_u8.onnx";
    qdq_conv_pointwise_s8 => "tests/models/quant/ops/qdq_conv_pointwise_s8.onnx";
    qdq_conv_pointwise_u8 => "tests/models/quant/ops/qdq_conv_pointwise_u8.onnx";
    qdq_conv_relu6_s8 => "tests/models/quant/ops/qdq_conv_relu6_s8.onnx";
    qdq_conv_relu6_u8 => "tests/models/quant/ops/qdq_conv_relu6_u8.onnx";
    qdq_conv_relu_folded_s8 => "tests/models/quant/ops/qdq_conv_relu_folded_s8.onnx";
    qdq_conv_relu_folded_u8 => "tests/models/quant/ops/qdq_conv_relu_folded_u8.onnx";
    qdq_conv_relu_s8 => "tests/models/quant/ops/qdq_conv_relu_s8.onnx";
    qdq_conv_relu_u8 => "tests/models/quant/ops/qdq_conv_relu_u8.onnx";
    qdq_conv_strided_s8 => "tests/models/quant/ops/qdq_conv_strided_s8.onnx";
    qdq_conv_strided_u8 => "tests/models/quant/ops/qdq_conv_strided_u8.onnx";
    qdq_flatten_s8 => "tests/models/quant/ops/qdq_flatten_s8.onnx";
    qdq_flatten_u8 => "tests/models/quant/ops/qdq_flatten_u8.onnx";
    qdq_gemm_notrans_s8 => "tests/models/quant/ops/qdq_gemm_notrans_s8.onnx";
    qdq_gemm_notrans_u8 => "tests/models/quant/ops/qdq_gemm_notrans_u8.onnx";
    qdq_gemm_s8 => "tests/models/quant/ops/qdq_gemm_s8.onnx";
    qdq_gemm_u8 => "tests/models/quant/ops/qdq_gemm_u8.onnx";
    qdq_globalavgpool_s8 => "tests/models/quant/ops/qdq_globalavgpool_s8.onnx";
    qdq_globalavgpool_u8 => "tests/models/quant/ops/qdq_globalavgpool_u8.onnx";
    qdq_hardswish_s8 => "tests/models/quant/ops/qdq_hardswish_s8.onnx";
    qdq_hardswish_u8 => "tests/models/quant/ops/qdq_hardswish_u8.onnx";
    qdq_leakyrelu_s8 => "tests/models/quant/ops/qdq_leakyrelu_s8.onnx";
    qdq_leakyrelu_u8 => "tests/models/quant/ops/qdq_leakyrelu_u8.onnx";
    qdq_matmul_act_s8 => "tests/models/quant/ops/qdq_matmul_act_s8.onnx";
    qdq_matmul_act_u8 => "tests/models/quant/ops/qdq_matmul_act_u8.onnx";
    qdq_matmul_batched_s8 => "tests/models/quant/ops/qdq_matmul_batched_s8.onnx";
    qdq_matmul_batched_u8 => "tests/models/quant/ops/qdq_matmul_batched_u8.onnx";
    qdq_matmul_const_per_tensor_s8 => "tests/models/quant/ops/qdq_matmul_const_per_tensor_s8.onnx";
    qdq_matmul_const_per_tensor_u8 => "tests/models/quant/ops/qdq_matmul_const_per_tensor_u8.onnx";
    qdq_matmul_const_s8 => "tests/models/quant/ops/qdq_matmul_const_s8.onnx";
    qdq_matmul_const_u8 => "tests/models/quant/ops/qdq_matmul_const_u8.onnx";
    qdq_maxpool_s8 => "tests/models/quant/ops/qdq_maxpool_s8.onnx";
    qdq_maxpool_u8 => "tests/models/quant/ops/qdq_maxpool_u8.onnx";
    qdq_mul_s8 => "tests/models/quant/ops/qdq_mul_s8.onnx";
    qdq_mul_u8 => "tests/models/quant/ops/qdq_mul_u8.onnx";
    qdq_pad_s8 => "tests/models/quant/ops/qdq_pad_s8.onnx";
    qdq_pad_u8 => "tests/models/quant/ops/qdq_pad_u8.onnx";
    qdq_relu_s8 => "tests/models/quant/ops/qdq_relu_s8.onnx";
    qdq_relu_u8 => "tests/models/quant/ops/qdq_relu_u8.onnx";
    qdq_reshape_s8 => "tests/models/quant/ops/qdq_reshape_s8.onnx";
    qdq_reshape_u8 => "tests/models/quant/ops/qdq_reshape_u8.onnx";
    qdq_sigmoid_s8 => "tests/models/quant/ops/qdq_sigmoid_s8.onnx";
    qdq_sigmoid_u8 => "tests/models/quant/ops/qdq_sigmoid_u8.onnx";
    qdq_layernorm_s8 => "tests/models/quant/ops/qdq_layernorm_s8.onnx";
    qdq_layernorm_u8 => "tests/models/quant/ops/qdq_layernorm_u8.onnx";
    qdq_softmax_s8 => "tests/models/quant/ops/qdq_softmax_s8.onnx";
    qdq_softmax_u8 => "tests/models/quant/ops/qdq_softmax_u8.onnx";
    qdq_tanh_s8 => "tests/models/quant/ops/qdq_tanh_s8.onnx";
    qdq_tanh_u8 => "tests/models/quant/ops/qdq_tanh_u8.onnx";
    qdq_transpose_s8 => "tests/models/quant/ops/qdq_transpose_s8.onnx";
    qdq_transpose_u8 => "tests/models/quant/ops/qdq_transpose_u8.onnx";
    qop_add_bcast_s8 => "tests/models/quant/ops/qop_add_bcast_s8.onnx";
    qop_add_bcast_u8 => "tests/models/quant/ops/qop_add_bcast_u8.onnx";
    qop_add_s8 => "tests/models/quant/ops/qop_add_s8.onnx";
    qop_add_u8 => "tests/models/quant/ops/qop_add_u8.onnx";
    qop_avgpool_include_pad_s8 => "tests/models/quant/ops/qop_avgpool_include_pad_s8.onnx";
    qop_avgpool_include_pad_u8 => "tests/models/quant/ops/qop_avgpool_include_pad_u8.onnx";
    qop_avgpool_rescale_s8 => "tests/models/quant/ops/qop_avgpool_rescale_s8.onnx";
    qop_avgpool_rescale_u8 => "tests/models/quant/ops/qop_avgpool_rescale_u8.onnx";
    qop_avgpool_s8 => "tests/models/quant/ops/qop_avgpool_s8.onnx";
    qop_avgpool_u8 => "tests/models/quant/ops/qop_avgpool_u8.onnx";
    qop_concat_s8 => "tests/models/quant/ops/qop_concat_s8.onnx";
    qop_concat_u8 => "tests/models/quant/ops/qop_concat_u8.onnx";
    qop_convinteger_s8 => "tests/models/quant/ops/qop_convinteger_s8.onnx";
    qop_convinteger_u8 => "tests/models/quant/ops/qop_convinteger_u8.onnx";
    qop_conv3x3_s8 => "tests/models/quant/ops/qop_conv3x3_s8.onnx";
    qop_conv3x3_u8 => "tests/models/quant/ops/qop_conv3x3_u8.onnx";
    qop_conv_1d_s8 => "tests/models/quant/ops/qop_conv_1d_s8.onnx";
    qop_conv_1d_u8 => "tests/models/quant/ops/qop_conv_1d_u8.onnx";
    qop_conv_depthwise_s8 => "tests/models/quant/ops/qop_conv_depthwise_s8.onnx";
    qop_conv_depthwise_u8 => "tests/models/quant/ops/qop_conv_depthwise_u8.onnx";
    qop_conv_per_tensor_nobias_s8 => "tests/models/quant/ops/qop_conv_per_tensor_nobias_s8.onnx";
    qop_conv_per_tensor_nobias_u8 => "tests/models/quant/ops/qop_conv_per_tensor_nobias_u8.onnx";
    qop_conv_pointwise_s8 => "tests/models/quant/ops/qop_conv_pointwise_s8.onnx";
    qop_conv_pointwise_u8 => "tests/models/quant/ops/qop_conv_pointwise_u8.onnx";
    qop_conv_relu_folded_s8 => "tests/models/quant/ops/qop_conv_relu_folded_s8.onnx";
    qop_conv_relu_folded_u8 => "tests/models/quant/ops/qop_conv_relu_folded_u8.onnx";
    qop_conv_strided_s8 => "tests/models/quant/ops/qop_conv_strided_s8.onnx";
    qop_conv_strided_u8 => "tests/models/quant/ops/qop_conv_strided_u8.onnx";
    qop_gemm_notrans_s8 => "tests/models/quant/ops/qop_gemm_notrans_s8.onnx";
    qop_gemm_notrans_u8 => "tests/models/quant/ops/qop_gemm_notrans_u8.onnx";
    qop_gemm_s8 => "tests/models/quant/ops/qop_gemm_s8.onnx";
    qop_gemm_u8 => "tests/models/quant/ops/qop_gemm_u8.onnx";
    qop_globalavgpool_s8 => "tests/models/quant/ops/qop_globalavgpool_s8.onnx";
    qop_globalavgpool_u8 => "tests/models/quant/ops/qop_globalavgpool_u8.onnx";
    qop_leakyrelu_s8 => "tests/models/quant/ops/qop_leakyrelu_s8.onnx";
    qop_leakyrelu_u8 => "tests/models/quant/ops/qop_leakyrelu_u8.onnx";
    qop_matmulinteger_act_s8 => "tests/models/quant/ops/qop_matmulinteger_act_s8.onnx";
    qop_matmulinteger_act_u8 => "tests/models/quant/ops/qop_matmulinteger_act_u8.onnx";
    qop_matmulinteger_s8 => "tests/models/quant/ops/qop_matmulinteger_s8.onnx";
    qop_matmulinteger_u8 => "tests/models/quant/ops/qop_matmulinteger_u8.onnx";
    qop_matmul_act_s8 => "tests/models/quant/ops/qop_matmul_act_s8.onnx";
    qop_matmul_act_u8 => "tests/models/quant/ops/qop_matmul_act_u8.onnx";
    qop_matmul_batched_s8 => "tests/models/quant/ops/qop_matmul_batched_s8.onnx";
    qop_matmul_batched_u8 => "tests/models/quant/ops/qop_matmul_batched_u8.onnx";
    qop_matmul_const_per_tensor_s8 => "tests/models/quant/ops/qop_matmul_const_per_tensor_s8.onnx";
    qop_matmul_const_per_tensor_u8 => "tests/models/quant/ops/qop_matmul_const_per_tensor_u8.onnx";
    qop_maxpool_s8 => "tests/models/quant/ops/qop_maxpool_s8.onnx";
    qop_maxpool_u8 => "tests/models/quant/ops/qop_maxpool_u8.onnx";
    qop_mul_s8 => "tests/models/quant/ops/qop_mul_s8.onnx";
    qop_mul_u8 => "tests/models/quant/ops/qop_mul_u8.onnx";
    qop_pad_s8 => "tests/models/quant/ops/qop_pad_s8.onnx";
    qop_pad_u8 => "tests/models/quant/ops/qop_pad_u8.onnx";
    qop_reshape_s8 => "tests/models/quant/ops/qop_reshape_s8.onnx";
    qop_reshape_u8 => "tests/models/quant/ops/qop_reshape_u8.onnx";
    qop_sigmoid_s8 => "tests/models/quant/ops/qop_sigmoid_s8.onnx";
    qop_sigmoid_u8 => "tests/models/quant/ops/qop_sigmoid_u8.onnx";
    qop_softmax_s8 => "tests/models/quant/ops/qop_softmax_s8.onnx";
    qop_softmax_u8 => "tests/models/quant/ops/qop_softmax_u8.onnx";
    qop_transpose_s8 => "tests/models/quant/ops/qop_transpose_s8.onnx";
    qop_transpose_u8 => "tests/models/quant/ops/qop_transpose_u8.onnx";
}
