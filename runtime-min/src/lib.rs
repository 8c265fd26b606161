//! `no_std`, allocation-free `f32` kernels called by the straight-line code
//! that sramfit generates.
//!
//! All tensors are `f32` slices in row-major (NCHW) layout, carved out of one
//! statically planned arena. Kernels never allocate; the few that need
//! temporary memory take a caller-provided `scratch` slice whose length is
//! given by a `const fn *_scratch_len`. Every kernel is a separate,
//! non-generic `pub fn`, so the linker drops the ones a model never calls.
//! Shape parameters are plain `Copy` structs with public fields (or slices of
//! at most [`MAX_RANK`] axes), so generated code can write them as `const`
//! struct literals. Kernels assume correctly sized slices; wrong sizes panic
//! (never UB: the crate denies `unsafe` outside its architecture modules,
//! `arch/x86_64`, whose intrinsics' loads and stores take slices, and
//! `arch/arm`, whose `asm!` reads only the slices it is given).
//!
//! Semantics follow ONNX unless stated otherwise.
//!
//! # Kernel families
//!
//! - **Fused activation**: [`Activation`] (None, Relu, Clip, LeakyRelu,
//!   HardSwish, Sigmoid, Tanh), applied after the bias by conv / matmul.
//! - **Convolution**: [`conv2d`] ([`Conv2d`], [`conv2d_scratch_len`]; groups,
//!   depthwise, dilation, asymmetric padding, 1-D as `in_h = 1`) and
//!   [`conv_transpose2d`] ([`ConvTranspose2d`]); [`conv2d_overlapped`] for a
//!   depthwise one whose output overlaps its input in one region, as
//!   [`conv2d_plane_order`] allows (the overlap contract, `overlap.rs`; int8:
//!   [`quant_depthwise_conv2d_overlapped`], [`quant_depthwise_plane_order`]; NHWC rows:
//!   [`quant_conv2d_rows_overlapped`], [`quant_conv2d_row_order`]; pooling:
//!   [`pool2d_overlapped`], [`quant_pool2d_overlapped`]).
//! - **Channel-blocked activations**: [`conv2d_blocked`] (pointwise, dense and 3x3
//!   depthwise layers, [`conv2d_blocked_applies`]; a first layer's NCHW input read as it is,
//!   [`reads_nchw`]), [`max_pool2d_blocked`] ([`max_pool2d_blocked_applies`]) and
//!   [`global_pool_blocked`] ([`GlobalPool`]) on tensors
//!   stored in blocks of [`CHANNEL_BLOCK`] channels ([`blocked_index`], [`to_blocked`],
//!   [`from_blocked`]).
//! - **Matrix multiplication**: [`matmul`] ([`MatMul`]): batched, strided
//!   (transposes and batch broadcast via strides), with alpha, bias and a
//!   fused activation (ONNX MatMul and Gemm).
//! - **Broadcast binaries** ([`Broadcast`]): [`add`], [`sub`], [`mul`],
//!   [`div`], [`max`], [`min`], [`pow`], [`fmod`], [`prelu`], and in-place
//!   [`add_in_place`], [`sub_in_place`], [`mul_in_place`], [`div_in_place`],
//!   [`max_in_place`], [`min_in_place`].
//! - **Unary** (`name(x, y)` and `name_in_place(xy)`): [`relu`],
//!   [`sigmoid`], [`tanh`], [`exp`], [`ln`], [`sqrt`], [`rsqrt`],
//!   [`reciprocal`], [`abs`], [`neg`], [`square`], [`erf`], [`floor`],
//!   [`ceil`], [`round`], [`sin`], [`cos`], [`softplus`], [`softsign`],
//!   [`hard_swish`], [`gelu`]; parameterised [`clip`], [`leaky_relu`],
//!   [`elu`], [`selu`], [`hard_sigmoid`], [`celu`], [`pow_scalar`]; and
//!   [`copy`], [`fill`].
//! - **Pooling**: [`max_pool2d`], [`avg_pool2d`] ([`Pool2d`]; ceil mode,
//!   dilation, `count_include_pad`, 1-D and 3-D).
//! - **Reductions** ([`Reduce`], rank-generic): [`reduce_sum`],
//!   [`reduce_mean`], [`reduce_max`], [`reduce_min`], [`reduce_prod`],
//!   [`reduce_sum_square`], [`reduce_mean_square`], [`reduce_l1`], [`reduce_l2`],
//!   [`reduce_log_sum_exp`] (global pooling = mean / max over H, W).
//! - **Cumulative sum**: [`cumsum`], [`cumsum_in_place`] ([`CumSum`]).
//! - **Softmax**: [`softmax`], [`log_softmax`] over the middle axis of an
//!   `[outer, axis, inner]` view.
//! - **Data movement**: [`copy_strided`] ([`Strided`]; Transpose, Slice,
//!   Concat, Split, Expand, Tile, DepthToSpace, SpaceToDepth, constant
//!   Gather), [`pad`] ([`Pad`], [`PadMode`]: constant, reflect, edge, wrap,
//!   negative pads crop), [`gather`].
//! - **Normalisation**: [`channel_affine`] / [`channel_affine_in_place`]
//!   (folded BatchNormalization), [`instance_norm`], [`layer_norm`],
//!   [`rms_norm`], [`lrn`].
//! - **Select**: [`select_cmp`] ([`Select`], [`Cmp`]): `where(cmp(a, b), t,
//!   f)` with broadcasting (Elu, Selu, PRelu as tract expands them).
//! - **Resize**: [`resize_nearest`], [`resize_linear`] ([`Resize`],
//!   [`CoordMode`], [`NearestMode`]).
//! - **Quantized (int8 / uint8)**: the [`quant`] module, TFLite's integer
//!   arithmetic bit for bit.
//!
//! # Kernel paths and facts
//!
//! On x86-64, [`conv2d`] and [`matmul`] run FMA micro-kernels (AVX2 + FMA or
//! AVX-512F) when the CPU has them, detected at run time whatever flags the
//! crate was built with; elsewhere, and on older CPUs, the portable kernels
//! ([`KernelPath`], [`kernel_path`], [`force_kernel_path`]; the `portable`
//! feature keeps the portable path everywhere). The AVX2 and AVX-512 paths give
//! the same bits. On Arm cores with the DSP extension (`thumbv7em`, or `+dsp`)
//! the int8 convolution, depthwise convolution and fully connected layers of
//! [`quant`] run on `SXTB16` / `SMLAD` kernels chosen at build time, with the
//! portable kernels' bits. The stack the kernels' local arrays take on a build's
//! [`Target`] is stated by `const fn`s for the planner
//! ([`conv2d_stack_bytes`], [`matmul_stack_bytes`], ...).
#![no_std]
#![deny(unsafe_code)]
#![deny(missing_docs)]

