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

/// `acc[i] += window_i . row` for two windows interleaved group by group (`x[g]` = the pairs
/// of group `g` of window 0, then of window 1; `ceil(taps / 4)` groups) and one weight row of
/// `taps` weights: per group of 4 taps one `LDM` of both windows, one `LDR` and two `SXTB16` of
/// the weights, 4 `SMLAD`s (8 MACs).
#[inline(always)]
pub(super) fn dot_2x1(x: &[u32], w: &[i8], acc: [i32; 2]) -> [i32; 2] {
    let x = x.as_chunks::<4>().0;
    let (groups, rest) = w.as_chunks::<4>();
    let mut acc = full_groups(&x[..groups.len()], groups, acc);
    if !rest.is_empty() {
        let p = &x[groups.len()];
        let u = rest_word(rest);
        let (ue, uo) = (sxtb16(u), sxtb16_ror8(u));
        acc = [smlad(uo, p[1], smlad(ue, p[0], acc[0])), smlad(uo, p[3], smlad(ue, p[2], acc[1]))];
    }
    acc
}

/// [`dot_2x1`]'s loop over whole groups (`x.len() == w.len()`): one `asm!` loop on a DSP target.
#[inline(always)]
fn full_groups(x: &[[u32; 4]], w: &[[i8; 4]], acc: [i32; 2]) -> [i32; 2] {
    assert_eq!(x.len(), w.len());
    if w.is_empty() {
        return acc;
    }
    #[cfg(arm_dsp)]
    {
        let [mut a0, mut a1] = acc;
        let range = w.as_ptr_range();
        // SAFETY: the loop reads `w.len()` groups of `x` (16 bytes each, word-aligned as `[u32;
        // 4]`, by `LDM`) and as many words of `w` (unaligned `LDR`, which Armv7-M and Armv8-M
        // Mainline allow on normal memory), from `x.as_ptr()` and `range.start` up to
        // `range.end`, all inside the two slices (`x.len() == w.len() > 0`, checked above). It
        // writes only registers it declares (and the flags: `cmp`); no stack.
        unsafe {
            core::arch::asm!(
                "2:",
                "ldm {x}!, {{r0, r1, r2, r3}}",
                "ldr {u}, [{w}], #4",
                "sxtb16 {uo}, {u}, ror #8",
                "sxtb16 {u}, {u}",
                "smlad {a0}, {u}, r0, {a0}",
                "smlad {a0}, {uo}, r1, {a0}",
                "smlad {a1}, {u}, r2, {a1}",
                "smlad {a1}, {uo}, r3, {a1}",
                "cmp {w}, {end}",
                "bne 2b",
                x = inout(reg) x.as_ptr() => _,
                w = inout(reg) range.start => _,
                end = in(reg) range.end,
                u = out(reg) _,
                uo = out(reg) _,
                a0 = inout(reg) a0,
                a1 = inout(reg) a1,
                out("r0") _,
                out("r1") _,
                out("r2") _,
                out("r3") _,
                options(nostack, readonly),
            );
        }
        [a0, a1]
    }
    #[cfg(not(arm_dsp))]
    {
        let mut acc = acc;
        for (p, u) in x.iter().zip(w) {
            let u = word(u);
            let (ue, uo) = (sxtb16(u), sxtb16_ror8(u));
            acc = [smlad(uo, p[1], smlad(ue, p[0], acc[0])), smlad(uo, p[3], smlad(ue, p[2], acc[1]))];
        }
        acc
    }
}

/// `acc[i] += window_i . row` for four interleaved windows (`x[g]`: group `g` of windows 0 to 3)
/// and one weight row: per group of 4 taps one `LDR` and two `SXTB16` of the weights, four
/// `LDRD`s of the windows, 8 `SMLAD`s (16 MACs).
#[inline(always)]
pub(super) fn dot_4x1(x: &[u32], w: &[i8], acc: [i32; 4]) -> [i32; 4] {
    let x = x.as_chunks::<8>().0;
    let (groups, rest) = w.as_chunks::<4>();
    let mut acc = full_groups_4(&x[..groups.len()], groups, acc);
    if !rest.is_empty() {
        let p = &x[groups.len()];
        let u = rest_word(rest);
        let (ue, uo) = (sxtb16(u), sxtb16_ror8(u));
        acc = core::array::from_fn(|i| smlad(uo, p[2 * i + 1], smlad(ue, p[2 * i], acc[i])));
    }
    acc
}

/// [`dot_4x1`]'s loop over whole groups (`x.len() == w.len()`): one `asm!` loop on a DSP target.
#[inline(always)]
fn full_groups_4(x: &[[u32; 8]], w: &[[i8; 4]], acc: [i32; 4]) -> [i32; 4] {
    assert_eq!(x.len(), w.len());
    if w.is_empty() {
        return acc;
    }
    #[cfg(arm_dsp)]
    {
        let [mut a0, mut a1, mut a2, mut a3] = acc;
        let range = w.as_ptr_range();
        // SAFETY: the loop reads `w.len()` groups of `x` (32 bytes each, word-aligned as `[u32;
        // 8]`, by `LDRD`) and as many words of `w` (unaligned `LDR`, which Armv7-M and Armv8-M
        // Mainline allow on normal memory), from `x.as_ptr()` and `range.start` up to
        // `range.end`, all inside the two slices (`x.len() == w.len() > 0`, checked above). It
        // writes only registers it declares (and the flags: `cmp`); no stack.
        unsafe {
            core::arch::asm!(
                "2:",
                "ldr {u}, [{w}], #4",
                "sxtb16 {uo}, {u}, ror #8",
                "sxtb16 {u}, {u}",
                "ldrd {p0}, {p1}, [{x}], #8",
                "smlad {a0}, {u}, {p0}, {a0}",
                "smlad {a0}, {uo}, {p1}, {a0}",
                "ldrd {p0}, {p1}, [{x}], #8",
                "smlad {a1}, {u}, {p0}, {a1}",
                "smlad {a1}, {uo}, {p1}, {a1}",
                "ldrd {p0}, {p1}, [{x}], #8",
                "smlad {a2}, {u}, {p0}, {a2}",
                "smlad {a2}, {uo}, {p1}, {a2}",
                "ldrd {p0}, {p1}, [{x}], #8",
                "smlad {a3}, {u}, {p0}, {a3}",
                "smlad {a3}, {uo}, {p1}, {a3}",
                "cmp {w}, {end}",
                "bne 2b",
                x = inout(reg) x.as_ptr() => _,
                w = inout(reg) range.start => _,
                end = in(reg) range.end,
                u = out(reg) _,
                uo = out(reg) _,
                p0 = out(reg) _,
                p1 = out(reg) _,
                a0 = inout(reg) a0,
                a1 = inout(reg) a1,
                a2 = inout(reg) a2,
                a3 = inout(reg) a3,
                options(nostack, readonly),
            );
        }
        [a0, a1, a2, a3]
    }
    #[cfg(not(arm_dsp))]
    {
        let mut acc = acc;
        for (p, u) in x.iter().zip(w) {
            let u = word(u);
            let (ue, uo) = (sxtb16(u), sxtb16_ror8(u));
            acc = core::array::from_fn(|i| smlad(uo, p[2 * i + 1], smlad(ue, p[2 * i], acc[i])));
        }
        acc
    }
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
