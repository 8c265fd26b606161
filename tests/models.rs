//! Whole models through `model!`, checked against onnxruntime (committed fixtures) and tract.

mod common;

common::fixtures! {
    branch_merge => "tests/models/branch_merge.onnx",
    concat_branches => "tests/models/concat_branches.onnx",
    fc_autoencoder => "tests/models/fc_autoencoder.onnx",
    kws_dscnn => "tests/models/kws_dscnn.onnx",
    lenet => "tests/models/lenet.onnx",
    mlp => "tests/models/mlp.onnx",
    mnist_cnn => "tests/models/mnist_cnn.onnx",
    mobilenetv2_block => "tests/models/mobilenetv2_block.onnx",
    reshape_views => "tests/models/reshape_views.onnx",
    resnet8 => "tests/models/resnet8.onnx",
    two_inputs_two_outputs => "tests/models/two_inputs_two_outputs.onnx",
    vww_mobilenetv1 => "tests/models/vww_mobilenetv1.onnx",
}
