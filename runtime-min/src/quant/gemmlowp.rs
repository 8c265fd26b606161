//! gemmlowp's fixed-point transcendental functions (`fixedpoint/fixedpoint.h`), bit for bit: the
//! pieces of TFLite's int8 softmax, logistic and tanh.
//!
//! gemmlowp types its values `FixedPoint<int32_t, I>`: a raw `i32` with `I` integer bits and
//! `31 - I` fractional bits. Here every value is its raw `i32`; the integer bits of an input are a
//! parameter where the algorithm depends on them, and every result has 0 integer bits (Q0.31,
//! where `i32::MAX` stands for 1.0). A product of Qa and Qb values is the
//! [`saturating_rounding_doubling_high_mul`](super::fixedpoint::saturating_rounding_doubling_high_mul) of the raws, a Q(a+b) value; gemmlowp's `Rescale`
//! between integer-bit counts is
//! [`saturating_rounding_multiply_by_pot`].

use super::fixedpoint::{
    rounding_divide_by_pot, rounding_half_sum, saturating_rounding_doubling_high_mul as mul,
    saturating_rounding_multiply_by_pot,
};

/// `exp(x)` for `x` in `[-1/4, 0)`, Q0.31 in and out: a fourth-order Taylor expansion around
/// `-1/8` (gemmlowp `exp_on_interval_between_negative_one_quarter_and_0_excl`).
const fn exp_on_interval_between_negative_one_quarter_and_0_excl(a: i32) -> i32 {
    const EXP_MINUS_ONE_EIGHTH: i32 = 1_895_147_668; // exp(-1/8) in Q0.31
    const ONE_THIRD: i32 = 715_827_883; // 1/3 in Q0.31
    let x = a.wrapping_add(1 << 28); // a + 1/8
    let x2 = mul(x, x);
    let x3 = mul(x2, x);
    let x4 = mul(x2, x2);
    let x4_over_4 = rounding_divide_by_pot(x4, 2);
    let poly = rounding_divide_by_pot(mul(x4_over_4.wrapping_add(x3), ONE_THIRD).wrapping_add(x2), 1);
    EXP_MINUS_ONE_EIGHTH.wrapping_add(mul(EXP_MINUS_ONE_EIGHTH, x.wrapping_add(poly)))
}

/// `exp(-2^e)` in Q0.31 for `e = -2 ..= 4`: the barrel shifter's factors.
const EXP_OF_MINUS_POWERS_OF_TWO: [(i32, i32); 7] = [
    (-2, 1_672_461_947),
    (-1, 1_302_514_674),
    (0, 790_015_084),
    (1, 290_630_308),
    (2, 39_332_535),
    (3, 720_401),
    (4, 242),
];

/// gemmlowp `exp_on_negative_values`: `exp(a)` for `a <= 0`, where `a` has `integer_bits`
/// integer bits (`0..=29`); the result is Q0.31 (`i32::MAX` for `a == 0`).
///
/// `a` is split into its residue modulo 1/4 (shifted to `[-1/4, 0)`, through the Taylor
/// expansion) and the multiples of 1/4, 1/2, 1, .. 16 it contains, each multiplying the result by
/// a constant `exp(-2^e)`; inputs below -32 give 0 when the format can hold them.
pub const fn exp_on_negative_values(a: i32, integer_bits: i32) -> i32 {
    let fractional_bits = 31 - integer_bits;
    let one_quarter = 1i32 << (fractional_bits - 2);
    let a_mod_quarter_minus_one_quarter = (a & (one_quarter - 1)).wrapping_sub(one_quarter);
    let mut result = exp_on_interval_between_negative_one_quarter_and_0_excl(saturating_rounding_multiply_by_pot(
        a_mod_quarter_minus_one_quarter,
        integer_bits,
    ));
    let remainder = a_mod_quarter_minus_one_quarter.wrapping_sub(a);
    let mut i = 0;
    while i < EXP_OF_MINUS_POWERS_OF_TWO.len() {
        let (exponent, factor) = EXP_OF_MINUS_POWERS_OF_TWO[i];
        if integer_bits > exponent && remainder & (1 << (fractional_bits + exponent)) != 0 {
            result = mul(result, factor);
        }
        i += 1;
    }
    if integer_bits > 5 && a < -(1 << (36 - integer_bits)) {
        result = 0; // below -32
    }
    if a == 0 {
        result = i32::MAX;
    }
    result
}

