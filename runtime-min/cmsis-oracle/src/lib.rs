//! Bindings to Arm's CMSIS-NN int8 kernels, compiled from `../shared/cmsis-nn` by the build
//! script for the target being built: for the host (pure-C paths), where this crate's tests use
//! them as an independent bit-exactness oracle for `sramfit_runtime_min::quant`; for a Cortex-M
//! target (with arm-none-eabi-gcc, CMSIS-NN's DSP paths where the core has them), where the
//! firmware in `examples/cortex-m` runs whole networks through them beside sramfit's code.
//!
//! Everything here exists only with `cfg(cmsis)` (the sources were found). [`ffi`] mirrors the C
//! declarations of `Include/arm_nnfunctions.h` and `Include/arm_nn_types.h` (`no_std`); with
//! feature `std` (default), safe wrappers allocate CMSIS-NN's scratch buffers and check the
//! returned status.
#![cfg(cmsis)]
#![no_std]
// The wrappers mirror C signatures with many parameters.
#![allow(clippy::too_many_arguments)]

#[cfg(feature = "std")]
extern crate std;

pub mod ffi;
#[cfg(feature = "std")]
mod wrappers;

pub use ffi::{Activation, BmmParams, ConvParams, Dims, DwConvParams, FcParams, PerTensorQuant, PoolParams, Tile};
#[cfg(feature = "std")]
pub use wrappers::*;
