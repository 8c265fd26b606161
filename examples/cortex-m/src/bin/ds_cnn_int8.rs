//! A small int8 keyword-spotting DS-CNN (Keras, bundled `tests/models/tflite/keras/ds_cnn_int8.tflite`),
//! checked bit for bit against TFLM's outputs: the int8 model for the micro:bit's 16 KB of SRAM.
#![no_std]
#![no_main]

use sramfit_cortex_m::board;

sramfit::model! {
    /// Int8 DS-CNN: int8 features in, int8 class scores out.
    mod ds_cnn {
        path: "../../tests/models/tflite/keras/ds_cnn_int8.tflite",
        sram: board::SRAM - board::STACK_RESERVE,
    }
}

sramfit_cortex_m::firmware!(ds_cnn, "ds_cnn_int8");
