//! Build-time computation of TFLite's quantized multipliers from float scales (no `std`, so
//! planner-core and generated `const`s can both call it), and of fused-activation clamps.

use super::fixedpoint::multiply_by_quantized_multiplier;
use super::QuantInt;

/// A real multiplier in TFLite's representation: `multiplier * 2^(shift - 31)`, with
/// `multiplier` a Q0.31 significand in `[2^30, 2^31)` (negative for a negative real, 0 for a real
/// that is 0 or below about `2^-31`) and `shift` the power of two (positive: left shift).
/// TFLite's `(quantized_multiplier, shift)` pair, CMSIS-NN's `(multiplier, shift)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Requant {
    /// Q0.31 significand.
    pub multiplier: i32,
    /// Power of two: positive shifts left, negative right; `-31..=31` for [`Requant::apply`].
    pub shift: i32,
}

impl Requant {
    /// `x` times this multiplier, rounded: [`multiply_by_quantized_multiplier`].
    #[inline(always)]
    pub const fn apply(self, x: i32) -> i32 {
        multiply_by_quantized_multiplier(x, self.multiplier, self.shift)
    }
}

/// `frexp` of a finite `real`, with the fraction rounded to 31 bits as TFLite does it:
/// `(round(|q| * 2^31), e)` where `real = q * 2^e`, `|q|` in `[1/2, 1)`, the rounding half away
/// from zero (`TfLiteRound`). Zero and subnormals (below `2^-1022`) give `(0, 0)`.
/// The rounded fraction may be `2^31`.
const fn frexp_q31(real: f64) -> (i64, i32) {
    assert!(real.is_finite(), "quantized multiplier of a non-finite scale");
    let magnitude = real.to_bits() & !(1u64 << 63);
    let biased_exponent = (magnitude >> 52) as i32;
    if biased_exponent == 0 {
        return (0, 0);
    }
    // |real| = mantissa * 2^(biased_exponent - 1075) = (mantissa / 2^53) * 2^(biased_exponent - 1022).
    let mantissa = (magnitude & ((1 << 52) - 1)) | (1 << 52);
    (((mantissa + (1 << 21)) >> 22) as i64, biased_exponent - 1022)
}

/// TFLite `QuantizeMultiplier` (`kernels/internal/quantization_util.cc`, without
/// `TFLITE_SINGLE_ROUNDING`): the [`Requant`] closest to `real`, from `frexp`. A fraction that
/// rounds up to 1 becomes 1/2 with the exponent incremented; a real below about `2^-31` (shift
/// `< -31`) is flushed to multiplier 0, shift 0. Panics on a non-finite `real`.
pub const fn quantize_multiplier(real: f64) -> Requant {
    let (mut q_fixed, mut shift) = frexp_q31(real);
    if q_fixed == 1 << 31 {
        q_fixed /= 2;
        shift += 1;
    }
    if shift < -31 {
        return Requant { multiplier: 0, shift: 0 };
    }
    let multiplier = if real < 0.0 { -q_fixed } else { q_fixed };
    Requant { multiplier: multiplier as i32, shift }
}

/// TFLite `CalculateInputRadius(integer_bits, left_shift, 31)`: `floor((2^integer_bits - 1) *
/// 2^(31 - integer_bits) / 2^left_shift)`, the largest input magnitude (before the rescaling by a
/// multiplier with `left_shift`) that fits the Q`integer_bits` format; saturated to `i32::MAX`.
pub(crate) const fn input_radius(integer_bits: i32, left_shift: i32) -> i32 {
    let max_input_rescaled = ((1i64 << integer_bits) - 1) << (31 - integer_bits);
    let radius = if left_shift >= 0 { max_input_rescaled >> left_shift } else { max_input_rescaled << -left_shift };
    if radius > i32::MAX as i64 {
        i32::MAX
    } else {
        radius as i32
    }
}

/// The output multiplier of a convolution, a depthwise convolution or a per-channel fully
/// connected layer, per output channel: `input_scale * weight_scale / output_scale` in `f64`
/// (TFLite `PopulateConvolutionQuantizationParams` and TFLite Micro's per-channel
/// `FullyConnected` prepare). Also right for ONNX QLinearConv and QDQ Conv.
pub const fn conv_requant(input_scale: f32, weight_scale: f32, output_scale: f32) -> Requant {
    quantize_multiplier(input_scale as f64 * weight_scale as f64 / output_scale as f64)
}

/// The output multiplier of a per-tensor fully connected layer or a batch matmul:
/// `(input_scale * weight_scale)` multiplied in `f32`, then divided by `output_scale` in `f64`
/// (TFLite `GetQuantizedConvolutionMultipler`, used by FULLY_CONNECTED and BATCH_MATMUL; it can
/// differ from [`conv_requant`] in the last bit).
pub const fn fully_connected_requant(input_scale: f32, weight_scale: f32, output_scale: f32) -> Requant {
    quantize_multiplier((input_scale * weight_scale) as f64 / output_scale as f64)
}

/// `input_scale / output_scale` in `f64`: TFLite QUANTIZE (int8 to int8/uint8), MEAN
/// (before [`mean_requant`](super::mean_requant)), and the rescaling of a concatenation input.
pub const fn rescale_requant(input_scale: f32, output_scale: f32) -> Requant {
    quantize_multiplier(input_scale as f64 / output_scale as f64)
}

/// The output clamp `(min, max)` of a fused activation whose real range is `[lo, hi]`
/// (`f32::NEG_INFINITY` / `f32::INFINITY` when unbounded), for an output with `scale` and
/// `zero_point` of element type `T`: TFLite `CalculateActivationRangeQuantized`, each bound
/// quantized as `zero_point + round(bound / scale)` (`f32` division, ties away from zero) and
/// kept inside `T`'s range. NONE is `(-inf, inf)`, RELU `(0, inf)`, RELU6 `(0, 6)`,
/// RELU_N1_TO_1 `(-1, 1)`; an ONNX Clip folded into its producer is its `(min, max)`.
pub fn activation_range<T: QuantInt>(lo: f32, hi: f32, scale: f32, zero_point: i32) -> (i32, i32) {
    let quantize = |bound: f32| {
        let q = (zero_point as i64).saturating_add(libm::roundf(bound / scale) as i64);
        q.clamp(T::MIN as i64, T::MAX as i64) as i32
    };
    (quantize(lo), quantize(hi))
}
