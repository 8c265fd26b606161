//! TFLite's fixed-point primitives (gemmlowp `fixedpoint.h`, TFLite `kernels/internal/common.cc`),
//! bit for bit.
//!
//! # Rounding variant
//!
//! TFLite offers two `MultiplyByQuantizedMultiplier`s: the default *double rounding* one (a
//! rounding doubling high multiply, then a rounding right shift) and a *single rounding* one
//! (one 64-bit product, one rounding shift) selected by the `TFLITE_SINGLE_ROUNDING` macro.
//! CMSIS-NN mirrors the choice with `CMSIS_NN_USE_SINGLE_ROUNDING`. Neither macro is defined by
//! default in TFLite Micro's or CMSIS-NN's builds (checked in tflite-micro's makefiles and
//! CMSIS-NN's `arm_nnsupportfunctions.h`, `arm_nn_requantize`), so TFLite Micro's reference kernels
//! and CMSIS-NN both use **double rounding**, and so does this module for TFLite's files. Models
//! from ONNX, compared with onnxruntime (which requantizes in float, rounding once, ties to even),
//! use a single rounding of the 64-bit product with ties to even instead
//! ([`multiply_by_quantized_multiplier_half_even`], chosen by [`RequantRounding`]).
//!
//! Overflow: TFLite's C++ would be undefined on signed overflow; these functions wrap instead
//! (what the C compiles to on every target), and only where TFLite's own contracts already
//! exclude it (a left shift of an accumulator, a sum of two rescaled inputs).

/// gemmlowp `SaturatingRoundingDoublingHighMul`: `round(a * b / 2^31)` with ties rounded up
/// (towards +infinity), saturating the one overflowing case `i32::MIN * i32::MIN` to
/// `i32::MAX` (the Arm `SQRDMULH` instruction). CMSIS-NN's `arm_nn_doubling_high_mult` is the
/// same function.
#[inline(always)]
pub const fn saturating_rounding_doubling_high_mul(a: i32, b: i32) -> i32 {
    if a == i32::MIN && b == i32::MIN {
        return i32::MAX;
    }
    // gemmlowp: `(ab + nudge) / 2^31` truncated towards zero, with `nudge` `2^30` for `ab >= 0`
    // and `1 - 2^30` below. For `ab = -n < 0` that is `-floor((n + 2^30 - 1) / 2^31)`, which is
    // `floor((ab + 2^30) / 2^31)`: one rounding offset and an arithmetic shift for every sign
    // (a multiply-accumulate and two shifts on a 32-bit core; `tests` checks the identity).
    ((a as i64 * b as i64 + (1 << 30)) >> 31) as i32
}

/// gemmlowp `RoundingDivideByPOT`: `x / 2^exponent` rounded to nearest, ties away from zero.
/// `exponent` in `0..=31`.
#[inline(always)]
pub const fn rounding_divide_by_pot(x: i32, exponent: i32) -> i32 {
    debug_assert!(exponent >= 0 && exponent <= 31);
    let mask = ((1u32 << exponent) - 1) as i32; // exponent <= 31: no overflow
    let remainder = x & mask;
    let threshold = (mask >> 1) + (x < 0) as i32;
    (x >> exponent) + (remainder > threshold) as i32
}

/// gemmlowp `SaturatingRoundingMultiplyByPOT`: `x * 2^exponent`; a positive `exponent` shifts
/// left and saturates to `i32::MIN` / `i32::MAX`, a negative one is
/// [`rounding_divide_by_pot`]. `exponent` in `-31..=31`.
#[inline(always)]
pub const fn saturating_rounding_multiply_by_pot(x: i32, exponent: i32) -> i32 {
    if exponent > 0 {
        let threshold = ((1i64 << (31 - exponent)) - 1) as i32;
        if x > threshold {
            i32::MAX
        } else if x < -threshold {
            i32::MIN
        } else {
            x << exponent
        }
    } else {
        rounding_divide_by_pot(x, -exponent)
    }
}

/// TFLite `MultiplyByQuantizedMultiplier` (double rounding, the default; see the module docs):
/// `x * multiplier * 2^(shift - 31)`, rounded.
///
/// A positive `shift` multiplies `x` by `2^shift` first (wrapping, as TFLite's `x * (1 << shift)`
/// compiles), then [`saturating_rounding_doubling_high_mul`] by `multiplier`, then
/// [`rounding_divide_by_pot`] by `-shift` if `shift` is negative. `shift` in `-31..=31`.
/// CMSIS-NN's `arm_nn_requantize` is the same function.
#[inline(always)]
pub const fn multiply_by_quantized_multiplier(x: i32, multiplier: i32, shift: i32) -> i32 {
    debug_assert!(shift >= -31 && shift <= 31);
    let (left, right) = if shift > 0 { (shift, 0) } else { (0, -shift) };
    let scaled = x.wrapping_mul(1i32 << left);
    rounding_divide_by_pot(saturating_rounding_doubling_high_mul(scaled, multiplier), right)
}

/// `x * multiplier * 2^(shift - 31)` rounded once: the exact 64-bit product shifted right by
/// `31 - shift` with ties to even, saturated to `i32`. The requantization onnxruntime's integer
/// kernels compute in floating point (`round_half_even(acc * scale)`), here without a float and
/// with the multiplier's 31 significant bits, where [`multiply_by_quantized_multiplier`]'s first
/// rounding keeps only `31 + shift` of the product's. `shift` in `-31..=31`.
#[inline(always)]
pub const fn multiply_by_quantized_multiplier_half_even(x: i32, multiplier: i32, shift: i32) -> i32 {
    debug_assert!(shift >= -31 && shift <= 31);
    let product = x as i64 * multiplier as i64; // |product| <= 2^62
    let right = 31 - shift; // 0..=62
    let v = if right == 0 {
        product
    } else {
        let truncated = product >> right; // floor
        let remainder = product - (truncated << right); // 0 <= remainder < 2^right
        let half = 1i64 << (right - 1);
        let up = remainder > half || (remainder == half && truncated & 1 == 1);
        truncated + up as i64
    };
    if v > i32::MAX as i64 {
        i32::MAX
    } else if v < i32::MIN as i64 {
        i32::MIN
    } else {
        v as i32
    }
}

/// How a per-channel requantization ([`ChannelQuant`](super::ChannelQuant)) rounds the product of
/// an accumulator and a [`Requant`](super::Requant) multiplier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequantRounding {
    /// TFLite's and CMSIS-NN's default, twice, ties away from zero:
    /// [`multiply_by_quantized_multiplier`] (bit for bit with TensorFlow Lite Micro).
    Double,
    /// Once, ties to even: [`multiply_by_quantized_multiplier_half_even`] (the nearest integer
    /// computation to onnxruntime's float requantization).
    SingleHalfToEven,
}

impl RequantRounding {
    /// `x * multiplier * 2^(shift - 31)` rounded this way.
    #[inline(always)]
    pub const fn apply(self, x: i32, multiplier: i32, shift: i32) -> i32 {
        match self {
            RequantRounding::Double => multiply_by_quantized_multiplier(x, multiplier, shift),
            RequantRounding::SingleHalfToEven => multiply_by_quantized_multiplier_half_even(x, multiplier, shift),
        }
    }
}

/// gemmlowp `RoundingHalfSum`: `(a + b) / 2` rounded to nearest, ties away from zero.
#[inline(always)]
pub const fn rounding_half_sum(a: i32, b: i32) -> i32 {
    let sum = a as i64 + b as i64;
    let sign = if sum >= 0 { 1 } else { -1 };
    ((sum + sign) / 2) as i32
}
