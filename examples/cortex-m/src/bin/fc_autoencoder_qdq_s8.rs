//! Anomaly detection FC autoencoder, int8 (QDQ, per-channel weights; the ONNX equivalent of MLPerf
//! Tiny's int8 AD model) on the board, checked bit for bit against the host build.
#![no_std]
#![no_main]

use sramfit_cortex_m::board;

sramfit::model! {
    /// Int8 FC autoencoder: 640 features in and their reconstruction out (float ports, quantized
    /// inside).
    mod ad {
        path: "../../tests/models/quant/fc_autoencoder_qdq_s8.onnx",
        sram: board::SRAM - board::STACK_RESERVE,
    }
}

sramfit_cortex_m::firmware!(ad, "fc_autoencoder_qdq_s8");
