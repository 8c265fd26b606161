//! MLPerf Tiny visual wake words, the official int8 file `vww_96_int8.tflite` as `vww_96_int8`
//! builds it but with the default rewrites, patch-based execution among them: the first stages
//! run in bands of output rows (a smaller arena, recomputed halo rows), checked bit for bit
//! against TFLM's outputs like the untiled build.
#![no_std]
#![no_main]

use sramfit_cortex_m::board;

sramfit::model! {
    /// Int8 visual wake words, tiled: a 96x96 RGB int8 image in, 2 int8 class scores out.
    mod vww {
        path: "../../../shared/mlperf-tiny/vww_96_int8.tflite",
        sram: board::SRAM - board::STACK_RESERVE,
    }
}

sramfit_cortex_m::firmware!(vww, "vww_96_int8_tiled");
