//! Whole models through `model!`, checked against onnxruntime (committed fixtures) and tract; with
//! them the Keras models exported to ONNX by tf2onnx (`tests/models/nhwc/`, NHWC graphs whose
//! first convolutions tract keeps channels-last).

mod common;

common::bundled_models!(
    common::fixtures,
    resnet8_keras => "tests/models/nhwc/resnet8_keras.onnx",
    vww_mobilenetv1_keras => "tests/models/nhwc/vww_mobilenetv1_keras.onnx",
);
