//! Keyword spotting DS-CNN, int8 (QDQ, per-channel weights; the ONNX equivalent of MLPerf Tiny's
//! int8 KWS) on the board, checked bit for bit against the host build.
#![no_std]
#![no_main]

use sramfit_cortex_m::board;

sramfit::model! {
    /// Int8 keyword spotting DS-CNN: 49x10 MFCC features in (float, quantized inside), 12 class
    /// probabilities out.
    mod kws {
        path: "../../tests/models/quant/kws_dscnn_qdq_s8.onnx",
        sram: board::SRAM - board::STACK_RESERVE,
    }
}

sramfit_cortex_m::firmware!(kws, "kws_dscnn_qdq_s8");
