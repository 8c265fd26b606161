//! Quantized integer kernels, bit-exact with TensorFlow Lite (Micro)'s integer arithmetic, and the
//! build-time functions that prepare their parameters.
//!
//! Activations are `i8` or `u8` ([`QuantElem`]; every kernel is generic over it and
//! monomorphised only for the types a model uses), or `i16` in TFLite's 16x8 mode ([`QuantInt`]:
//! the kernels whose arithmetic does not depend on the width also take `i16`; the others have
//! `_s16` variants, module `s16`), weights `i8` (uint8 weights convert exactly
//! with [`weights_u8_to_i8`]), biases `i32`. Requantization is TFLite's: a Q0.31 multiplier and a
//! shift ([`Requant`], computed from float scales by [`quantize_multiplier`] exactly as TFLite's
//! `QuantizeMultiplier`), applied by [`multiply_by_quantized_multiplier`] (double rounding, the
//! default of TFLite Micro and CMSIS-NN: see [`fixedpoint`]). Fused activations are output clamps
//! ([`activation_range`]). Parameter structs are plain `Copy` structs with public fields;
//! per-channel constants (folded biases, multipliers, shifts: [`ChannelQuant`]) and tables are
//! slices, so they can live in the weight blob.
//!
//! # Kernels (run time)
//!
//! - Convolution: [`conv2d`] ([`Conv2d`], [`conv2d_scratch_len`]; groups, dilation, stride,
//!   asymmetric padding with the input zero point, 1-D as `in_h = 1`, a weight zero point) and
//!   [`depthwise_conv2d`] (channel multiplier). Activations addressed by [`ImageStrides`]: NHWC
//!   and NCHW alike. [`conv2d_acc`] writes the `i32` accumulators instead (ONNX ConvInteger, and
//!   MatMulInteger by a constant as a 1x1 convolution).
//! - Matrix products: [`fully_connected`] ([`FullyConnected`], constant weights) and [`matmul`]
//!   ([`MatMul`], two activations with zero points, batched and strided; into `i32` accumulators
//!   for ONNX MatMulInteger, [`MatMulOut`]).
//! - Elementwise with rescaling and broadcasting ([`Broadcast`](crate::Broadcast)): [`add`],
//!   [`sub`] ([`Add`]), [`mul`] ([`Mul`]), and their `_in_place` variants.
//! - Pooling: [`max_pool2d`], [`avg_pool2d`] ([`Pool2d`]; TFLite's rounding) and
//!   [`avg_pool2d_half_even`] (onnxruntime's); mean over axes: [`mean`] ([`Mean`]).
//! - [`softmax`] ([`Softmax`]): TFLite's int8 algorithm.
//! - [`layer_norm`] ([`LayerNorm`]): ONNX LayerNormalization in integer arithmetic (no TFLite
//!   counterpart; rounded as onnxruntime's float evaluation of the QDQ group).
//! - [`lut`], [`lut_in_place`]: 256-entry tables (logistic, tanh, hard-swish, leaky-relu, ...).
//! - Conversions: [`requantize`] ([`Requantize`]), [`quantize`] / [`dequantize`]
//!   ([`Quantization`], [`Rounding`]); [`pad`] ([`Pad`]).
//! - TensorFlow Lite's hybrid convolution (float activations, int8 weights quantizing the input
//!   when it runs): [`hybrid_conv2d`] ([`HybridConv2d`], [`symmetric_quantize`]).
//! - TFLite's 16x8 mode (`i16` activations, `i64` biases): [`conv2d_s16`],
//!   [`depthwise_conv2d_s16`], [`fully_connected_s16`] ([`ChannelQuantS16`]), [`softmax_s16`]
//!   ([`SoftmaxS16`]), [`leaky_relu_s16`] ([`LeakyReluS16`]); pooling, mean, [`add`] (with [`add_scaling_s16`]), [`requantize`] and
//!   [`pad`] are the generic kernels above.
//!
//! # Build-time helpers (no `std`; planner-core calls them)
//!
//! - Multipliers: [`quantize_multiplier`], [`conv_requant`], [`fully_connected_requant`],
//!   [`rescale_requant`], [`add_scaling`], [`add_scaling_s16`], [`sub_scaling`], [`sub_scaling_s16`], [`mul_requant`], [`mean_requant`],
//!   [`softmax_scaling`]; clamps: [`activation_range`].
//! - Weights: [`pack_conv_weights`] (OIHW to OHWI), [`pack_depthwise_weights`] (to 1HWO),
//!   [`pack_fully_connected_weights`] (`[in, out]` to `[out, in]`), [`weights_u8_to_i8`],
//!   [`fold_bias`], [`fold_depthwise_bias`] (the input zero point folded into the bias).
//! - Tables: [`logistic_table`], [`tanh_table`], [`hard_swish_table`], [`leaky_relu_table`],
//!   [`relu_table`], [`relu6_table`] (TFLite Micro's integer algorithms), [`table_from_fn`] (TFLite's float `LUTPopulate`);
//!   [`lut_s16`], [`softmax_s16_tables`] (TFLite's interpolated int16 tables); [`bias_s16_words`].

