//! The int8 / uint8 kernels of x86-64: [`crate::quant::conv2d`] (staged input rows, packed
//! panels, register tiles: [`conv`]), [`crate::quant::depthwise_conv2d`] ([`depthwise`]) and
//! [`crate::quant::fully_connected`] ([`fully_connected`]), written once over the 4-way byte dot
//! product [`dot::Dot4`] (the depthwise one also 16 channels per vector: [`depthwise_channels`]),
//! with add / sub of same-shape tensors ([`elementwise`]), 2x2 max pooling ([`pool`]) and ONNX's
//! quantization of float inputs ([`convert`]), compiled into two sets of entry points: AVX2
//! (`VPMADDWD` on widened bytes; the [`KernelPath::Avx2Fma`] path, and the [`KernelPath::Avx512`] path on CPUs without
//! VNNI) and AVX-512 VNNI (`VPDPBUSD` on 256-bit vectors, with AVX512BW / VL: the AVX-512 path
//! where the CPU has them, detected once). Both give the portable kernels' bits: the sums are
//! exact integer sums and the output stage is the portable one on eight lanes ([`requant`]).
//!
//! Each dispatch function returns whether its kernel ran: not on the portable path, and not for
//! the layers its kernel does not take (asymmetric weights, windows over [`INT8_MAX_TAPS`] taps,
//! rows too wide for the staging buffer, fewer than 32 input features), which run the portable
//! kernel. The `unsafe` calls of the entry points rest on the [`KernelPath`] being one that
//! detection found supported (see [`super`]) and, for the VNNI ones, on [`int8_vnni`].
//!
//! [`INT8_MAX_TAPS`]: crate::arch::x86_64_facts::INT8_MAX_TAPS

mod band;
mod conv;
mod convert;
mod depthwise;
mod depthwise_channels;
mod dot;
mod elementwise;
mod fully_connected;
mod pool;
mod requant;
mod vector;

use super::detect::int8_vnni;
use crate::arch::path::KernelPath;
use crate::quant::Rounding;
use crate::quant::{Add, ChannelQuant, Conv2d, ConvertElem, FullyConnected, Pool2d, QuantElem, QuantInt, Quantization};
use crate::Broadcast;
use dot::{Avx2, Vnni};

/// The entry points of one instruction set: each a kernel of this module, monomorphised for the
/// dot product `$dot` (convolution tiles of `$mr` output channels) and compiled with `$features`.
macro_rules! int8_entry_points {
    ($isa:ident, $dot:ty, $mr:literal, $features:literal) => {
        /// int8 entry points compiled with
        #[doc = $features]
        mod $isa {
            use super::*;

            /// [`conv::conv2d`].
            #[target_feature(enable = $features)]
            pub(super) fn conv2d<T: QuantElem>(p: &Conv2d, x: &[T], w: &[i8], q: &ChannelQuant, y: &mut [T]) {
                conv::conv2d::<$dot, T, $mr>(p, x, w, q, y)
            }

            /// [`depthwise::depthwise_conv2d`].
            #[target_feature(enable = $features)]
            pub(super) fn depthwise_conv2d<T: QuantElem>(p: &Conv2d, x: &[T], w: &[i8], q: &ChannelQuant, y: &mut [T]) {
                depthwise::depthwise_conv2d(p, x, w, q, y)
            }

            /// [`depthwise_channels::depthwise_conv2d`].
            #[target_feature(enable = $features)]
            pub(super) fn depthwise_channels<T: QuantElem>(
                p: &Conv2d,
                x: &[T],
                w: &[i8],
                q: &ChannelQuant,
                y: &mut [T],
            ) {
                depthwise_channels::depthwise_conv2d(p, x, w, q, y)
            }

            /// [`fully_connected::fully_connected`].
            #[target_feature(enable = $features)]
            pub(super) fn fully_connected<T: QuantElem>(
                p: &FullyConnected,
                x: &[T],
                w: &[i8],
                q: &ChannelQuant,
                y: &mut [T],
            ) {
                fully_connected::fully_connected::<$dot, T>(p, x, w, q, y)
            }

            /// [`pool::max_pool2d`].
            #[target_feature(enable = $features)]
            pub(super) fn max_pool2d<T: QuantInt>(p: &Pool2d, x: &[T], y: &mut [T]) {
                pool::max_pool2d(p, x, y)
            }

            /// [`elementwise::add_sub`].
            #[target_feature(enable = $features)]
            pub(super) fn add_sub<T: QuantInt>(p: &Add, len: usize, ab: (&[T], &[T]), y: &mut [T], subtract: bool) {
                elementwise::add_sub(p, len, ab, y, subtract)
            }

            /// [`elementwise::add_sub_in_place`].
            #[target_feature(enable = $features)]
            pub(super) fn add_sub_in_place<T: QuantInt>(p: &Add, len: usize, acc: &mut [T], b: &[T], subtract: bool) {
                elementwise::add_sub_in_place(p, len, acc, b, subtract)
            }

            /// [`convert::quantize`].
            #[target_feature(enable = $features)]
            pub(super) fn quantize<T: ConvertElem>(p: &Quantization, x: &[f32], y: &mut [T]) {
                convert::quantize(p, x, y)
            }
        }
    };
}

