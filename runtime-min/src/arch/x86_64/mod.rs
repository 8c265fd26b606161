//! x86-64: run-time detection ([`detect`]), the FMA kernels ([`fma`], [`depthwise`]) written once
//! over [`Lanes`] and compiled per instruction set into the entry points below, and the dispatch
//! from a [`KernelPath`] to them.
//!
//! A `#[target_feature]` function cannot be inlined into a caller without the features, and what
//! it calls without inlining is compiled for the baseline CPU. So the entry points sit at the
//! level of one kernel call (one GEMM, one convolution group, one depthwise convolution), and
//! everything below them is `#[inline(always)]`: the micro-kernels are monomorphised and inlined
//! inside functions compiled with AVX2 + FMA or AVX-512F (the pattern of `pulp`'s `WithSimd`;
//! tract-linalg instead registers hand-written kernels per CPU at start-up). This module holds
//! the crate's `unsafe` calls of those entry points; each rests on the [`KernelPath`] it matched
//! being one that detection found supported ([`crate::arch::Kernels`] is only made from such a
//! path).
#![allow(unsafe_code)]

mod blocked;
mod blocked_dense;
mod copy;
mod depthwise;
mod depthwise_blocked;
mod depthwise_io;
mod depthwise_masked;
mod depthwise_strided;
mod detect;
mod fma;
mod int8;
mod kernel_columns;
mod lanes;
mod max_pool;
mod plane_sums;

pub(super) use detect::{current, detected, force};
pub(super) use int8::{quant_add_sub, quant_add_sub_in_place, quant_max_pool2d, quant_quantize};
pub(super) use int8::{quant_conv2d, quant_depthwise_conv2d, quant_fully_connected, quant_kernels};

use super::path::{KernelCall, KernelPath, Kernels};
use crate::blocked::Reorder;
use crate::conv_shape::{Conv2d, ConvOperands, SharedRegion};
use crate::epilogue::{Bias, Gemm};
use crate::pool::Pool2d;
use depthwise_io::{DepthwiseOperands, Planes};
use lanes::{Avx2, Avx512};

use super::x86_64_facts::FMA_MIN_ROWS;

/// Most output positions for which a convolution prefers im2col (when its scratch holds a whole
/// tile) to the implicit GEMM. (With weights in cache the implicit GEMM is the faster from 9
/// positions on: ResNet-18's 256-channel 3x3 layers at 4x4, 345 against 431 us; but in the model,
/// whose 45 MB of weights are not, 657 against 562 us: im2col's GEMM reads the weights 128 depths
/// at a time, all output channels, a walk the prefetchers follow better.)
const NARROW_POSITIONS: usize = 16;

/// The entry points of one instruction set: each a kernel of [`fma`] or [`depthwise`],
/// monomorphised for `$lanes` and compiled with `$features`.
macro_rules! entry_points {
    ($isa:ident, $lanes:ty, $features:literal) => {
        /// Entry points compiled with
        #[doc = $features]
        mod $isa {
            use super::*;

            /// [`fma::gemm`].
            #[target_feature(enable = $features)]
            pub(super) fn gemm(g: &Gemm, a: &[f32], b: &[f32], bias: Bias, c: &mut [f32]) {
                fma::gemm::<$lanes>(g, a, b, bias, c)
            }

            /// [`fma::conv_implicit`].
            #[target_feature(enable = $features)]
            pub(super) fn conv_implicit(p: &Conv2d, ops: ConvOperands) {
                fma::conv_implicit::<$lanes>(p, ops)
            }

            /// [`depthwise::depthwise_3x3`].
            #[target_feature(enable = $features)]
            pub(super) fn depthwise_3x3(p: &Conv2d, ops: DepthwiseOperands, c0: usize) {
                depthwise::depthwise_3x3::<$lanes>(p, ops, c0)
            }

            /// [`depthwise_blocked::depthwise_blocked`].
            #[target_feature(enable = $features)]
            pub(super) fn depthwise_blocked(p: &Conv2d, ops: DepthwiseOperands) -> usize {
                depthwise_blocked::depthwise_blocked::<$lanes>(p, ops)
            }

            /// [`blocked::conv2d_blocked`].
            #[target_feature(enable = $features)]
            pub(super) fn conv2d_blocked(p: &Conv2d, x: &[f32], w: &[f32], bias: Option<&[f32]>, y: &mut [f32]) {
                blocked::conv2d_blocked::<$lanes>(p, x, w, bias, y)
            }

            /// [`blocked::reorder_blocked`].
            #[target_feature(enable = $features)]
            pub(super) fn reorder_blocked(way: Reorder, plane: usize, x: &[f32], y: &mut [f32]) {
                blocked::reorder_blocked::<$lanes>(way, plane, x, y)
            }

            /// [`plane_sums::plane_sums`].
            #[target_feature(enable = $features)]
            pub(super) fn plane_sums(x: &[f32], y: &mut [f32]) -> usize {
                plane_sums::plane_sums::<$lanes>(x, y)
            }

            /// [`max_pool::max_pool_square2`].
            #[target_feature(enable = $features)]
            pub(super) fn max_pool_square2(p: &Pool2d, x: &[f32], y: &mut [f32]) {
                max_pool::max_pool_square2::<$lanes>(p, x, y)
            }

            /// A kernel call's whole body.
            #[target_feature(enable = $features)]
            pub(super) fn run(kernels: Kernels, call: impl KernelCall) {
                call.run(kernels)
            }
        }
    };
}

