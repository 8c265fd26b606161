//! Kernel facts for the planner, from the kernels themselves: how many bytes of stack a kernel's
//! local arrays take on a given [`Target`] (the scratch a convolution prefers is
//! [`conv2d_scratch_len`](crate::conv2d_scratch_len), the same on every target). Every figure is
//! computed from the constants that size the arrays in the kernels' code, so the two cannot
//! drift; they are upper estimates of the arrays alone (spills, saved registers and call frames
//! not counted), assuming that every array of the code inlined into one function takes its own
//! bytes.

use crate::arch::arm_facts::{DEPTHWISE_STACK_BYTES as ARM_DSP_DEPTHWISE_BYTES, STACK_BYTES as ARM_DSP_BYTES};
use crate::arch::x86_64_facts::{
    depthwise_bytes, CONV_BLOCKED_BYTES, FMA_CONV_BYTES, FMA_MIN_ROWS, FMA_PANELS_BYTES, INT8_CONV_BYTES,
    INT8_DEPTHWISE_BYTES, PLANE_SUMS_FLOATS, REORDER_BLOCKED_BYTES,
};
use crate::conv::DIRECT_STACK_BYTES;
use crate::gemm::PORTABLE_PANELS_BYTES;
use crate::pool::{CACHED_COLUMN_TAPS, GLOBAL_PLANES};
use crate::quant::depthwise::CHANNEL_BLOCK;
use crate::resize::RESIZE_BLOCK;
use crate::softmax::SOFTMAX_STACK_BYTES;
use crate::util::layout_walk_words;
use crate::{Conv2d, KernelPath, MatMul};

/// The kernels a build may run, which decide their stack needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// The portable kernels only (every target but x86-64, e.g. Cortex-M), on a target whose
    /// `usize` takes `pointer_bytes` bytes (4 on Cortex-M).
    Portable {
        /// `size_of::<usize>()` on the target.
        pointer_bytes: usize,
    },
    /// x86-64: any of [`KernelPath::ALL`], chosen at run time, so each figure is the largest over
    /// them (a build with the crate's `portable` feature runs only the portable path, and needs
    /// no more).
    X86_64,
}

impl Target {
    /// The target this crate is compiled for.
    pub const BUILD: Target = if cfg!(target_arch = "x86_64") {
        Target::X86_64
    } else {
        Target::Portable { pointer_bytes: core::mem::size_of::<usize>() }
    };

    /// The target of a build for `target_arch` with `target_pointer_width` bits (the values of
    /// `cfg(target_arch)` and `cfg(target_pointer_width)`, e.g. Cargo's `CARGO_CFG_TARGET_ARCH`
    /// and `CARGO_CFG_TARGET_POINTER_WIDTH` in a build script).
    pub fn from_cfg(target_arch: &str, target_pointer_width: usize) -> Target {
        match target_arch {
            "x86_64" => Target::X86_64,
            _ => Target::Portable { pointer_bytes: target_pointer_width / 8 },
        }
    }

    /// The kernel paths a build for this target may run.
    pub const fn kernel_paths(self) -> &'static [KernelPath] {
        match self {
            Target::Portable { .. } => &[KernelPath::Portable],
            Target::X86_64 => &KernelPath::ALL,
        }
    }

    /// `size_of::<usize>()` on the target.
    pub const fn pointer_bytes(self) -> usize {
        match self {
            Target::Portable { pointer_bytes } => pointer_bytes,
            Target::X86_64 => 8,
        }
    }
}

/// Stack bytes of [`conv2d`](crate::conv2d)'s local arrays for convolution `p` on `t`.
///
/// Portable: the GEMM's packed panels and the direct convolution's kernel-row weights (both may
/// be inlined into one frame). x86-64: each path's body inlines the portable GEMM twice and the
/// direct convolution, and calls the FMA kernels (with at least 8 output channels per group) or
/// the 3x3 depthwise kernels (one input channel per group), whose buffers come on top.
pub const fn conv2d_stack_bytes(p: &Conv2d, t: Target) -> usize {
    // An NHWC input: the one-position im2col column on top (`conv_nhwc.rs`).
    let nhwc = if matches!(p.input, crate::ConvInput::Nhwc) { crate::conv_nhwc::NHWC_STACK_BYTES } else { 0 };
    nhwc + match t {
        Target::Portable { .. } => PORTABLE_PANELS_BYTES + DIRECT_STACK_BYTES,
        Target::X86_64 => {
            let ocg = match p.out_channels.checked_div(p.groups) {
                Some(ocg) => ocg,
                None => 0,
            };
            let fma = if ocg >= FMA_MIN_ROWS { FMA_CONV_BYTES } else { 0 };
            let one_input_channel = p.in_channels == p.groups;
            let depthwise = if one_input_channel { depthwise_bytes(p.kernel_h, p.kernel_w) } else { 0 };
            2 * PORTABLE_PANELS_BYTES + DIRECT_STACK_BYTES + max(fma, depthwise)
        }
    }
}

