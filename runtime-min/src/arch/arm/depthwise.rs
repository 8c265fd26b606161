//! Depthwise convolution (one output channel per input channel) on `SMLAD`, one channel plane at a
//! time: each input row the kernel reads is widened once into words `Q[j] = (R[j], R[j + 1])`,
//! `R` the row padded with the input zero point, so that a kernel row of `kw` taps at any column
//! is `ceil(kw / 2)` words and as many `SMLAD`s against the kernel row's weight pairs (the last
//! pair's high weight zero when `kw` is odd). Rows stay widened while the window slides down
//! (a ring of [`DEPTHWISE_MAX_KERNEL`] rows).

use super::dsp::{pack, smlad};
use super::requant::{by_rounding, Channel};
use crate::arch::arm_facts::{DEPTHWISE_MAX_KERNEL as KMAX, DEPTHWISE_ROW_WORDS as ROW};
use crate::quant::{ChannelQuant, Conv2d, QuantElem};

/// Words of one widened row for `p`, if the kernel takes `p` (one input channel per output
/// channel, symmetric weights, no dilation, a kernel of at most [`KMAX`] rows and columns).
fn row_words(p: &Conv2d) -> Option<usize> {
    let takes = p.groups == p.in_channels
        && p.out_channels == p.in_channels
        && p.w_zero_point == 0
        && p.dilation_h == 1
        && p.dilation_w == 1
        && (1..=KMAX).contains(&p.kernel_h)
        && (1..=KMAX).contains(&p.kernel_w)
        && p.out_w > 0;
    let words = (p.out_w - 1) * p.stride_w + p.kernel_w.div_ceil(2) * 2;
    (takes && words <= ROW).then_some(words)
}

/// [`crate::quant::depthwise_conv2d`] on `SMLAD`, if the kernel takes `p` ([`row_words`]):
/// returns whether it ran.
#[inline(always)]
pub(crate) fn depthwise_conv2d<T: QuantElem>(p: &Conv2d, x: &[T], w: &[i8], q: &ChannelQuant, y: &mut [T]) -> bool {
    let Some(words) = row_words(p) else { return false };
    by_rounding!(q.rounding, depthwise_rounded::<T>(p, x, w, q, y, words));
    true
}

/// [`depthwise_conv2d`] on rows of `words` words, with its output stage's rounding a constant
/// (`SINGLE`).
#[inline(always)]
fn depthwise_rounded<T: QuantElem, const SINGLE: bool>(
    p: &Conv2d,
    x: &[T],
    w: &[i8],
    q: &ChannelQuant,
    y: &mut [T],
    words: usize,
) {
    let (kh, kw, oc) = (p.kernel_h, p.kernel_w, p.out_channels);
    let (xs, ys) = (p.x_strides, p.y_strides);
    let pairs = kw.div_ceil(2);
    let mut rows = [[0u32; ROW]; KMAX];
    for b in 0..p.batch {
        for o in 0..oc {
            // The kernel's weight pairs, row by row (1HWO: tap (ky, kx) at (ky * kw + kx) * oc + o).
            let tap = |ky: usize, kx: usize| if kx < kw { w[(ky * kw + kx) * oc + o] as i32 } else { 0 };
            let mut wp = [[0u32; KMAX / 2]; KMAX];
            for (ky, row) in wp.iter_mut().enumerate().take(kh) {
                for (k, v) in row.iter_mut().enumerate().take(pairs) {
                    *v = pack(tap(ky, 2 * k), tap(ky, 2 * k + 1));
                }
            }
            let channel = Channel::<SINGLE>::new(q, o, p.y_zero_point, (p.act_min, p.act_max));
            // Which padded input row each ring slot holds.
            let mut held = [usize::MAX; KMAX];
            let plane = b * xs.n + o * xs.c;
            for oy in 0..p.out_h {
                for ky in 0..kh {
                    let r = oy * p.stride_h + ky;
                    if held[r % KMAX] != r {
                        held[r % KMAX] = r;
                        widen_row(p, x, plane, r, &mut rows[r % KMAX][..words]);
                    }
                }
                let ring: [&[u32]; KMAX] =
                    core::array::from_fn(|ky| &rows[(oy * p.stride_h + ky.min(kh - 1)) % KMAX][..words]);
                let y_row = &mut y[b * ys.n + o * ys.c + oy * ys.h..];
                let out = |ox: usize, acc: i32| (ox * ys.w, channel.output(acc));
                match (kh, pairs) {
                    (3, 2) => output_row::<T, 3, 2>(p, &ring, &wp, q.bias[o], y_row, out),
                    (1, 1) => output_row::<T, 1, 1>(p, &ring, &wp, q.bias[o], y_row, out),
                    (2, 1) => output_row::<T, 2, 1>(p, &ring, &wp, q.bias[o], y_row, out),
                    (3, 1) => output_row::<T, 3, 1>(p, &ring, &wp, q.bias[o], y_row, out),
                    (4, 1) => output_row::<T, 4, 1>(p, &ring, &wp, q.bias[o], y_row, out),
                    (1, 2) => output_row::<T, 1, 2>(p, &ring, &wp, q.bias[o], y_row, out),
                    (2, 2) => output_row::<T, 2, 2>(p, &ring, &wp, q.bias[o], y_row, out),
                    _ => output_row::<T, 4, 2>(p, &ring, &wp, q.bias[o], y_row, out),
                }
            }
        }
    }
}