entry_points!(avx2, Avx2, "avx2,fma");
entry_points!(avx512, Avx512, "avx512f,avx2,fma");

/// [`depthwise_masked::depthwise_masked`], compiled with AVX-512F (it has no AVX2 form).
#[target_feature(enable = "avx512f,avx2,fma")]
fn depthwise_masked_avx512(p: &Conv2d, ops: DepthwiseOperands) {
    depthwise_masked::depthwise_masked(p, ops)
}

/// [`depthwise_strided::depthwise_strided`], compiled with AVX-512F (it has no AVX2 form).
#[target_feature(enable = "avx512f,avx2,fma")]
fn depthwise_strided_avx512(p: &Conv2d, ops: DepthwiseOperands) {
    depthwise_strided::depthwise_strided(p, ops)
}

/// See [`Kernels::gemm`]: the FMA GEMM for products of at least [`FMA_MIN_ROWS`] rows.
#[inline(always)]
pub(super) fn gemm(path: KernelPath, g: &Gemm, a: &[f32], b: &[f32], bias: Bias, c: &mut [f32]) -> bool {
    if g.m < FMA_MIN_ROWS {
        return false;
    }
    match path {
        KernelPath::Portable => return false,
        // SAFETY (both): `path` is supported by this CPU (see the module docs).
        KernelPath::Avx2Fma => unsafe { avx2::gemm(g, a, b, bias, c) },
        KernelPath::Avx512 => unsafe { avx512::gemm(g, a, b, bias, c) },
    }
    true
}

/// See [`Kernels::conv2d_blocked`]: on the FMA paths.
#[inline(always)]
pub(super) fn conv2d_blocked(
    path: KernelPath,
    p: &Conv2d,
    x: &[f32],
    w: &[f32],
    bias: Option<&[f32]>,
    y: &mut [f32],
) -> bool {
    match path {
        KernelPath::Portable => return false,
        // SAFETY (both): `path` is supported by this CPU (see the module docs).
        KernelPath::Avx2Fma => unsafe { avx2::conv2d_blocked(p, x, w, bias, y) },
        KernelPath::Avx512 => unsafe { avx512::conv2d_blocked(p, x, w, bias, y) },
    }
    true
}

/// See [`Kernels::reorder_blocked`]: on the FMA paths.
#[inline(always)]
pub(super) fn reorder_blocked(path: KernelPath, way: Reorder, plane: usize, x: &[f32], y: &mut [f32]) -> bool {
    match path {
        KernelPath::Portable => return false,
        // SAFETY (both): `path` is supported by this CPU (see the module docs).
        KernelPath::Avx2Fma => unsafe { avx2::reorder_blocked(way, plane, x, y) },
        KernelPath::Avx512 => unsafe { avx512::reorder_blocked(way, plane, x, y) },
    }
    true
}

/// See [`Kernels::plane_sums`].
#[inline(always)]
pub(super) fn plane_sums(path: KernelPath, x: &[f32], y: &mut [f32]) -> usize {
    match path {
        KernelPath::Portable => 0,
        // SAFETY (both): `path` is supported by this CPU (see the module docs).
        KernelPath::Avx2Fma => unsafe { avx2::plane_sums(x, y) },
        KernelPath::Avx512 => unsafe { avx512::plane_sums(x, y) },
    }
}

/// See [`Kernels::max_pool_square2`]: on the FMA paths, where [`max_pool::takes`] `p`.
#[inline(always)]
pub(super) fn max_pool_square2(path: KernelPath, p: &Pool2d, x: &[f32], y: &mut [f32]) -> bool {
    if !max_pool::takes(p) {
        return false;
    }
    match path {
        KernelPath::Portable => return false,
        // SAFETY (both): `path` is supported by this CPU (see the module docs).
        KernelPath::Avx2Fma => unsafe { avx2::max_pool_square2(p, x, y) },
        KernelPath::Avx512 => unsafe { avx512::max_pool_square2(p, x, y) },
    }
    true
}