/// Stack bytes of [`conv2d_blocked`](crate::conv2d_blocked)'s local arrays on `t`: none on the
/// portable path (scalar sums); on x86-64 the FMA kernels' (the depthwise stage, 32 KiB, and
/// their vectors).
pub const fn conv2d_blocked_stack_bytes(t: Target) -> usize {
    match t {
        Target::Portable { .. } => 0,
        Target::X86_64 => CONV_BLOCKED_BYTES,
    }
}

/// Stack bytes of [`conv2d_winograd`](crate::conv2d_winograd)'s local arrays on `t`: its
/// transforms' tiles (at most two 4x4 tiles of one channel block's lanes live at once, 2 KiB, taken
/// as 4 KiB) and the blocked kernels' it calls.
pub const fn conv2d_winograd_stack_bytes(t: Target) -> usize {
    4096 + conv2d_blocked_stack_bytes(t)
}

/// Stack bytes of [`max_pool2d_blocked`](crate::max_pool2d_blocked)'s local arrays on any target:
/// one block's running maxima.
pub const fn max_pool2d_blocked_stack_bytes(_: Target) -> usize {
    core::mem::size_of::<[f32; crate::CHANNEL_BLOCK]>()
}

/// Stack bytes of [`global_pool_blocked`](crate::global_pool_blocked)'s local arrays on any
/// target: the running sums of the blocks it adds at once.
pub const fn global_pool_blocked_stack_bytes(_: Target) -> usize {
    core::mem::size_of::<[[f32; crate::CHANNEL_BLOCK]; crate::blocked_pool::GROUP]>()
}

/// Stack bytes of [`to_blocked`](crate::to_blocked)'s and [`from_blocked`](crate::from_blocked)'s
/// local arrays on `t`: none on the portable path; on x86-64 a transpose's vectors.
pub const fn reorder_blocked_stack_bytes(t: Target) -> usize {
    match t {
        Target::Portable { .. } => 0,
        Target::X86_64 => REORDER_BLOCKED_BYTES,
    }
}

/// Stack bytes of [`matmul`](crate::matmul)'s local arrays for product `p` on `t`: the portable
/// GEMM's packed panels, and on x86-64, for products of at least 8 rows, the FMA kernels' panels
/// on top.
pub const fn matmul_stack_bytes(p: &MatMul, t: Target) -> usize {
    match t {
        Target::Portable { .. } => PORTABLE_PANELS_BYTES,
        Target::X86_64 if p.m >= FMA_MIN_ROWS => PORTABLE_PANELS_BYTES + FMA_PANELS_BYTES,
        Target::X86_64 => PORTABLE_PANELS_BYTES,
    }
}

/// Stack bytes of [`max_pool2d`](crate::max_pool2d)'s and [`avg_pool2d`](crate::avg_pool2d)'s
/// local arrays on `t`: the accumulators of the planes a global pooling folds side by side; on
/// x86-64 also the row-wise driver's cached column taps (three words each) and the transposed
/// block of planes whose sums a global average takes in vectors.
pub const fn pool2d_stack_bytes(t: Target) -> usize {
    let folds = core::mem::size_of::<[f32; GLOBAL_PLANES]>();
    match t {
        Target::Portable { .. } => folds,
        Target::X86_64 => folds + CACHED_COLUMN_TAPS * 3 * 8 + PLANE_SUMS_FLOATS * 4,
    }
}

/// Stack bytes of [`softmax`](crate::softmax)'s and [`log_softmax`](crate::log_softmax)'s local
/// arrays (any target): the running maxima and sums of one block of positions.
pub const fn softmax_stack_bytes(_t: Target) -> usize {
    SOFTMAX_STACK_BYTES
}

