//! Quantized softmax: TFLite's int8 / uint8 algorithm as TFLite Micro's reference kernel computes
//! it (`reference_ops::Softmax<InputT, OutputT>`; CMSIS-NN `arm_softmax_s8` is bit-exact with it).

use super::fixedpoint::{
    multiply_by_quantized_multiplier, rounding_divide_by_pot, saturating_rounding_doubling_high_mul,
};
use super::gemmlowp::{exp_on_negative_values, reciprocal};
use super::{input_radius, quantize_multiplier, QuantElem, Requant};

/// Integer bits of the rescaled differences (Q5.26).
const SCALED_DIFF_INTEGER_BITS: i32 = 5;
/// Integer bits of the sum of exponentials (Q12.19).
const ACCUMULATION_INTEGER_BITS: i32 = 12;

/// The input rescaling of a softmax, from `beta` and the input scale: [`softmax_scaling`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SoftmaxScaling {
    /// Q0.31 multiplier of `beta * input_scale * 2^26`.
    pub input_multiplier: i32,
    /// Its left shift (>= 0 for any `beta * input_scale` above `2^-26`).
    pub input_left_shift: i32,
    /// The most negative difference to the row maximum that still contributes (TFLite
    /// `-CalculateInputRadius(5, input_left_shift)`).
    pub diff_min: i32,
}

/// TFLite Micro's softmax preparation (`CalculateSoftmaxParams` for int8 input):
/// `PreprocessSoftmaxScaling(beta, input_scale, 5)`, i.e. the multiplier of
/// `min(beta * input_scale * 2^26, 2^31 - 1)` in `f64`, and `diff_min = -floor((2^5 - 1) *
/// 2^26 / 2^input_left_shift)`.
pub const fn softmax_scaling(beta: f32, input_scale: f32) -> SoftmaxScaling {
    const MAX_REAL_MULTIPLIER: f64 = ((1i64 << 31) - 1) as f64;
    let real = beta as f64 * input_scale as f64 * (1i64 << (31 - SCALED_DIFF_INTEGER_BITS)) as f64;
    let r = quantize_multiplier(if real < MAX_REAL_MULTIPLIER { real } else { MAX_REAL_MULTIPLIER });
    SoftmaxScaling {
        input_multiplier: r.multiplier,
        input_left_shift: r.shift,
        diff_min: -input_radius(SCALED_DIFF_INTEGER_BITS, r.shift),
    }
}

/// The output rescaling of a softmax whose output has scale `output_scale` (and zero point the
/// type's minimum): the multiplier of `1 / (256 * output_scale)`, applied to the fixed-point
/// probability before its one rounding. TFLite's 1/256 gives exactly its result; ONNX QDQ files
/// use 1/255.
pub const fn softmax_output(output_scale: f32) -> Requant {
    quantize_multiplier(1.0 / (256.0 * output_scale as f64))
}

/// Parameters of [`softmax`]: the softmax runs along the middle axis of the `[outer, axis,
/// inner]` view of a contiguous tensor (TFLite: `inner = 1`, the last axis).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Softmax {
    /// Product of the axes before the softmax axis.
    pub outer: usize,
    /// Length of the softmax axis.
    pub axis: usize,
    /// Product of the axes after it.
    pub inner: usize,
    /// The input rescaling: [`softmax_scaling`].
    pub scaling: SoftmaxScaling,
    /// The output rescaling: [`softmax_output`] (`softmax_output(1.0 / 256.0)`: TFLite's).
    pub output: Requant,
}

impl SoftmaxScaling {
    /// `exp(diff * beta * scale)` in Q0.31 for a difference `diff <= 0` to the row maximum, or
    /// `None` below `diff_min`.
    #[inline(always)]
    fn exp(&self, diff: i32) -> Option<i32> {
        (diff >= self.diff_min).then(|| {
            let rescaled = multiply_by_quantized_multiplier(diff, self.input_multiplier, self.input_left_shift);
            exp_on_negative_values(rescaled, SCALED_DIFF_INTEGER_BITS)
        })
    }
}

/// Quantized softmax (TFLite Micro's `reference_ops::Softmax`) along the axis of [`Softmax`].
///
/// Per row: the differences to the row's maximum are rescaled into Q5.26 (by `beta * scale`),
/// exponentiated by gemmlowp's [`exp_on_negative_values`], summed in Q12.19, and each
/// exponential is multiplied by the sum's fixed-point reciprocal. The output has zero point
/// `Y::MIN` (-128 for int8, 0 for uint8) and the scale of [`Softmax::output`]: with TFLite's 1/256
/// the probability is rounded to it as TFLite does (a rounding shift), with another scale it is
/// first multiplied by `p.output` in 64 bits, then rounded once (half up). Differences below
/// `diff_min` give `Y::MIN`. Input and output element types are independent (int8 in, int8 out is
/// TFLite's; uint8 in, uint8 out ONNX's).
pub fn softmax<X: QuantElem, Y: QuantElem>(p: &Softmax, x: &[X], y: &mut [Y]) {
    let s = &p.scaling;
    let tflite = p.output == softmax_output(1.0 / 256.0);
    for o in 0..p.outer {
        for i in 0..p.inner {
            let at = |c: usize| (o * p.axis + c) * p.inner + i;
            let max = (0..p.axis).map(|c| x[at(c)].to_i32()).max().unwrap_or(X::MIN);
            let sum = (0..p.axis)
                .filter_map(|c| s.exp(x[at(c)].to_i32() - max))
                .fold(0i32, |sum, e| sum.wrapping_add(rounding_divide_by_pot(e, ACCUMULATION_INTEGER_BITS)));
            let (scale, num_bits_over_unit) = reciprocal(sum, ACCUMULATION_INTEGER_BITS);
            // TFLite: num_bits_over_unit + 31 - (bits of the output type).
            let exponent = num_bits_over_unit + 31 - 8;
            for c in 0..p.axis {
                y[at(c)] = match s.exp(x[at(c)].to_i32() - max) {
                    Some(e) => {
                        let probability = saturating_rounding_doubling_high_mul(scale, e);
                        let unsat = match tflite {
                            true => rounding_divide_by_pot(probability, exponent),
                            false => rescale(probability, p.output, exponent),
                        };
                        Y::saturate(unsat + Y::MIN)
                    }
                    None => Y::saturate(Y::MIN),
                };
            }
        }
    }
}

/// `round(probability * output / 2^exponent)` for a probability `>= 0`, in 64 bits (one rounding,
/// half up; saturated to `i32`).
#[inline(always)]
fn rescale(probability: i32, output: Requant, exponent: i32) -> i32 {
    let bits = 31 - output.shift + exponent;
    let product = probability as i64 * output.multiplier as i64;
    let rounded = if bits > 0 { (product + (1i64 << (bits - 1))) >> bits } else { product << -bits };
    rounded.clamp(i32::MIN as i64, i32::MAX as i64) as i32
}