mod activation;
mod arch;
mod binary;
mod blocked;
mod blocked_pool;
mod conv;
mod conv_nhwc;
mod conv_shape;
mod cumsum;
mod dtype;
mod epilogue;
mod facts;
mod gemm;
mod norm;
mod overlap;
mod pool;
pub mod quant;
mod reduce;
mod resize;
mod select;
mod softmax;
mod strided;
mod unary;
mod util;
mod winograd;

pub use activation::Activation;
pub use arch::{
    detected_kernel_path, force_kernel_path, kernel_path, quant_kernels, KernelPath, UnsupportedKernelPath,
};
pub use binary::*;
pub use blocked::{
    blocked_index, conv2d_blocked, conv2d_blocked_applies, from_blocked, reads_nchw, takes_panels, to_blocked,
    CHANNEL_BLOCK,
};
pub use blocked_pool::{global_pool_blocked, max_pool2d_blocked, max_pool2d_blocked_applies, GlobalPool};
pub use conv::*;
pub use conv_shape::{Conv2d, ConvInput, ConvWeights, PANEL};
pub use cumsum::*;
pub use dtype::DType;
pub use facts::*;
pub use gemm::{matmul, MatMul};
pub use norm::*;
pub use overlap::{
    conv2d_overlapped, conv2d_plane_order, pool2d_overlapped, pool2d_plane_order, quant_conv2d_row_order,
    quant_conv2d_rows_overlapped, quant_depthwise_conv2d_overlapped, quant_depthwise_plane_order,
    quant_pool2d_overlapped, quant_pool2d_plane_order, PlaneOrder, QUANT_OVERLAP_WEIGHTS,
};
pub use pool::*;
pub use reduce::*;
pub use resize::*;
pub use select::*;
pub use softmax::*;
pub use strided::*;
pub use unary::*;
pub use winograd::{
    conv2d_winograd, conv2d_winograd_scratch_len, winograd_applies, winograd_kernel, winograd_weight_index,
    winograd_weights_len, WINOGRAD_MIN_CHANNELS, WINOGRAD_MIN_TILES, WINOGRAD_TILES,
};

/// Maximum tensor rank supported by the rank-generic kernels
/// ([`Broadcast`], [`Reduce`], [`Strided`], [`Pad`]).
pub const MAX_RANK: usize = 8;
