//! Whole architectures people deploy (scripts/gen_architectures.py, random weights) through
//! `model!`, checked against onnxruntime (committed fixtures) and tract. MobileNetV1-0.25 is in
//! tests/models.rs (`vww_mobilenetv1`).

mod common;

common::fixtures! {
    densenet_block => "tests/models/arch/densenet_block.onnx",
    inception_block => "tests/models/arch/inception_block.onnx",
    mobilenetv2_035 => "tests/models/arch/mobilenetv2_035.onnx",
    resnet18 => "tests/models/arch/resnet18.onnx",
    shufflenetv2 => "tests/models/arch/shufflenetv2.onnx",
    squeezenet11 => "tests/models/arch/squeezenet11.onnx",
    transformer_encoder => "tests/models/arch/transformer_encoder.onnx",
    unet => "tests/models/arch/unet.onnx",
}