// Tiles: 4 channels x 2 vectors on both. AVX2's dot product holds its operands in two registers
// each (16 registers). With VNNI, 8 x 2 tiles (16 accumulators of the 32 registers) made LLVM
// spill accumulators inside the tile loop and ran 10-15% slower (`quant_perf`).
int8_entry_points!(avx2, Avx2, 4, "avx2,fma");
int8_entry_points!(vnni, Vnni, 4, "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma");

/// The int8 kernels a path runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Int8Kernels {
    /// None: the portable kernels run.
    Portable,
    /// The AVX2 entry points.
    Avx2,
    /// The AVX-512 VNNI entry points.
    Vnni,
}

impl Int8Kernels {
    /// The int8 kernels of `path` on this CPU.
    #[inline(always)]
    fn of(path: KernelPath) -> Int8Kernels {
        match path {
            KernelPath::Portable => Int8Kernels::Portable,
            KernelPath::Avx2Fma => Int8Kernels::Avx2,
            KernelPath::Avx512 if int8_vnni() => Int8Kernels::Vnni,
            KernelPath::Avx512 => Int8Kernels::Avx2,
        }
    }
}

/// See [`crate::arch::quant_kernels`].
pub(in crate::arch) fn quant_kernels(path: KernelPath) -> &'static str {
    match Int8Kernels::of(path) {
        Int8Kernels::Portable => "portable",
        Int8Kernels::Avx2 => "avx2",
        Int8Kernels::Vnni => "avx512-vnni",
    }
}

/// Returns false if `$takes` is false or the path has no int8 kernels, else runs
/// `$kernel($args)` on the path's entry points and returns true.
macro_rules! dispatch {
    ($path:expr, $takes:expr, $kernel:ident($($arg:expr),*)) => {{
        if !$takes {
            return false;
        }
        match Int8Kernels::of($path) {
            Int8Kernels::Portable => return false,
            // SAFETY (both): the path is supported by this CPU, and VNNI only where `int8_vnni`
            // found it (see the module docs).
            Int8Kernels::Avx2 => unsafe { avx2::$kernel($($arg),*) },
            Int8Kernels::Vnni => unsafe { vnni::$kernel($($arg),*) },
        }
        true
    }};
}

/// See [`crate::arch::quant_conv2d`].
#[inline(always)]
pub(in crate::arch) fn quant_conv2d<T: QuantElem>(
    path: KernelPath,
    p: &Conv2d,
    x: &[T],
    w: &[i8],
    q: &ChannelQuant,
    y: &mut [T],
) -> bool {
    dispatch!(path, conv::takes::<T>(p), conv2d(p, x, w, q, y))
}

/// See [`crate::arch::quant_depthwise_conv2d`].
#[inline(always)]
pub(in crate::arch) fn quant_depthwise_conv2d<T: QuantElem>(
    path: KernelPath,
    p: &Conv2d,
    x: &[T],
    w: &[i8],
    q: &ChannelQuant,
    y: &mut [T],
) -> bool {
    if depthwise_channels::takes::<T>(p) {
        dispatch!(path, true, depthwise_channels(p, x, w, q, y))
    } else {
        dispatch!(path, depthwise::takes::<T>(p), depthwise_conv2d(p, x, w, q, y))
    }
}

/// See [`crate::arch::quant_fully_connected`].
#[inline(always)]
pub(in crate::arch) fn quant_fully_connected<T: QuantElem>(
    path: KernelPath,
    p: &FullyConnected,
    x: &[T],
    w: &[i8],
    q: &ChannelQuant,
    y: &mut [T],
) -> bool {
    dispatch!(path, fully_connected::takes(p), fully_connected(p, x, w, q, y))
}

/// See [`crate::arch::quant_max_pool2d`].
#[inline(always)]
pub(in crate::arch) fn quant_max_pool2d<T: QuantInt>(path: KernelPath, p: &Pool2d, x: &[T], y: &mut [T]) -> bool {
    dispatch!(path, pool::takes::<T>(p), max_pool2d(p, x, y))
}

/// See [`crate::arch::quant_add_sub`].
#[inline(always)]
pub(in crate::arch) fn quant_add_sub<T: QuantInt>(
    path: KernelPath,
    (p, shape): (&Add, &Broadcast),
    ab: (&[T], &[T]),
    y: &mut [T],
    subtract: bool,
) -> bool {
    let len = elementwise::same_shape(shape);
    let takes = size_of::<T>() == 1 && len.is_some() && (0..32).contains(&p.scaling.left_shift);
    dispatch!(path, takes, add_sub(p, len.unwrap_or(0), ab, y, subtract))
}

/// See [`crate::arch::quant_add_sub_in_place`].
#[inline(always)]
pub(in crate::arch) fn quant_add_sub_in_place<T: QuantInt>(
    path: KernelPath,
    (p, shape): (&Add, &Broadcast),
    acc: &mut [T],
    b: &[T],
    subtract: bool,
) -> bool {
    let len = elementwise::same_shape(shape);
    let takes = size_of::<T>() == 1 && len.is_some() && (0..32).contains(&p.scaling.left_shift);
    dispatch!(path, takes, add_sub_in_place(p, len.unwrap_or(0), acc, b, subtract))
}

/// See [`crate::arch::quant_quantize`].
#[inline(always)]
pub(in crate::arch) fn quant_quantize<T: ConvertElem>(
    path: KernelPath,
    p: &Quantization,
    rounding: Rounding,
    x: &[f32],
    y: &mut [T],
) -> bool {
    dispatch!(path, convert::takes(p, rounding), quantize(p, x, y))
}
