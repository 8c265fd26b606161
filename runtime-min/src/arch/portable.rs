//! The architecture interface of a target with no architecture kernels (today every target but
//! x86-64, Cortex-M included): the portable path only, no detection, no state. Every function
//! says "not here", so the portable kernels run, compiled exactly as they would be without this
//! module.

use super::path::{KernelCall, KernelPath, Kernels};
use crate::blocked::Reorder;
use crate::conv_shape::{Conv2d, ConvOperands, SharedRegion};
use crate::epilogue::{Bias, Gemm};
use crate::pool::Pool2d;

/// The only path.
#[inline(always)]
pub(super) fn detected() -> KernelPath {
    KernelPath::Portable
}

/// The only path.
#[inline(always)]
pub(super) fn current() -> KernelPath {
    KernelPath::Portable
}

/// Nothing to switch: the portable path stays (the caller checked that it asked for it).
pub(super) fn force(_path: KernelPath) -> KernelPath {
    KernelPath::Portable
}

/// No GEMM micro-kernels.
#[inline(always)]
pub(super) fn gemm(_path: KernelPath, _g: &Gemm, _a: &[f32], _b: &[f32], _bias: Bias, _c: &mut [f32]) -> bool {
    false
}

/// No plane sums: the portable fold sums every plane.
#[inline(always)]
pub(super) fn plane_sums(_path: KernelPath, _x: &[f32], _y: &mut [f32]) -> usize {
    0
}

/// No channel-blocked convolution kernels: the portable ones compute every layer.
#[inline(always)]
pub(super) fn conv2d_blocked(
    _path: KernelPath,
    _p: &Conv2d,
    _x: &[f32],
    _w: &[f32],
    _bias: Option<&[f32]>,
    _y: &mut [f32],
) -> bool {
    false
}

/// No vector transposes: the portable loop converts every block.
#[inline(always)]
pub(super) fn reorder_blocked(_path: KernelPath, _way: Reorder, _plane: usize, _x: &[f32], _y: &mut [f32]) -> bool {
    false
}

/// No vector max pooling: the portable kernel pools every window.
#[inline(always)]
pub(super) fn max_pool_square2(_path: KernelPath, _p: &Pool2d, _x: &[f32], _y: &mut [f32]) -> bool {
    false
}

/// No implicit-GEMM convolution.
#[inline(always)]
pub(super) fn implicit_conv(_path: KernelPath, _ocg: usize, _tile: usize, _positions: usize) -> bool {
    false
}

/// Never called: [`implicit_conv`] is false.
pub(super) fn conv_implicit(_path: KernelPath, _p: &Conv2d, _ops: ConvOperands) {
    unreachable!("no implicit convolution on the portable path")
}

/// No depthwise kernels: the direct convolution runs (on a Cortex-M4 the x86-64 depthwise
/// kernels executed more instructions than it does, and their padded plane takes 32 KiB of
/// stack).
#[inline(always)]
pub(super) fn depthwise(_path: KernelPath, _p: &Conv2d, _ops: ConvOperands) -> bool {
    false
}

/// No depthwise kernels (see [`depthwise`]).
#[inline(always)]
pub(super) fn depthwise_shared(_path: KernelPath, _p: &Conv2d, _shared: SharedRegion, _w: &[f32], _bias: Bias) -> bool {
    false
}

/// A plain call.
#[inline(always)]
pub(super) fn run(kernels: Kernels, call: impl KernelCall) {
    call.run(kernels)
}

/// The portable int8 kernels (or, where `cfg(arm_dsp)` is set, Arm's DSP kernels, chosen when
/// the crate is compiled).
pub(super) fn quant_kernels(_path: KernelPath) -> &'static str {
    if cfg!(arm_dsp) {
        "arm-dsp"
    } else {
        "portable"
    }
}

/// No int8 kernels of a run-time path: [`quant_conv2d`], [`quant_depthwise_conv2d`] and
/// [`quant_fully_connected`] (for any layer parameters `P`) say "not here" (not built where
/// `cfg(arm_dsp)` is set: `arch/arm/` has them there).
#[cfg(not(arm_dsp))]
#[inline(always)]
pub(super) fn no_quant_kernel<P, T: crate::quant::QuantElem>(
    _path: KernelPath,
    _p: &P,
    _x: &[T],
    _w: &[i8],
    _q: &crate::quant::ChannelQuant,
    _y: &mut [T],
) -> bool {
    false
}

#[cfg(not(arm_dsp))]
pub(super) use self::{
    no_quant_kernel as quant_conv2d, no_quant_kernel as quant_depthwise_conv2d,
    no_quant_kernel as quant_fully_connected,
};
