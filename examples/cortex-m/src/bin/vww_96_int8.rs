//! MLPerf Tiny visual wake words (MobileNetV1 0.25, 96x96), the official int8 file
//! `vww_96_int8.tflite` read in place from `../shared/mlperf-tiny/`, checked bit for bit against
//! TFLM's outputs.
#![no_std]
#![no_main]

use sramfit_cortex_m::board;

sramfit::model! {
    /// Int8 visual wake words: a 96x96 RGB int8 image in, 2 int8 class scores out.
    mod vww {
        path: "../../../shared/mlperf-tiny/vww_96_int8.tflite",
        sram: board::SRAM - board::STACK_RESERVE,
        // Untiled: the layers of the CMSIS-NN build it is compared with (`vww_96_int8_tiled`
        // runs a tiled plan).
        optimize: { tile: false },
    }
}

sramfit_cortex_m::firmware!(vww, "vww_96_int8");
