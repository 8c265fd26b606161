//! `pretrainedResnet_quant.tflite` (MLPerf Tiny, from `../shared/mlperf-tiny/`) through Arm's CMSIS-NN, layer by
//! layer, on the same weights and quantization parameters as `pretrained_resnet_quant`: its instruction count
//! beside sramfit's, its outputs checked bit for bit against TFLM's.
#![no_std]
#![no_main]

/// The layer list build.rs wrote from the same file.
mod layers {
    include!(concat!(env!("OUT_DIR"), "/pretrained_resnet_quant.cmsis.rs"));
}

sramfit_cortex_m::cmsis_firmware!(layers, "pretrained_resnet_quant");