/// One output row of one channel, for a kernel of `KH` rows of `PAIRS` weight pairs: `ring[ky]`
/// is the widened input row under kernel row `ky`, `out` the output index and value of column
/// `ox` for an accumulator.
#[inline(always)]
fn output_row<T: QuantElem, const KH: usize, const PAIRS: usize>(
    p: &Conv2d,
    ring: &[&[u32]; KMAX],
    wp: &[[u32; KMAX / 2]; KMAX],
    bias: i32,
    y: &mut [T],
    out: impl Fn(usize, i32) -> (usize, T),
) {
    for ox in 0..p.out_w {
        let j = ox * p.stride_w;
        let mut acc = bias;
        for ky in 0..KH {
            let row = &ring[ky][j..j + 2 * PAIRS];
            for k in 0..PAIRS {
                acc = smlad(wp[ky][k], row[2 * k], acc);
            }
        }
        let (at, v) = out(ox, acc);
        y[at] = v;
    }
}

/// Padded input row `r` of the plane at `plane` as `words` pairs `(R[j], R[j + 1])`: the row's
/// `R` values in order (left padding, the input row, right padding), each word written when its
/// high value is known.
#[inline(always)]
fn widen_row<T: QuantElem>(p: &Conv2d, x: &[T], plane: usize, r: usize, words: &mut [u32]) {
    let (xs, pad) = (p.x_strides, p.x_zero_point);
    let total = words.len() + 1;
    let left = p.pad_left.min(total);
    let (inner, row) = match r.checked_sub(p.pad_top).filter(|&iy| iy < p.in_h) {
        Some(iy) => (p.in_w.min(total - left), &x[plane + iy * xs.h..]),
        None => (0, &x[..0]),
    };
    let mut out = words.iter_mut();
    let mut prev = if left > 0 || inner == 0 { pad } else { row[0].to_i32() };
    let mut put = |v: i32| {
        if let Some(word) = out.next() {
            *word = pack(prev, v);
        }
        prev = v;
    };
    (1..left).for_each(|_| put(pad));
    let first = usize::from(left == 0 && inner > 0);
    if xs.w == 1 {
        row[first..inner].iter().for_each(|v| put(v.to_i32()));
    } else {
        (first..inner).for_each(|ix| put(row[ix * xs.w].to_i32()));
    }
    (left + inner..total).for_each(|_| put(pad));
}
