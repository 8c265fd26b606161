//! TFLite's int16 softmax (`reference_ops::SoftmaxInt16`, parameters of TFLite Micro's
//! `CalculateSoftmaxParams`): `exp` and `1 / (1 + x)` from interpolated tables, output scale
//! 1/32768, zero point 0.

use super::lut::{lut_s16, lut_s16_lookup, LUT_S16_LEN};
use crate::quant::{multiply_by_quantized_multiplier, Requant};

/// Parameters of [`softmax_s16`]: `rows` rows of `len` contiguous values (the last axis).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SoftmaxS16 {
    /// Number of rows.
    pub rows: usize,
    /// Values per row.
    pub len: usize,
    /// `input_scale * beta / (10 / 65535)` ([`quantize_multiplier`](crate::quant::quantize_multiplier)):
    /// brings a difference from the row's maximum to the exp table's input, `[-65535, 0]` for
    /// `[-10, 0]`.
    pub input: Requant,
}

/// The two tables of [`softmax_s16`], `exp` on `[-10, 0]` then `1 / (1 + x)` on `[0, 1]`, as TFLite
/// Micro's `InitializeLutForInt16` builds them (`exp` is the caller's, see [`lut_s16`]).
pub fn softmax_s16_tables(exp: impl Fn(f32) -> f32) -> [i16; 2 * LUT_S16_LEN] {
    let range = (i16::MAX as i32 - i16::MIN as i32) as f32;
    let exp_lut = lut_s16(10.0 / range, i16::MAX as i32, 2.0 / range, 0, exp);
    let reciprocal = lut_s16(1.0 / range, i16::MIN as i32, 2.0 / range, 0, |v| 1.0 / (1.0 + v));
    let mut tables = [0i16; 2 * LUT_S16_LEN];
    tables[..LUT_S16_LEN].copy_from_slice(&exp_lut);
    tables[LUT_S16_LEN..].copy_from_slice(&reciprocal);
    tables
}

/// TFLite's int16 softmax along rows: each value's difference from the row maximum through the
/// `exp` table (kept in `y`), their sum's reciprocal through the `1 / (1 + x)` table after
/// normalising it to `[1, 2)`, and the products rounded back to Q0.15, clamped to `[0, 32767]`.
/// `tables` is [`softmax_s16_tables`].
pub fn softmax_s16(p: &SoftmaxS16, x: &[i16], tables: &[i16], y: &mut [i16]) {
    assert_eq!(tables.len(), 2 * LUT_S16_LEN, "softmax_s16: two tables");
    let (exp_lut, reciprocal_lut) = tables.split_at(LUT_S16_LEN);
    for (xr, yr) in x.chunks_exact(p.len).zip(y.chunks_exact_mut(p.len)).take(p.rows) {
        let max = xr.iter().copied().max().unwrap_or(i16::MIN) as i32;
        let mut sum = 0i32;
        for (&xv, yv) in xr.iter().zip(yr.iter_mut()) {
            let scaled = multiply_by_quantized_multiplier(xv as i32 - max, p.input.multiplier, p.input.shift);
            *yv = lut_s16_lookup((scaled + 32767).clamp(-32768, 32767) as i16, exp_lut);
            sum = sum.wrapping_add(*yv as i32);
        }
        let headroom_plus_one = (sum as u32).leading_zeros() as i32;
        let shifted = (((sum as i64) << (headroom_plus_one - 1)) + (1 << 13)) >> 14;
        let centred = (shifted as i32).wrapping_sub((1 << 15) + (1 << 16)).clamp(-32768, 32767) as i16;
        let reciprocal = lut_s16_lookup(centred, reciprocal_lut) as i64;
        let right_shift = 31 - headroom_plus_one;
        for yv in yr.iter_mut() {
            let v = ((*yv as i64 * reciprocal + (1i64 << (right_shift - 1))) >> right_shift) as i32;
            *yv = v.clamp(0, 32767) as i16;
        }
    }
}
