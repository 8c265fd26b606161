//! MLPerf Tiny image classification (ResNet-8, CIFAR-10), the official int8 file
//! `pretrainedResnet_quant.tflite` read in place from `../shared/mlperf-tiny/`, checked bit for
//! bit against TFLM's outputs.
#![no_std]
#![no_main]

use sramfit_cortex_m::board;

sramfit::model! {
    /// Int8 ResNet-8: a 32x32 RGB int8 image in, 10 int8 class scores out.
    mod resnet {
        path: "../../../shared/mlperf-tiny/pretrainedResnet_quant.tflite",
        sram: board::SRAM - board::STACK_RESERVE,
        // Untiled: the layers of the CMSIS-NN build it is compared with (`vww_96_int8_tiled`
        // runs a tiled plan).
        optimize: { tile: false },
    }
}

sramfit_cortex_m::firmware!(resnet, "pretrained_resnet_quant");
