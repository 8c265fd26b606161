//! Shared helpers of the quantized-kernel tests: TFLite's requantization restated independently
//! (128-bit arithmetic and the two rounding rules spelled out), and random quantized data.
#![allow(dead_code)]

use crate::common::Rng;
use sramfit_runtime_min::quant::{Conv2d, ImageStrides, Pool2d, QuantElem, Requant};

/// TFLite `MultiplyByQuantizedMultiplier` (double rounding) from its definition: `x * 2^left`
/// (must fit `i32`, as TFLite requires), then `x * multiplier / 2^31` rounded half up, then
/// divided by `2^right` rounded half away from zero.
pub fn ref_requant(x: i64, multiplier: i32, shift: i32) -> i64 {
    assert!(i32::try_from(x).is_ok(), "accumulator {x} outside i32");
    let (left, right) = (shift.max(0), (-shift).max(0));
    let shifted = x << left;
    assert!(i32::try_from(shifted).is_ok(), "shifted accumulator {shifted} outside i32");
    let high = (shifted as i128 * multiplier as i128 + (1 << 30)).div_euclid(1 << 31);
    let d = 1i128 << right;
    let q = if high >= 0 { (high + d / 2) / d } else { -((-high + d / 2) / d) };
    q as i64
}

/// TFLite's output stage: requantize, add the zero point, clamp (max first, then min).
pub fn ref_output(acc: i64, r: Requant, zero_point: i32, lo: i32, hi: i32) -> i32 {
    (ref_requant(acc, r.multiplier, r.shift) + zero_point as i64).max(lo as i64).min(hi as i64) as i32
}

/// An NCHW convolution of `cin` channels of `h x w` into `cout`, a `kh x kw` window at stride `s`
/// in both directions with `pad` on every side, `groups` groups, no dilation; input zero point -3,
/// output zero point 5, symmetric weights, the whole int8 range as the clamp.
pub fn conv_nchw(
    cin: usize,
    (h, w): (usize, usize),
    cout: usize,
    (kh, kw): (usize, usize),
    s: usize,
    pad: usize,
    groups: usize,
) -> Conv2d {
    let (oh, ow) = ((h + 2 * pad - kh) / s + 1, (w + 2 * pad - kw) / s + 1);
    Conv2d {
        batch: 1,
        in_channels: cin,
        in_h: h,
        in_w: w,
        out_channels: cout,
        out_h: oh,
        out_w: ow,
        kernel_h: kh,
        kernel_w: kw,
        stride_h: s,
        stride_w: s,
        dilation_h: 1,
        dilation_w: 1,
        pad_top: pad,
        pad_left: pad,
        groups,
        x_strides: ImageStrides::nchw(cin, h, w),
        y_strides: ImageStrides::nchw(cout, oh, ow),
        x_zero_point: -3,
        w_zero_point: 0,
        y_zero_point: 5,
        act_min: -128,
        act_max: 127,
    }
}

/// A pooling of one NCHW image of `c` channels, `(h, w)`: a `k` x `k` window at stride `s` in
/// both directions with `pad` on every side (not counted in averages), no dilation, zero point 0,
/// the whole int8 range as the clamp.
pub fn pool_nchw(c: usize, (h, w): (usize, usize), k: usize, s: usize, pad: usize) -> Pool2d {
    let (oh, ow) = ((h + 2 * pad - k) / s + 1, (w + 2 * pad - k) / s + 1);
    Pool2d {
        batch: 1,
        channels: c,
        in_h: h,
        in_w: w,
        out_h: oh,
        out_w: ow,
        kernel_h: k,
        kernel_w: k,
        stride_h: s,
        stride_w: s,
        dilation_h: 1,
        dilation_w: 1,
        pad_top: pad,
        pad_left: pad,
        pad_bottom: pad,
        pad_right: pad,
        count_include_pad: false,
        x_strides: ImageStrides::nchw(c, h, w),
        y_strides: ImageStrides::nchw(c, oh, ow),
        zero_point: 0,
        act_min: -128,
        act_max: 127,
    }
}

/// A uniformly random value of `T`.
pub fn elem<T: QuantElem>(rng: &mut Rng) -> T {
    T::saturate(T::MIN + rng.below(256) as i32)
}

/// `n` random values of `T`.
pub fn elems<T: QuantElem>(rng: &mut Rng, n: usize) -> Vec<T> {
    (0..n).map(|_| elem(rng)).collect()
}

/// `n` random int8 weights.
pub fn weights(rng: &mut Rng, n: usize) -> Vec<i8> {
    elems(rng, n)
}

/// A random zero point of `T`.
pub fn zero_point<T: QuantElem>(rng: &mut Rng) -> i32 {
    elem::<T>(rng).to_i32()
}

/// A random integer in `[lo, hi]`.
pub fn int(rng: &mut Rng, lo: i32, hi: i32) -> i32 {
    lo + rng.below((hi - lo + 1) as usize) as i32
}

/// A random requantization: a normalised multiplier and a shift in `[min_shift, max_shift]`.
pub fn requant(rng: &mut Rng, min_shift: i32, max_shift: i32) -> Requant {
    Requant { multiplier: (1 << 30) + rng.below(1 << 30) as i32, shift: int(rng, min_shift, max_shift) }
}

/// A random output clamp of `T`: the whole range, or a narrower one (fused activations).
pub fn clamp<T: QuantElem>(rng: &mut Rng) -> (i32, i32) {
    match rng.below(3) {
        0 => (T::MIN, T::MAX),
        1 => (int(rng, T::MIN, T::MIN + 100), T::MAX),
        _ => {
            let lo = int(rng, T::MIN, T::MIN + 100);
            (lo, int(rng, lo + 50, T::MAX))
        }
    }
}

/// A random positive scale, log-uniform in `[lo, hi]`.
pub fn scale(rng: &mut Rng, lo: f32, hi: f32) -> f32 {
    (lo.ln() + rng.uniform(0.0, 1.0) * (hi.ln() - lo.ln())).exp()
}
