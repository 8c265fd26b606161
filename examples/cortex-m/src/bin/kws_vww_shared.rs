//! Keyword spotting, then visual wake words (the official MLPerf Tiny int8 files), never at the
//! same time: one `sramfit::models!` group, so one arena of the larger model's size, not the sum.
//! Both checked bit for bit against TFLM's outputs. Built untiled, like the `kws_ref_model` and
//! `vww_96_int8` binaries whose rows it sits next to (`vww_96_int8_tiled` shows the tiled VWW).
#![no_std]
#![no_main]

use sramfit_cortex_m::board;

sramfit::models! {
    /// The two networks, taking turns in one arena.
    mod sensing {
        /// Int8 keyword spotting (DS-CNN): 49x10 int8 MFCC features in, 12 int8 class scores out.
        pub mod kws {
            path: "../../../shared/mlperf-tiny/kws_ref_model.tflite",
            sram: board::SRAM - board::STACK_RESERVE,
            optimize: { tile: false },
        }
        /// Int8 visual wake words: a 96x96 RGB int8 image in, 2 int8 class scores out.
        pub mod vww {
            path: "../../../shared/mlperf-tiny/vww_96_int8.tflite",
            sram: board::SRAM - board::STACK_RESERVE,
            optimize: { tile: false },
        }
    }
}

sramfit_cortex_m::group_firmware!(sensing, "kws_vww_shared", (kws, "kws_ref_model"), (vww, "vww_96_int8"));
