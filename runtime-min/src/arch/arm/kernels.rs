//! The dot-product micro-kernels: int8 weight rows against windows widened to 16-bit pairs
//! ([`super::window`]), two 16-bit multiply-accumulates per `SMLAD`.
//!
//! A weight word `w[4g..4g + 4]` splits by `SXTB16` into the lanes `(w0, w2)` and, rotated,
//! `(w1, w3)`; a window holds the same taps as the pairs `(x0, x2)`, `(x1, x3)`, so two `SMLAD`s
//! add the group's four products. A row's last partial group reads only its own weights (the
//! missing ones are zero, as are the window's padding lanes). Sums wrap like TFLite's `int32_t`
//! accumulator, so any order gives the portable kernels' bits.

use super::dsp::{pairs, smlad, sxtb16, sxtb16_ror8, word};
use crate::quant::QuantElem;

/// The weight word of a row's last partial group: its `rest.len()` (< 4) weights, then zeros.
#[inline(always)]
fn rest_word(rest: &[i8]) -> u32 {
    let mut w = [0i8; 4];
    w[..rest.len()].copy_from_slice(rest);
    word(&w)
}

/// `acc[i][j] += window_i . row_j` for two windows (`2 * ceil(taps / 4)` words each) and two
/// weight rows (`taps` weights each): 8 `SMLAD`s per 4 taps, the weights split once for both
/// windows and the windows loaded once for both rows.
#[inline(always)]
pub(super) fn dot_2x2(x: [&[u32]; 2], w: [&[i8]; 2], acc: &mut [[i32; 2]; 2]) {
    let [[mut a00, mut a01], [mut a10, mut a11]] = *acc;
    let (w0, r0) = w[0].as_chunks::<4>();
    let (w1, r1) = w[1].as_chunks::<4>();
    let (x0, _) = x[0].as_chunks::<2>();
    let (x1, _) = x[1].as_chunks::<2>();
    let mut step = |p: &[u32; 2], q: &[u32; 2], u: u32, v: u32| {
        let (ue, uo, ve, vo) = (sxtb16(u), sxtb16_ror8(u), sxtb16(v), sxtb16_ror8(v));
        a00 = smlad(uo, p[1], smlad(ue, p[0], a00));
        a01 = smlad(vo, p[1], smlad(ve, p[0], a01));
        a10 = smlad(uo, q[1], smlad(ue, q[0], a10));
        a11 = smlad(vo, q[1], smlad(ve, q[0], a11));
    };
    for (((p, q), u), v) in x0.iter().zip(x1).zip(w0).zip(w1) {
        step(p, q, word(u), word(v));
    }
    if !r0.is_empty() {
        let g = w0.len();
        step(&x0[g], &x1[g], rest_word(r0), rest_word(r1));
    }
    *acc = [[a00, a01], [a10, a11]];
}

/// `acc[j] += x . row_j` for one input row `x` (activations) and four weight rows of its length:
/// 8 `SMLAD`s per 4 taps, each group of `x` loaded and widened once for the four rows (fully
/// connected layers; no buffer).
#[inline(always)]
pub(super) fn dot_1x4<T: QuantElem>(x: &[T], w: [&[i8]; 4], acc: &mut [i32; 4]) {
    let [mut a0, mut a1, mut a2, mut a3] = *acc;
    let (xg, xr) = x.as_chunks::<4>();
    let (w0, r0) = w[0].as_chunks::<4>();
    let (w1, r1) = w[1].as_chunks::<4>();
    let (w2, r2) = w[2].as_chunks::<4>();
    let (w3, r3) = w[3].as_chunks::<4>();
    let mut step = |p: [u32; 2], ws: [u32; 4]| {
        let mac = |a: i32, v: u32| smlad(sxtb16_ror8(v), p[1], smlad(sxtb16(v), p[0], a));
        (a0, a1, a2, a3) = (mac(a0, ws[0]), mac(a1, ws[1]), mac(a2, ws[2]), mac(a3, ws[3]));
    };
    for ((((g, u0), u1), u2), u3) in xg.iter().zip(w0).zip(w1).zip(w2).zip(w3) {
        step(pairs(g), [word(u0), word(u1), word(u2), word(u3)]);
    }
    if !xr.is_empty() {
        let mut g = [T::default(); 4];
        g[..xr.len()].copy_from_slice(xr);
        // The padding lanes multiply zero weights: any value gives the same sum.
        step(pairs(&g), [rest_word(r0), rest_word(r1), rest_word(r2), rest_word(r3)]);
    }
    *acc = [a0, a1, a2, a3];
}
