//! 256-entry lookup tables: the run-time kernel [`lut`], and the build-time functions that fill a
//! table so that looking a value up gives exactly what TFLite Micro's reference kernel computes
//! for it (int8 LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU; the same algorithms on uint8 are TFLite's
//! uint8 kernels), or what TFLite's float-transform tables give (`LUTPopulate`).
//!
//! A table is indexed by the raw byte of the input ([`QuantElem::byte`]): entry `v as u8` holds
//! the output for input `v` (TFLite's order for int8 tables).

use super::fixedpoint::rounding_divide_by_pot;
use super::gemmlowp;
use super::{input_radius, quantize_multiplier, QuantElem, Requant};

/// `y[i] = table[x[i].byte()]`. `table` has 256 entries.
pub fn lut<T: QuantElem>(table: &[T], x: &[T], y: &mut [T]) {
    let table: &[T; 256] = table.try_into().expect("lut: 256 entries");
    for (yv, &xv) in y.iter_mut().zip(x) {
        *yv = table[xv.byte() as usize];
    }
}

/// [`lut`] in place.
pub fn lut_in_place<T: QuantElem>(table: &[T], xy: &mut [T]) {
    let table: &[T; 256] = table.try_into().expect("lut_in_place: 256 entries");
    for v in xy.iter_mut() {
        *v = table[v.byte() as usize];
    }
}

/// The table of `f` applied to every value of `T`, saturated to `T`.
fn tabulate<T: QuantElem>(f: impl Fn(i32) -> i32) -> [T; 256] {
    let mut table = [T::default(); 256];
    for v in T::MIN..=T::MAX {
        table[T::saturate(v).byte() as usize] = T::saturate(f(v));
    }
    table
}

/// Integer bits of the rescaled input of LOGISTIC and TANH (Q4.27).
const ACTIVATION_INPUT_INTEGER_BITS: i32 = 4;

/// TFLite Micro's int8 LOGISTIC and TANH (`logistic_common.cc`, `tanh.cc`,
/// `reference_integer_ops::Logistic` / `Tanh`): `x - zx` at or beyond the radius saturates to
/// `T`'s ends; inside, it is rescaled by `input_scale * 2^27` (from `frexp`) into Q4.27 and mapped
/// by `f`.
fn saturating_activation_table<T: QuantElem>(
    input_scale: f32,
    input_zero_point: i32,
    f: impl Fn(i32) -> i32,
) -> [T; 256] {
    // TFLite rounds the frexp fraction without QuantizeMultiplier's fix-up for a fraction rounding
    // to 1, which cannot happen for an f32 scale (24-bit fraction); otherwise the same.
    let r = quantize_multiplier(input_scale as f64 * (1i64 << (31 - ACTIVATION_INPUT_INTEGER_BITS)) as f64);
    let radius = input_radius(ACTIVATION_INPUT_INTEGER_BITS, r.shift);
    tabulate(|v| {
        let input = v - input_zero_point;
        if input <= -radius {
            T::MIN
        } else if input >= radius {
            T::MAX
        } else {
            f(r.apply(input))
        }
    })
}

/// Table of TFLite's quantized LOGISTIC (`reference_integer_ops::Logistic`, gemmlowp
/// `logistic`): output scale 1/256, zero point `T::MIN` (TFLite's fixed output quantization).
pub fn logistic_table<T: QuantElem>(input_scale: f32, input_zero_point: i32) -> [T; 256] {
    saturating_activation_table(input_scale, input_zero_point, |q4| {
        rounding_divide_by_pot(gemmlowp::logistic(q4, ACTIVATION_INPUT_INTEGER_BITS), 31 - 8) + T::MIN
    })
}

