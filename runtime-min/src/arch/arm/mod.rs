//! Arm's DSP extension (Armv7E-M: Cortex-M4, M7; Armv8-M Mainline with `dsp`: Cortex-M33): the
//! int8 / uint8 convolution, depthwise convolution and fully connected layers of [`crate::quant`] on `SXTB16` (two int8
//! weights widened in one instruction) and `SMLAD` (two 16-bit multiply-accumulates), with
//! register-blocked tiles: four (or two) output positions per output channel for convolutions
//! ([`kernels::dot_4x1`], [`kernels::dot_2x1`]: `asm!` loops), four output channels for fully connected layers
//! ([`kernels::dot_1x4`]); depthwise convolutions one channel plane at a time on widened input
//! rows ([`depthwise`]). A convolution widens each window to 16-bit pairs once, on the stack
//! ([`window`]); a fully connected layer reads its input row in place. Weights are read in the
//! layouts the portable kernels read (OHWI, `[out, in]`).
//!
//! Used where `cfg(arm_dsp)` is set (`build.rs`); compiled on every target for the unit tests,
//! where [`dsp`] computes each instruction's arithmetic in Rust. The `unsafe` of this module is
//! the `asm!` of each instruction in [`dsp`], which touches registers only. Integer sums are
//! exact in any order (wrapping like TFLite's `int32_t`), and the requantization is the portable
//! kernels' own ([`ChannelQuant`]'s, with its per-channel constants hoisted: [`requant`]), so
//! every output has the portable path's bits.
#![allow(unsafe_code)]

mod depthwise;
mod dsp;
mod kernels;
mod requant;
mod window;

pub(crate) use depthwise::depthwise_conv2d;

use super::arm_facts::{window_words, MAX_TAPS, WINDOW_WORDS};
use crate::quant::{ChannelQuant, Conv2d, FullyConnected, QuantElem};
use requant::{by_rounding, Channel};

/// [`crate::quant::conv2d`] on the DSP kernels, if they take `p` (one group, symmetric weights,
/// windows of at most [`MAX_TAPS`] taps): returns whether it ran. Four output positions at a
/// time where four windows fit the buffer, else two.
#[inline(always)]
pub(crate) fn conv2d<T: QuantElem>(p: &Conv2d, x: &[T], w: &[i8], q: &ChannelQuant, y: &mut [T]) -> bool {
    let taps = p.taps();
    if p.groups != 1 || p.w_zero_point != 0 || taps == 0 || taps > MAX_TAPS {
        return false;
    }
    by_rounding!(q.rounding, conv2d_rounded::<T>(p, x, w, q, y));
    true
}

/// [`conv2d`] with its output stage's rounding a constant (`SINGLE`).
#[inline(always)]
fn conv2d_rounded<T: QuantElem, const SINGLE: bool>(p: &Conv2d, x: &[T], w: &[i8], q: &ChannelQuant, y: &mut [T]) {
    let mut buffer = [0u32; WINDOW_WORDS];
    if 4 * window_words(p.taps()) <= WINDOW_WORDS && p.out_h * p.out_w >= 4 {
        positions::<T, 4, SINGLE>(p, x, w, q, y, &mut buffer, kernels::dot_4x1);
    } else {
        positions::<T, 2, SINGLE>(p, x, w, q, y, &mut buffer, kernels::dot_2x1);
    }
}

/// [`conv2d`] by `L` output positions at a time: their windows gathered into `buffer`
/// interleaved ([`window`]), then each output channel's `L` sums by `dot`.
#[inline(always)]
fn positions<T: QuantElem, const L: usize, const SINGLE: bool>(
    p: &Conv2d,
    x: &[T],
    w: &[i8],
    q: &ChannelQuant,
    y: &mut [T],
    buffer: &mut [u32],
    dot: impl Fn(&[u32], &[i8], [i32; L]) -> [i32; L],
) {
    let taps = p.taps();
    let windows = &mut buffer[..L * window_words(taps)];
    let (positions, oc, ys) = (p.out_h * p.out_w, p.out_channels, p.y_strides);
    let at = |pos: usize| (pos / p.out_w, pos % p.out_w);
    for b in 0..p.batch {
        for pos in (0..positions).step_by(L) {
            // The last block repeats its last position (computed again, stored once).
            let block: [usize; L] = core::array::from_fn(|i| (pos + i).min(positions - 1));
            for (lane, &pos) in block.iter().enumerate() {
                let (oy, ox) = at(pos);
                window::gather(p, x, (b, oy, ox), windows, (L, lane));
            }
            let y_at = block.map(|pos| {
                let (oy, ox) = at(pos);
                b * ys.n + oy * ys.h + ox * ys.w
            });
            let stored = L.min(positions - pos);
            for (o, row) in w.chunks_exact(taps).enumerate().take(oc) {
                let acc = dot(windows, row, [q.bias[o]; L]);
                let channel = Channel::<SINGLE>::new(q, o, p.y_zero_point, (p.act_min, p.act_max));
                for (&y0, &a) in y_at.iter().zip(&acc).take(stored) {
                    y[y0 + o * ys.c] = channel.output(a);
                }
            }
        }
    }
}

/// [`crate::quant::fully_connected`] on the DSP kernels, if they take `p` (symmetric weights):
/// returns whether they ran.
#[inline(always)]
pub(crate) fn fully_connected<T: QuantElem>(
    p: &FullyConnected,
    x: &[T],
    w: &[i8],
    q: &ChannelQuant,
    y: &mut [T],
) -> bool {
    if p.w_zero_point != 0 || p.in_features == 0 {
        return false;
    }
    by_rounding!(q.rounding, fully_connected_rounded::<T>(p, x, w, q, y));
    true
}

/// [`fully_connected`] with its output stage's rounding a constant (`SINGLE`).
#[inline(always)]
fn fully_connected_rounded<T: QuantElem, const SINGLE: bool>(
    p: &FullyConnected,
    x: &[T],
    w: &[i8],
    q: &ChannelQuant,
    y: &mut [T],
) {
    let (k, n) = (p.in_features, p.out_features);
    for (xr, yr) in x.chunks_exact(k).zip(y.chunks_exact_mut(n)).take(p.batch) {
        for o in (0..n).step_by(4) {
            // Four output channels at a time; the last block repeats its last channel.
            let rows = [o, o + 1, o + 2, o + 3].map(|r| r.min(n - 1));
            let mut acc = rows.map(|r| q.bias[r]);
            kernels::dot_1x4(xr, rows.map(|r| &w[r * k..][..k]), &mut acc);
            for (&r, &a) in rows.iter().zip(&acc).take(n - o) {
                yr[r] = Channel::<SINGLE>::new(q, r, p.y_zero_point, (p.act_min, p.act_max)).output(a);
            }
        }
    }
}

#[cfg(test)]
mod tests;