mod binary;
mod channel_quant;
mod conv;
mod convert;
pub(crate) mod depthwise;
mod elem;
pub mod fixedpoint;
pub mod gemmlowp;
mod hybrid;
mod layer_norm;
mod lut;
mod matmul;
mod multiplier;
mod pad;
mod pool;
mod reduce;
mod s16;
mod softmax;
mod strides;
mod weights;

pub use binary::{
    add, add_in_place, add_scaling, add_scaling_s16, mul, mul_in_place, mul_requant, sub, sub_in_place, sub_scaling,
};
pub use binary::{sub_scaling_s16, Add, AddScaling, Mul};
pub use channel_quant::ChannelQuant;
pub use conv::{conv2d, conv2d_acc, conv2d_scratch_len, Conv2d};
pub use convert::{dequantize, dequantize_value, quantize, quantize_value, requantize};
pub use convert::{ConvertElem, Quantization, Requantize, Rounding};
pub use depthwise::depthwise_conv2d;
pub use elem::{QuantElem, QuantInt};
pub use fixedpoint::{multiply_by_quantized_multiplier, multiply_by_quantized_multiplier_half_even, RequantRounding};
pub use hybrid::{hybrid_conv2d, hybrid_conv2d_scratch_len, symmetric_quantize, HybridConv2d};
pub use layer_norm::{layer_norm, layer_norm_epsilon, LayerNorm};
pub use lut::{hard_swish_table, leaky_relu_table, logistic_table, lut, lut_in_place, relu6_table, relu_table};
pub use lut::{table_from_fn, tanh_table};
pub use matmul::{fully_connected, matmul, FullyConnected, MatMul, MatMulOut};
pub(crate) use multiplier::input_radius;
pub use multiplier::{
    activation_range, conv_requant, fully_connected_requant, quantize_multiplier, rescale_requant, Requant,
};
pub use pad::{pad, Pad};
pub use pool::{avg_pool2d, avg_pool2d_half_even, max_pool2d, Pool2d};
pub use reduce::{mean, mean_requant, Mean};
pub use s16::{bias_s16_words, conv2d_s16, depthwise_conv2d_s16, fully_connected_s16, lut_s16, lut_s16_lookup};
pub use s16::{leaky_relu_s16, LeakyReluS16, LUT_S16_LEN};
pub use s16::{multiply_by_quantized_multiplier_i64, softmax_s16, softmax_s16_tables, ChannelQuantS16, SoftmaxS16};
pub use softmax::{softmax, softmax_output, softmax_scaling, Softmax, SoftmaxScaling};
pub use strides::ImageStrides;
pub use weights::{
    fold_bias, fold_depthwise_bias, pack_conv_weights, pack_depthwise_weights, pack_fully_connected_weights,
    weights_u8_to_i8,
};
