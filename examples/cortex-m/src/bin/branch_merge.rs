//! branch_merge on the board, checked against onnxruntime.
#![no_std]
#![no_main]

use sramfit_cortex_m::board;

sramfit::model! {
    /// branch_merge.
    mod net {
        path: "../../tests/models/branch_merge.onnx",
        sram: board::SRAM - board::STACK_RESERVE,
    }
}

sramfit_cortex_m::firmware!(net, "branch_merge");
