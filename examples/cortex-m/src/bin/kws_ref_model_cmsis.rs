//! `kws_ref_model.tflite` (MLPerf Tiny, from `../shared/mlperf-tiny/`) through Arm's CMSIS-NN, layer by
//! layer, on the same weights and quantization parameters as `kws_ref_model`: its instruction count
//! beside sramfit's, its outputs checked bit for bit against TFLM's.
#![no_std]
#![no_main]

/// The layer list build.rs wrote from the same file.
mod layers {
    include!(concat!(env!("OUT_DIR"), "/kws_ref_model.cmsis.rs"));
}

sramfit_cortex_m::cmsis_firmware!(layers, "kws_ref_model");
