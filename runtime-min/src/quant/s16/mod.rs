//! TFLite's 16x8 mode: `i16` activations (symmetric, zero point 0), `i8` weights (per channel),
//! `i64` biases, bit-exact with TensorFlow Lite Micro's reference kernels.
//!
//! Only the operators whose arithmetic differs from the 8-bit one live here: convolutions and
//! fully connected layers accumulate in `i64` and requantize with TFLite's 64-bit
//! `MultiplyByQuantizedMultiplier` ([`ChannelQuantS16`]); softmax is TFLite's table-driven int16
//! algorithm ([`softmax_s16`], tables from [`lut_s16`]); LEAKY_RELU, a 256-entry table on 8 bits,
//! is elementwise arithmetic ([`leaky_relu_s16`]). Pooling, mean, add (with
//! [`add_scaling_s16`](super::add_scaling_s16)), requantization and padding are the generic
//! kernels of [`super`] over [`QuantInt`](super::QuantInt).

mod conv;
mod leaky_relu;
mod lut;
mod requant;
mod softmax;

pub use conv::{conv2d_s16, depthwise_conv2d_s16, fully_connected_s16};
pub use leaky_relu::{leaky_relu_s16, LeakyReluS16};
pub use lut::{lut_s16, lut_s16_lookup, LUT_S16_LEN};
pub use requant::{bias_s16_words, multiply_by_quantized_multiplier_i64, ChannelQuantS16};
pub use softmax::{softmax_s16, softmax_s16_tables, SoftmaxS16};
