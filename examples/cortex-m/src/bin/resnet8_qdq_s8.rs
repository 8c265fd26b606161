//! Image classification ResNet-8, int8 (QDQ, per-channel weights; the ONNX equivalent of MLPerf
//! Tiny's int8 IC model) on the board, checked bit for bit against the host build.
#![no_std]
#![no_main]

use sramfit_cortex_m::board;

sramfit::model! {
    /// Int8 ResNet-8: a 32x32 RGB image in (float, quantized inside), 10 class probabilities out.
    mod resnet {
        path: "../../tests/models/quant/resnet8_qdq_s8.onnx",
        sram: board::SRAM - board::STACK_RESERVE,
    }
}

sramfit_cortex_m::firmware!(resnet, "resnet8_qdq_s8");
