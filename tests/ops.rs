//! One-node models of every supported operator through `model!`, checked against onnxruntime
//! (committed fixtures made by scripts/gen_op_tests.py) and tract.

mod common;

/// One `model!` per fixture, and a test checking it against onnxruntime and tract.
macro_rules! fixtures {
    ($($name:ident => $path:literal),* $(,)?) => {
        $(
            mod $name {
                sramfit::model! { pub mod model { path: $path } }

                #[test]
                fn matches_onnxruntime_and_tract() {
                    crate::common::check_model($path, model::OUTPUT_SHAPES, model::run_dyn);
                }
            }
        )*
    };
}

fixtures! {
    add_bcast_both => "tests/models/ops/add_bcast_both.onnx",
    add_channel => "tests/models/ops/add_channel.onnx",
    add_same => "tests/models/ops/add_same.onnx",
    add_scalar => "tests/models/ops/add_scalar.onnx",
    add_scalar_lhs => "tests/models/ops/add_scalar_lhs.onnx",
    avgpool_2x2_s2 => "tests/models/ops/avgpool_2x2_s2.onnx",
    avgpool_pad1_exclude => "tests/models/ops/avgpool_pad1_exclude.onnx",
    avgpool_pad1_include => "tests/models/ops/avgpool_pad1_include.onnx",
    avgpool_s2_pads_asym_exclude => "tests/models/ops/avgpool_s2_pads_asym_exclude.onnx",
    avgpool_s2_pads_asym_include => "tests/models/ops/avgpool_s2_pads_asym_include.onnx",
    batchnorm_2d => "tests/models/ops/batchnorm_2d.onnx",
    batchnorm_4d => "tests/models/ops/batchnorm_4d.onnx",
    batchnorm_eps => "tests/models/ops/batchnorm_eps.onnx",
    clip_max_only => "tests/models/ops/clip_max_only.onnx",
    clip_min_max => "tests/models/ops/clip_min_max.onnx",
    clip_min_only => "tests/models/ops/clip_min_only.onnx",
    clip_relu6 => "tests/models/ops/clip_relu6.onnx",
    concat_axis0 => "tests/models/ops/concat_axis0.onnx",
    concat_axis1_4d => "tests/models/ops/concat_axis1_4d.onnx",
    concat_axis_neg1 => "tests/models/ops/concat_axis_neg1.onnx",
    conv1d => "tests/models/ops/conv1d.onnx",
    conv1d_stride2_dilation2 => "tests/models/ops/conv1d_stride2_dilation2.onnx",
    conv_1x1 => "tests/models/ops/conv_1x1.onnx",
    conv_1x1_stride2 => "tests/models/ops/conv_1x1_stride2.onnx",
    conv_depthwise => "tests/models/ops/conv_depthwise.onnx",
    conv_depthwise_mult2 => "tests/models/ops/conv_depthwise_mult2.onnx",
    conv_dilation2 => "tests/models/ops/conv_dilation2.onnx",
    conv_groups2 => "tests/models/ops/conv_groups2.onnx",
    conv_nobias => "tests/models/ops/conv_nobias.onnx",
    conv_nonsquare => "tests/models/ops/conv_nonsquare.onnx",
    conv_pad1 => "tests/models/ops/conv_pad1.onnx",
    conv_pads_asym => "tests/models/ops/conv_pads_asym.onnx",
    conv_plain => "tests/models/ops/conv_plain.onnx",
    conv_rect_kernel => "tests/models/ops/conv_rect_kernel.onnx",
    conv_stride2 => "tests/models/ops/conv_stride2.onnx",
    div_bcast_both => "tests/models/ops/div_bcast_both.onnx",
    div_channel => "tests/models/ops/div_channel.onnx",
    div_same => "tests/models/ops/div_same.onnx",
    div_scalar => "tests/models/ops/div_scalar.onnx",
    div_scalar_lhs => "tests/models/ops/div_scalar_lhs.onnx",
    dropout => "tests/models/ops/dropout.onnx",
    dropout_ratio => "tests/models/ops/dropout_ratio.onnx",
    flatten_axis1 => "tests/models/ops/flatten_axis1.onnx",
    flatten_axis2 => "tests/models/ops/flatten_axis2.onnx",
    gemm_alpha_beta => "tests/models/ops/gemm_alpha_beta.onnx",
    gemm_c_1n => "tests/models/ops/gemm_c_1n.onnx",
    gemm_c_mn => "tests/models/ops/gemm_c_mn.onnx",
    gemm_c_scalar => "tests/models/ops/gemm_c_scalar.onnx",
    gemm_no_c => "tests/models/ops/gemm_no_c.onnx",
    gemm_plain => "tests/models/ops/gemm_plain.onnx",
    gemm_transa => "tests/models/ops/gemm_transA.onnx",
    gemm_transa_transb => "tests/models/ops/gemm_transA_transB.onnx",
    gemm_transb => "tests/models/ops/gemm_transB.onnx",
    global_avgpool => "tests/models/ops/global_avgpool.onnx",
    identity_then_relu => "tests/models/ops/identity_then_relu.onnx",
    matmul_2d => "tests/models/ops/matmul_2d.onnx",
    matmul_3d_bcast => "tests/models/ops/matmul_3d_bcast.onnx",
    matmul_3d_bcast_batch => "tests/models/ops/matmul_3d_bcast_batch.onnx",
    matmul_4d_attention => "tests/models/ops/matmul_4d_attention.onnx",
    maxpool_2x2_s2 => "tests/models/ops/maxpool_2x2_s2.onnx",
    maxpool_3x3_s2_pad1 => "tests/models/ops/maxpool_3x3_s2_pad1.onnx",
    maxpool_ceil => "tests/models/ops/maxpool_ceil.onnx",
    maxpool_dilation2 => "tests/models/ops/maxpool_dilation2.onnx",
    maxpool_same_asym => "tests/models/ops/maxpool_same_asym.onnx",
    mul_bcast_both => "tests/models/ops/mul_bcast_both.onnx",
    mul_channel => "tests/models/ops/mul_channel.onnx",
    mul_same => "tests/models/ops/mul_same.onnx",
    mul_scalar => "tests/models/ops/mul_scalar.onnx",
    mul_scalar_lhs => "tests/models/ops/mul_scalar_lhs.onnx",
    relu => "tests/models/ops/relu.onnx",
    relu_then_identity => "tests/models/ops/relu_then_identity.onnx",
    reshape_neg1 => "tests/models/ops/reshape_neg1.onnx",
    reshape_zero => "tests/models/ops/reshape_zero.onnx",
    sigmoid => "tests/models/ops/sigmoid.onnx",
    softmax_axis1_3d => "tests/models/ops/softmax_axis1_3d.onnx",
    softmax_last => "tests/models/ops/softmax_last.onnx",
    softmax_last_3d => "tests/models/ops/softmax_last_3d.onnx",
    squeeze_axes => "tests/models/ops/squeeze_axes.onnx",
    squeeze_neg_axis => "tests/models/ops/squeeze_neg_axis.onnx",
    squeeze_noaxes => "tests/models/ops/squeeze_noaxes.onnx",
    sub_bcast_both => "tests/models/ops/sub_bcast_both.onnx",
    sub_channel => "tests/models/ops/sub_channel.onnx",
    sub_same => "tests/models/ops/sub_same.onnx",
    sub_scalar => "tests/models/ops/sub_scalar.onnx",
    sub_scalar_lhs => "tests/models/ops/sub_scalar_lhs.onnx",
    tanh => "tests/models/ops/tanh.onnx",
    transpose_0231 => "tests/models/ops/transpose_0231.onnx",
    transpose_10 => "tests/models/ops/transpose_10.onnx",
    transpose_201 => "tests/models/ops/transpose_201.onnx",
    transpose_default => "tests/models/ops/transpose_default.onnx",
    unsqueeze_axes => "tests/models/ops/unsqueeze_axes.onnx",
    unsqueeze_multi_neg => "tests/models/ops/unsqueeze_multi_neg.onnx",
}