/// Table of TFLite's quantized TANH (`reference_integer_ops::Tanh`, gemmlowp `tanh`): output
/// scale 1/128, zero point 0 for int8 and 128 for uint8 (TFLite's fixed output quantization).
pub fn tanh_table<T: QuantElem>(input_scale: f32, input_zero_point: i32) -> [T; 256] {
    let output_zero_point = (T::MIN + T::MAX + 1) / 2;
    saturating_activation_table(input_scale, input_zero_point, |q4| {
        rounding_divide_by_pot(gemmlowp::tanh(q4, ACTIVATION_INPUT_INTEGER_BITS), 31 - 7) + output_zero_point
    })
}

/// Table of TFLite's quantized LEAKY_RELU (`reference_ops::QuantizeLeakyRelu`, multipliers as
/// `leaky_relu_common.cc` computes them in `f32`): `x - zx` times `input_scale / output_scale`
/// where non-negative, times `input_scale * alpha / output_scale` where negative, plus `zy`. A
/// negative alpha multiplies by its magnitude and negates the product, as TFLite does.
pub fn leaky_relu_table<T: QuantElem>(
    input_scale: f32,
    input_zero_point: i32,
    alpha: f32,
    output_scale: f32,
    output_zero_point: i32,
) -> [T; 256] {
    let identity = quantize_multiplier((input_scale / output_scale) as f64);
    let negative = quantize_multiplier((input_scale * alpha / output_scale) as f64);
    let magnitude = Requant { multiplier: negative.multiplier.wrapping_abs(), shift: negative.shift };
    tabulate(|v| {
        let input = v - input_zero_point;
        let scaled = if input >= 0 {
            identity.apply(input)
        } else if negative.multiplier < 0 {
            magnitude.apply(input).wrapping_neg()
        } else {
            magnitude.apply(input)
        };
        output_zero_point.wrapping_add(scaled)
    })
}

/// Table of TFLite Micro's quantized RELU (`activations_common.cc`, `ReluQuantized`): `x - zx`
/// rescaled by `input_scale / output_scale` (divided in `f32`), plus `zy`, at least `zy`.
pub fn relu_table<T: QuantElem>(
    input_scale: f32,
    input_zero_point: i32,
    output_scale: f32,
    output_zero_point: i32,
) -> [T; 256] {
    let r = quantize_multiplier((input_scale / output_scale) as f64);
    let lower = output_zero_point.max(T::MIN);
    tabulate(|v| output_zero_point.wrapping_add(r.apply(v - input_zero_point)).max(lower))
}

/// Table of TFLite Micro's quantized RELU6 (`Relu6Quantized`): the input clamped to `[zx, six]`,
/// `six` the input's quantization of 6 (no rescaling: TFLite Micro reads the input's scale only).
pub fn relu6_table<T: QuantElem>(input_scale: f32, input_zero_point: i32) -> [T; 256] {
    let six =
        (libm::roundf(6.0 / input_scale) as i64 + input_zero_point as i64).clamp(T::MIN as i64, T::MAX as i64) as i32;
    tabulate(|v| v.max(input_zero_point).min(six))
}

/// gemmlowp `SaturatingRoundingDoublingHighMul` on `i16`.
fn rounding_doubling_high_mul_i16(a: i16, b: i16) -> i16 {
    if a == i16::MIN && b == i16::MIN {
        return i16::MAX;
    }
    let ab = a as i32 * b as i32;
    let nudge = if ab >= 0 { 1 << 14 } else { 1 - (1 << 14) };
    ((ab + nudge) / (1 << 15)) as i16
}

/// TFLite `SaturatingDoublingHighMul` (hard_swish.h): as above but truncating.
fn doubling_high_mul_i16(a: i16, b: i16) -> i16 {
    if a == i16::MIN && b == i16::MIN {
        return i16::MAX;
    }
    ((a as i32 * b as i32) / (1 << 15)) as i16
}

/// TFLite `SaturatingLeftShift` (hard_swish.h) on `i16`.
fn saturating_left_shift_i16(v: i16, amount: i32) -> i16 {
    (v as i64 * (1i64 << amount)).clamp(i16::MIN as i64, i16::MAX as i64) as i16
}