/// See [`Kernels::implicit_conv`]: on the FMA paths, for at least [`FMA_MIN_ROWS`] output
/// channels per group, unless the output has at most [`NARROW_POSITIONS`] positions and the
/// scratch holds a whole im2col tile. It is faster (no copy, and with weights packed at build
/// time each tile sums all of `k` in registers) except on the last layers of an image network.
#[inline(always)]
pub(super) fn implicit_conv(path: KernelPath, ocg: usize, tile: usize, positions: usize) -> bool {
    path != KernelPath::Portable && ocg >= FMA_MIN_ROWS && (positions > NARROW_POSITIONS || tile < positions)
}

/// See [`Kernels::conv_implicit`].
#[inline(always)]
pub(super) fn conv_implicit(path: KernelPath, p: &Conv2d, ops: ConvOperands) {
    match path {
        KernelPath::Portable => unreachable!("no implicit convolution on the portable path"),
        // SAFETY (both): `path` is supported by this CPU (see the module docs).
        KernelPath::Avx2Fma => unsafe { avx2::conv_implicit(p, ops) },
        KernelPath::Avx512 => unsafe { avx512::conv_implicit(p, ops) },
    }
}

/// See [`Kernels::depthwise`].
#[inline(always)]
pub(super) fn depthwise(path: KernelPath, p: &Conv2d, ops: ConvOperands) -> bool {
    let ConvOperands { icg, ocg, x, w, bias, y } = ops;
    icg == 1 && depthwise_on(path, p, DepthwiseOperands { ocg, w, bias, planes: Planes::Split { x, y } })
}

/// See [`Kernels::depthwise_shared`].
#[inline(always)]
pub(super) fn depthwise_shared(path: KernelPath, p: &Conv2d, shared: SharedRegion, w: &[f32], bias: Bias) -> bool {
    depthwise_on(path, p, DepthwiseOperands { ocg: 1, w, bias, planes: Planes::Shared(shared) })
}

/// On AVX-512 at stride 1, the masked kernel on the planes where they are, and at stride 2 (3x3)
/// the strided one. Otherwise, on the
/// FMA paths, the channel-blocked kernel for whole blocks of channels (channel multiplier 1, 3x3
/// or 5x5; blocks of 8, or on AVX-512 of 16 and then 8), then the 3x3 plane kernels for the
/// channels left (elsewhere the direct convolution is faster or as fast). Returns false where
/// none applies.
#[inline(always)]
fn depthwise_on(path: KernelPath, p: &Conv2d, mut ops: DepthwiseOperands) -> bool {
    if path == KernelPath::Avx512 && depthwise_masked::masked_applies(p, ops.ocg, ops.planes.shared()) {
        // SAFETY: `path` is supported by this CPU (see the module docs).
        unsafe { depthwise_masked_avx512(p, ops) };
        return true;
    }
    if path == KernelPath::Avx512 && depthwise_strided::strided_applies(p, ops.ocg) {
        // SAFETY: as above.
        unsafe { depthwise_strided_avx512(p, ops) };
        return true;
    }
    let is_3x3 = p.kernel_h == 3 && p.kernel_w == 3;
    let shared = ops.planes.shared();
    let blocked = path != KernelPath::Portable && depthwise_blocked::blocked_applies(p, ops.ocg, shared);
    if path == KernelPath::Portable || !(is_3x3 || blocked && p.out_channels.is_multiple_of(8)) {
        return false;
    }
    let c0 = match (blocked, path) {
        (false, _) | (_, KernelPath::Portable) => 0,
        // SAFETY (both): `path` is supported by this CPU (see the module docs).
        (true, KernelPath::Avx2Fma) => unsafe { avx2::depthwise_blocked(p, ops.reborrow()) },
        (true, KernelPath::Avx512) => unsafe { avx512::depthwise_blocked(p, ops.reborrow()) },
    };
    if c0 < p.out_channels {
        match path {
            KernelPath::Portable => unreachable!("the portable path returned above"),
            // SAFETY (both): as above.
            KernelPath::Avx2Fma => unsafe { avx2::depthwise_3x3(p, ops, c0) },
            KernelPath::Avx512 => unsafe { avx512::depthwise_3x3(p, ops, c0) },
        }
    }
    true
}

/// See [`super::run`]: the body compiled for the path of `kernels`.
#[inline(always)]
pub(super) fn run(kernels: Kernels, call: impl KernelCall) {
    match kernels.0 {
        KernelPath::Portable => call.run(kernels),
        // SAFETY (both): `kernels` holds a path this CPU supports (see the module docs).
        KernelPath::Avx2Fma => unsafe { avx2::run(kernels, call) },
        KernelPath::Avx512 => unsafe { avx512::run(kernels, call) },
    }
}
