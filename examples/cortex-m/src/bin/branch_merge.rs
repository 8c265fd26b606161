//! Convolution branches merged by an add (the bundled model with the largest arena that fits the M3)
//! on the board, checked against onnxruntime.
#![no_std]
#![no_main]

use sramfit_cortex_m::board;

sramfit::model! {
    /// Branch/merge graph: a 4x16x16 feature map in, 8x16x16 out.
    mod net {
        path: "../../tests/models/branch_merge.onnx",
        sram: board::SRAM - board::STACK_RESERVE,
    }
}

sramfit_cortex_m::firmware!(net, "branch_merge");