/// gemmlowp `RoundingDivideByPOT` instantiated on `i16`, including its wrap-around for exponents
/// of 16 and more (where the `i16` mask is all ones).
fn rounding_divide_by_pot_i16(x: i16, exponent: i32) -> i16 {
    let mask = ((1i64 << exponent) - 1) as i16;
    let remainder = x & mask;
    let threshold = (mask >> 1).wrapping_add((x < 0) as i16);
    (((x as i32) >> exponent) as i16).wrapping_add((remainder > threshold) as i16)
}

/// TFLite `DownScaleInt32ToInt16Multiplier`: a Q0.31 multiplier rounded to Q0.15.
fn multiplier_i16(m: i32) -> i16 {
    if m >= i32::MAX - (1 << 15) {
        i16::MAX
    } else {
        ((m + (1 << 15)) >> 16) as i16
    }
}

/// Table of TFLite's quantized HARD_SWISH (`reference_ops::HardSwish<T>`, parameters as
/// `hard_swish_common.cc` computes them in `f32`): `x * relu6(x + 3) / 6` in 16-bit fixed point.
/// `None` where TFLite rejects the model: an output scale smaller than `input_scale / 128` (the
/// output multiplier would need a left shift).
pub fn hard_swish_table<T: QuantElem>(
    input_scale: f32,
    input_zero_point: i32,
    output_scale: f32,
    output_zero_point: i32,
) -> Option<[T; 256]> {
    let hires_input_scale = (1.0f32 / 128.0) * input_scale;
    let reluish_scale = 3.0f32 / 32768.0;
    let output = quantize_multiplier((hires_input_scale / output_scale) as f64);
    let reluish = quantize_multiplier((hires_input_scale / reluish_scale) as f64);
    if output.shift > 0 {
        return None;
    }
    let (output_m, reluish_m) = (multiplier_i16(output.multiplier), multiplier_i16(reluish.multiplier));
    Some(tabulate(|v| {
        let input = (v - input_zero_point) as i16;
        let hires = input.wrapping_mul(1 << 7);
        let preshift_output = rounding_doubling_high_mul_i16(hires, output_m);
        let mut reluish_value = hires;
        if reluish.shift > 0 {
            reluish_value = saturating_left_shift_i16(reluish_value, reluish.shift - 1);
        }
        reluish_value = rounding_doubling_high_mul_i16(reluish_value, reluish_m);
        if reluish.shift > 0 {
            reluish_value = saturating_left_shift_i16(reluish_value, 1);
        } else if reluish.shift < 0 {
            reluish_value = rounding_divide_by_pot_i16(reluish_value, -reluish.shift);
        }
        // From [-1, 1] to [0, 1] in Q0.15.
        let relu6_fraction = ((reluish_value as i32 + (1 << 15)) >> 1) as i16;
        let preshift = doubling_high_mul_i16(relu6_fraction, preshift_output);
        let out = rounding_divide_by_pot_i16(preshift, -output.shift).wrapping_add(output_zero_point as i16);
        out as i32
    }))
}

/// TFLite's `LUTPopulate` for 8-bit types (`kernels/internal/common.h`): entry `v` is
/// `round(f(input_scale * (v - input_zero_point)) * (1 / output_scale)) + output_zero_point`, in
/// `f32`, rounded half away from zero, saturated. For activations without an integer algorithm
/// (ELU, GELU, ... in TFLite). For onnxruntime's tables (which quantize with ties to even), compose
/// [`dequantize_value`](super::dequantize_value) and [`quantize_value`](super::quantize_value).
pub fn table_from_fn<T: QuantElem>(
    input_scale: f32,
    input_zero_point: i32,
    output_scale: f32,
    output_zero_point: i32,
    f: impl Fn(f32) -> f32,
) -> [T; 256] {
    let inverse_scale = 1.0 / output_scale;
    tabulate(|v| {
        let transformed = f(input_scale * (v - input_zero_point) as f32);
        (libm::roundf(transformed * inverse_scale) + output_zero_point as f32) as i32
    })
}