/// Stack bytes of the local arrays of [`resize_nearest`](crate::resize_nearest) and
/// [`resize_linear`](crate::resize_linear) on `t`: the larger, linear's two source indices and
/// one weight per output column of a block.
pub const fn resize_stack_bytes(t: Target) -> usize {
    RESIZE_BLOCK * (2 * t.pointer_bytes() + 4)
}

/// Stack bytes of the local arrays of the rank-generic kernels on `t` (the broadcast binaries,
/// reductions, [`copy_strided`](crate::copy_strided), [`pad`](crate::pad),
/// [`select_cmp`](crate::select_cmp)): the largest, `select_cmp`'s walk over five stride sets (the
/// reductions walk two layouts of two and one set, one word fewer).
pub const fn rank_generic_stack_bytes(t: Target) -> usize {
    layout_walk_words(5) * t.pointer_bytes()
}

/// Stack bytes of the local arrays of the int8 / uint8 depthwise convolution
/// ([`quant::depthwise_conv2d`](crate::quant::depthwise_conv2d)) on `t`: a block of `i32`
/// accumulators and input offsets, and on a 32-bit portable target, which may be an Arm core with
/// the DSP extension, its kernel's widened input rows; on x86-64, the SIMD kernel's staged rows
/// and outputs. The broadcast add / sub / mul and pad of
/// [`quant`](crate::quant) walk the same layouts as the f32 ones ([`rank_generic_stack_bytes`]), the batched matmul keeps
/// its batch index ([`quant_matmul_stack_bytes`]), the convolution the Arm DSP kernels' windows
/// ([`quant_conv2d_stack_bytes`]), the other int8 kernels no arrays.
pub const fn quant_depthwise_stack_bytes(t: Target) -> usize {
    let arch = match t {
        Target::Portable { pointer_bytes: 4 } => ARM_DSP_DEPTHWISE_BYTES,
        Target::Portable { .. } => 0,
        Target::X86_64 => INT8_DEPTHWISE_BYTES,
    };
    CHANNEL_BLOCK * (4 + t.pointer_bytes()) + arch
}

/// Stack bytes of the local arrays of the int8 / uint8 convolution
/// ([`quant::conv2d`](crate::quant::conv2d)) on `t`: none in the portable kernels; on a 32-bit
/// portable target, which may be an Arm core with the DSP extension, the two widened windows of
/// its kernels; on x86-64, the SIMD kernel's staged rows, packed panel, tap offsets and starting
/// accumulators.
pub const fn quant_conv2d_stack_bytes(t: Target) -> usize {
    match t {
        Target::Portable { pointer_bytes: 4 } => ARM_DSP_BYTES,
        Target::Portable { .. } => 0,
        Target::X86_64 => INT8_CONV_BYTES,
    }
}

/// Stack bytes of the local arrays of [`quant::matmul`](crate::quant::matmul) on `t`: the batch
/// index and one copy of a batch stride set.
pub const fn quant_matmul_stack_bytes(t: Target) -> usize {
    2 * 4 * t.pointer_bytes()
}

/// `max(a, b)` in a `const fn`.
const fn max(a: usize, b: usize) -> usize {
    if a > b {
        a
    } else {
        b
    }
}

/// The elementwise kernels written by hand with an in-place variant (the others come from the
/// kernel-defining macros' own tables, so their names cannot drift).
const OTHER_IN_PLACE: &[(&str, &str)] = &[
    ("clip", "clip_in_place"),
    ("leaky_relu", "leaky_relu_in_place"),
    ("elu", "elu_in_place"),
    ("selu", "selu_in_place"),
    ("hard_sigmoid", "hard_sigmoid_in_place"),
    ("celu", "celu_in_place"),
    ("pow_scalar", "pow_scalar_in_place"),
    ("cumsum", "cumsum_in_place"),
    ("add_activated", "add_activated_in_place"),
];

/// The name of `kernel`'s in-place variant (its output written over its first operand, same
/// arguments without that operand), if it has one: e.g. `relu` -> `relu_in_place`; `pow` has none.
pub fn in_place_variant(kernel: &str) -> Option<&'static str> {
    [crate::unary::UNARY_IN_PLACE, crate::binary::BINARY_IN_PLACE, OTHER_IN_PLACE]
        .into_iter()
        .flatten()
        .find(|(name, _)| *name == kernel)
        .map(|&(_, variant)| variant)
}
