//! MLPerf Tiny anomaly detection (fully connected autoencoder), the official int8 file
//! `ad01_int8.tflite` read in place from `../shared/mlperf-tiny/`, checked bit for bit against
//! TFLM's outputs.
#![no_std]
#![no_main]

use sramfit_cortex_m::board;

sramfit::model! {
    /// Int8 anomaly detection: 640 int8 features in, their 640 int8 reconstructions out.
    mod ad {
        path: "../../../shared/mlperf-tiny/ad01_int8.tflite",
        sram: board::SRAM - board::STACK_RESERVE,
        // Untiled: the layers of the CMSIS-NN build it is compared with (`vww_96_int8_tiled`
        // runs a tiled plan).
        optimize: { tile: false },
    }
}

sramfit_cortex_m::firmware!(ad, "ad01_int8");