/// The Newton-Raphson division shared by [`one_over_one_plus_x_for_x_in_0_1`] and
/// `one_minus_x_over_one_plus_x_for_x_in_0_1`: `1 / d = 2 / (1 + a)` in Q2.29 for the half
/// denominator `d = (1 + a) / 2` (Q0.31), three iterations from `48/17 - 32/17 * d`.
const fn reciprocal_of_one_plus_x_q2(a: i32) -> i32 {
    const FORTY_EIGHT_SEVENTEENTHS: i32 = 1_515_870_810; // 48/17 in Q2.29
    const MINUS_THIRTY_TWO_SEVENTEENTHS: i32 = -1_010_580_540; // -32/17 in Q2.29
    const ONE_Q2: i32 = 1 << 29;
    let half_denominator = rounding_half_sum(a, i32::MAX);
    let mut x = FORTY_EIGHT_SEVENTEENTHS.wrapping_add(mul(half_denominator, MINUS_THIRTY_TWO_SEVENTEENTHS));
    let mut i = 0;
    while i < 3 {
        let one_minus_half_denominator_times_x = ONE_Q2.wrapping_sub(mul(half_denominator, x));
        x = x.wrapping_add(saturating_rounding_multiply_by_pot(mul(x, one_minus_half_denominator_times_x), 2));
        i += 1;
    }
    x
}

/// gemmlowp `one_over_one_plus_x_for_x_in_0_1`: `1 / (1 + a)` for `a` in `[0, 1]`, Q0.31 in
/// and out.
pub const fn one_over_one_plus_x_for_x_in_0_1(a: i32) -> i32 {
    // The raw of 2 / (1 + a) in Q2.29 is 1 / (1 + a) in Q1.30: one saturating left shift to Q0.31.
    saturating_rounding_multiply_by_pot(reciprocal_of_one_plus_x_q2(a), 1)
}

/// gemmlowp `one_minus_x_over_one_plus_x_for_x_in_0_1`: `(1 - a) / (1 + a)` for `a` in `[0, 1]`,
/// Q0.31 in and out.
const fn one_minus_x_over_one_plus_x_for_x_in_0_1(a: i32) -> i32 {
    saturating_rounding_multiply_by_pot(reciprocal_of_one_plus_x_q2(a).wrapping_sub(1 << 29), 2)
}

/// gemmlowp `logistic`: `1 / (1 + exp(-a))` where `a` has `integer_bits` integer bits; Q0.31
/// result (`1 << 30`, one half, for `a == 0`).
pub const fn logistic(a: i32, integer_bits: i32) -> i32 {
    if a == 0 {
        return 1 << 30;
    }
    let abs = if a > 0 { a } else { a.wrapping_neg() };
    let positive = one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(abs.wrapping_neg(), integer_bits));
    if a > 0 {
        positive
    } else {
        i32::MAX.wrapping_sub(positive)
    }
}

/// gemmlowp `tanh`: `tanh(a)` where `a` has `integer_bits` integer bits (`0..=29`); Q0.31 result.
pub const fn tanh(a: i32, integer_bits: i32) -> i32 {
    if a == 0 {
        return 0;
    }
    let n = if a < 0 { a } else { a.wrapping_neg() };
    // exp(2n): the same raw read with one more integer bit (gemmlowp `ExactMulByPot<1>`).
    let t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(n, integer_bits + 1));
    if a < 0 {
        t.wrapping_neg()
    } else {
        t
    }
}

/// TFLite `GetReciprocal`: for a positive `x` with `integer_bits` integer bits, returns
/// `(scale, num_bits_over_unit)` where `scale` (Q0.31) is `1 / x` scaled by
/// `2^num_bits_over_unit` into `[1/2, 1]`.
pub const fn reciprocal(x: i32, integer_bits: i32) -> (i32, i32) {
    debug_assert!(x > 0);
    let headroom_plus_one = (x as u32).leading_zeros() as i32;
    let num_bits_over_unit = integer_bits - headroom_plus_one;
    let shifted_sum_minus_one = ((x as u32) << headroom_plus_one).wrapping_sub(1 << 31) as i32;
    (one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one), num_bits_over_unit)
}
