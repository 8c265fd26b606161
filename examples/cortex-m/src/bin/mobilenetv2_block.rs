//! Two MobileNetV2 inverted-residual blocks on the board, checked against onnxruntime.
#![no_std]
#![no_main]

use sramfit_cortex_m::board;

sramfit::model! {
    /// MobileNetV2 blocks: a 16x24x24 feature map in, 24x12x12 out.
    mod mbv2 {
        path: "../../tests/models/mobilenetv2_block.onnx",
        sram: board::SRAM - board::STACK_RESERVE,
    }
}

sramfit_cortex_m::firmware!(mbv2, "mobilenetv2_block");
