//! MLPerf Tiny keyword spotting (DS-CNN), the official int8 file `kws_ref_model.tflite` read in
//! place from `../shared/mlperf-tiny/`, checked bit for bit against TFLM's outputs.
#![no_std]
#![no_main]

use sramfit_cortex_m::board;

sramfit::model! {
    /// Int8 keyword spotting: 49x10 int8 MFCC features in, 12 int8 class scores out.
    mod kws {
        path: "../../../shared/mlperf-tiny/kws_ref_model.tflite",
        sram: board::SRAM - board::STACK_RESERVE,
        // Untiled: the layers of the CMSIS-NN build it is compared with (`vww_96_int8_tiled`
        // runs a tiled plan).
        optimize: { tile: false },
    }
}

sramfit_cortex_m::firmware!(kws, "kws_ref_model");
