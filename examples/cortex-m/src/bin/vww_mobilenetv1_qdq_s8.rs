//! Visual wake words MobileNetV1-0.25, int8 (QDQ, per-channel weights; the ONNX equivalent of
//! MLPerf Tiny's int8 VWW) on the board, checked bit for bit against the host build.
#![no_std]
#![no_main]

use sramfit_cortex_m::board;

sramfit::model! {
    /// Int8 visual wake words MobileNetV1-0.25: a 96x96 RGB image in (float, quantized inside),
    /// 2 class probabilities out.
    mod vww {
        path: "../../tests/models/quant/vww_mobilenetv1_qdq_s8.onnx",
        sram: board::SRAM - board::STACK_RESERVE,
    }
}

sramfit_cortex_m::firmware!(vww, "vww_mobilenetv1_qdq_s8");
