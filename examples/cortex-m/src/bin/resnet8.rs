//! ResNet-8 (MLPerf Tiny image classification) on the board, checked against onnxruntime.
//! Its arena does not fit lm3s6965evb's 64 KB: building it for that board must fail with sramfit's
//! budget error (`scripts/cortex-m.sh` checks that).
#![no_std]
#![no_main]

use sramfit_cortex_m::board;

sramfit::model! {
    /// ResNet-8: 32x32 RGB image in, 10 class scores out.
    mod resnet8 {
        path: "../../tests/models/resnet8.onnx",
        sram: board::SRAM - board::STACK_RESERVE,
    }
}

sramfit_cortex_m::firmware!(resnet8, "resnet8");
