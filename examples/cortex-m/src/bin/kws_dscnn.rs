//! Keyword spotting DS-CNN (MLPerf Tiny architecture) on the board, checked against onnxruntime.
#![no_std]
#![no_main]

use sramfit_cortex_m::board;

sramfit::model! {
    /// Keyword spotting DS-CNN: 49x10 MFCC features in, 12 class scores out.
    mod kws {
        path: "../../tests/models/kws_dscnn.onnx",
        sram: board::SRAM - board::STACK_RESERVE,
    }
}

sramfit_cortex_m::firmware!(kws, "kws_dscnn");
