//! A small multilayer perceptron (64 -> 10; the bundled model with the most weights that fits the M3)
//! on the board, checked against onnxruntime.
#![no_std]
#![no_main]

use sramfit_cortex_m::board;

sramfit::model! {
    /// MLP: 64 features in, 10 class scores out.
    mod net {
        path: "../../tests/models/mlp.onnx",
        sram: board::SRAM - board::STACK_RESERVE,
    }
}

sramfit_cortex_m::firmware!(net, "mlp");
