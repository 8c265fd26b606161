//! Arm's DSP extension (Armv7E-M: Cortex-M4, M7; Armv8-M Mainline with `dsp`: Cortex-M33): the
//! int8 / uint8 convolution, depthwise convolution and fully connected layers of [`crate::quant`] on `SXTB16` (two int8
//! weights widened in one instruction) and `SMLAD` (two 16-bit multiply-accumulates), with
//! register-blocked tiles: two output positions by two output channels for convolutions
//! ([`kernels::dot_2x2`]), four output channels for fully connected layers
//! ([`kernels::dot_1x4`]); depthwise convolutions one channel plane at a time on widened input
//! rows ([`depthwise`]). A convolution widens each window to 16-bit pairs once, on the stack
//! ([`window`]); a fully connected layer reads its input row in place. Weights are read in the
//! layouts the portable kernels read (OHWI, `[out, in]`).
//!
//! Used where `cfg(arm_dsp)` is set (`build.rs`); compiled on every target for the unit tests,
//! where [`dsp`] computes each instruction's arithmetic in Rust. The `unsafe` of this module is
//! the `asm!` of each instruction in [`dsp`], which touches registers only. Integer sums are
//! exact in any order (wrapping like TFLite's `int32_t`), and the requantization is the portable
//! kernels' own ([`ChannelQuant`]), so every output has the portable path's bits.
#![allow(unsafe_code)]

mod depthwise;
mod dsp;
mod kernels;
mod window;

pub(crate) use depthwise::depthwise_conv2d;

use super::arm_facts::{self, MAX_TAPS, WINDOW_WORDS};
use crate::quant::{ChannelQuant, Conv2d, FullyConnected, QuantElem};

/// [`crate::quant::conv2d`] on the DSP kernels, if they take `p` (one group, symmetric weights,
/// windows of at most [`MAX_TAPS`] taps): returns whether it ran.
pub(crate) fn conv2d<T: QuantElem>(p: &Conv2d, x: &[T], w: &[i8], q: &ChannelQuant, y: &mut [T]) -> bool {
    let taps = p.taps();
    if p.groups != 1 || p.w_zero_point != 0 || taps == 0 || taps > MAX_TAPS {
        return false;
    }
    let n = arm_facts::window_words(taps);
    let mut buffer = [0u32; WINDOW_WORDS];
    let (first, second) = buffer.split_at_mut(WINDOW_WORDS / 2);
    let mut windows = [&mut first[..n], &mut second[..n]];
    let (positions, oc, ys) = (p.out_h * p.out_w, p.out_channels, p.y_strides);
    let at = |pos: usize| (pos / p.out_w, pos % p.out_w);
    for b in 0..p.batch {
        for pos in (0..positions).step_by(2) {
            // Two positions at a time; an odd last one is computed twice, stored once.
            let pair = [pos, (pos + 1).min(positions - 1)];
            for (window, &pos) in windows.iter_mut().zip(&pair) {
                let (oy, ox) = at(pos);
                window::gather(p, x, (b, oy, ox), window);
            }
            let y_at = pair.map(|pos| {
                let (oy, ox) = at(pos);
                b * ys.n + oy * ys.h + ox * ys.w
            });
            for o in (0..oc).step_by(2) {
                let rows = [o, (o + 1).min(oc - 1)];
                let mut acc = [[q.bias[rows[0]], q.bias[rows[1]]]; 2];
                kernels::dot_2x2([&*windows[0], &*windows[1]], rows.map(|r| &w[r * taps..][..taps]), &mut acc);
                for (i, &y0) in y_at.iter().enumerate().take(if pair[1] == pair[0] { 1 } else { 2 }) {
                    for (j, &r) in rows.iter().enumerate().take(if rows[1] == rows[0] { 1 } else { 2 }) {
                        y[y0 + r * ys.c] = q.output(r, acc[i][j], p.y_zero_point, p.act_min, p.act_max);
                    }
                }
            }
        }
    }
    true
}

/// [`crate::quant::fully_connected`] on the DSP kernels, if they take `p` (symmetric weights):
/// returns whether they ran.
pub(crate) fn fully_connected<T: QuantElem>(
    p: &FullyConnected,
    x: &[T],
    w: &[i8],
    q: &ChannelQuant,
    y: &mut [T],
) -> bool {
    let (k, n) = (p.in_features, p.out_features);
    if p.w_zero_point != 0 || k == 0 {
        return false;
    }
    for (xr, yr) in x.chunks_exact(k).zip(y.chunks_exact_mut(n)).take(p.batch) {
        for o in (0..n).step_by(4) {
            // Four output channels at a time; the last block repeats its last channel.
            let rows = [o, o + 1, o + 2, o + 3].map(|r| r.min(n - 1));
            let mut acc = rows.map(|r| q.bias[r]);
            kernels::dot_1x4(xr, rows.map(|r| &w[r * k..][..k]), &mut acc);
            for (&r, &a) in rows.iter().zip(&acc).take(n - o) {
                yr[r] = q.output(r, a, p.y_zero_point, p.act_min, p.act_max);
            }
        }
    }
    true
}

#[cfg(test)]
mod tests;
