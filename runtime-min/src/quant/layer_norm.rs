//! Layer normalization of 8-bit activations in integer arithmetic: ONNX LayerNormalization inside
//! a QDQ group (`DequantizeLinear -> LayerNormalization -> QuantizeLinear`, which onnxruntime runs
//! in float and TFLite has no integer kernel for).
//!
//! For a row of `n` inputs `x` (zero point `zx`, scale `sx`), with `d = x - zx`, `S = sum d`,
//! `V = n sum d^2 - S^2` and `E = n^2 epsilon / sx^2`, the normalized value of element `i` is
//! exactly `(n d_i - S) / sqrt(V + E)` (the mean and the population variance scaled by `n` and
//! `n^2`, so that everything but the square root is an integer). The output is
//! `round(normalized * gain_i + offset_i) + zy`, with `gain = scale / sy` and `offset = bias / sy`
//! in fixed point. `V` is exact (64-bit sums), the square root is taken of `(V + E) * 2^32` to 16
//! fractional bits and its reciprocal to 80 bits, all in 128-bit integers: the result differs from
//! the exact real by far less than onnxruntime's float32 evaluation does, and is rounded once,
//! ties to even, as onnxruntime's QuantizeLinear rounds.

use super::QuantElem;

/// The bits of the reciprocal of the square root ([`layer_norm`]).
const RECIPROCAL_BITS: u32 = 80;
/// The fractional bits of the square root: it is taken of `(V + E) * 2^(2 * SQRT_FRACTION)`.
const SQRT_FRACTION: u32 = 16;

/// Parameters of [`layer_norm`]: `rows` contiguous rows of `len` elements, each normalized on
/// its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayerNorm {
    /// Number of rows.
    pub rows: usize,
    /// Elements per row (the normalized axes' product).
    pub len: usize,
    /// Zero point of the input.
    pub x_zero_point: i32,
    /// Zero point of the output.
    pub y_zero_point: i32,
    /// `len^2 * epsilon / x_scale^2 * 2^32`, rounded: epsilon in the units of the row's scaled
    /// variance `V` ([`layer_norm_epsilon`]).
    pub epsilon: u64,
    /// Fractional bits of `gains` and `offsets` (`0..=62`).
    pub frac_bits: u32,
}

/// [`LayerNorm::epsilon`] of a row of `len` elements of scale `x_scale`, normalized with
/// `epsilon` (saturated to `u64::MAX`, which no working model reaches).
pub fn layer_norm_epsilon(len: usize, epsilon: f64, x_scale: f64) -> u64 {
    let e = (len as f64) * (len as f64) * epsilon / (x_scale * x_scale) * (1u64 << 32) as f64;
    if e.is_nan() || e <= 0.0 {
        0
    } else if e >= u64::MAX as f64 {
        u64::MAX
    } else {
        libm::round(e) as u64
    }
}

/// Integer layer normalization of `x` into `y` (both `rows * len`): element `i` of a row becomes
/// `saturate(round_half_even((n d_i - S) / sqrt(V + E) * gains[i] + offsets[i]) + y_zero_point)`
/// (see the module docs), `gains[i]` and `offsets[i]` in units of `2^-frac_bits` output steps.
pub fn layer_norm<T: QuantElem>(p: &LayerNorm, x: &[T], gains: &[i32], offsets: &[i32], y: &mut [T]) {
    assert_eq!((gains.len(), offsets.len()), (p.len, p.len), "one gain and one offset per element of a row");
    assert!(p.frac_bits <= 62, "at most 62 fractional bits");
    let n = p.len as i64;
    // (n d_i - S) * gain * 2^RECIPROCAL_BITS / (sqrt(V + E) * 2^SQRT_FRACTION), in units of
    // 2^-frac_bits steps, has `RECIPROCAL_BITS - SQRT_FRACTION` further fractional bits.
    let extra = RECIPROCAL_BITS - SQRT_FRACTION;
    let total = extra + p.frac_bits;
    for (xr, yr) in x.chunks_exact(p.len).zip(y.chunks_exact_mut(p.len)).take(p.rows) {
        let (mut sum, mut squares) = (0i64, 0i64);
        for &v in xr {
            let d = (v.to_i32() - p.x_zero_point) as i64;
            sum += d;
            squares += d * d;
        }
        let variance = (n as i128 * squares as i128 - sum as i128 * sum as i128) as u128; // >= 0
        let root = ((variance << (2 * SQRT_FRACTION)) + p.epsilon as u128).isqrt().max(1);
        let reciprocal = ((1u128 << RECIPROCAL_BITS) / root) as i128;
        for (i, (&v, out)) in xr.iter().zip(yr.iter_mut()).enumerate() {
            let centered = n * (v.to_i32() - p.x_zero_point) as i64 - sum;
            let scaled = centered as i128 * gains[i] as i128 * reciprocal + ((offsets[i] as i128) << extra);
            let q = round_half_even(scaled, total);
            *out = T::saturate(q.clamp(i32::MIN as i128, i32::MAX as i128) as i32 + p.y_zero_point);
        }
    }
}

/// `v / 2^bits` rounded to nearest, ties to even (`bits` in `1..=127`).
fn round_half_even(v: i128, bits: u32) -> i128 {
    let floor = v >> bits;
    let remainder = v - (floor << bits);
    let half = 1i128 << (bits - 1);
    floor + i128::from(remainder > half || (remainder == half && floor & 1 == 1))
}
