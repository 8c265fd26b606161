//! The int8 / uint8 depthwise convolution ([`crate::quant::depthwise_conv2d`]) on `i32` lanes:
//! per input channel the input rows of a band of output rows are staged ([`Band`]), and each of
//! the channel's output channels is computed over the band's virtual positions, 16 at a time, as
//! `bias[o] + sum_t (w[t][o] - w_zero_point) * x_t`: every tap `t` one contiguous 16-byte load
//! widened to `i16` (padding: the input zero point, as in the portable kernel), two taps at a
//! time interleaved into pairs and multiplied by the pair of their weights (`VPMADDWD`: products
//! of at most 255 x 255, exact). Then the portable output stage ([`Requant8`]) into a buffer of
//! the band's virtual positions, whose output columns are copied out row by row. Integer sums:
//! the portable kernel's bits.

use core::mem::MaybeUninit;

use super::band::{zeroed, Band};
use super::requant::{elem, narrow16, Requant8};
use super::vector::{bytes_mut, copy_short, madd, pairs, splat, store16, widen16};
use crate::arch::x86_64_facts::{
    INT8_BAND_BYTES, INT8_DEPTHWISE_BYTES, INT8_DEPTHWISE_MAX_TAPS, INT8_DEPTHWISE_OUT_BYTES,
};
use crate::quant::{ChannelQuant, Conv2d, QuantElem};

// The buffers below take what the kernel facts say.
const _: () = assert!(
    INT8_DEPTHWISE_BYTES
        == INT8_BAND_BYTES + INT8_DEPTHWISE_OUT_BYTES + INT8_DEPTHWISE_MAX_TAPS * 8 + INT8_DEPTHWISE_MAX_TAPS / 2 * 4
);

/// Output positions per block: two vectors of `i32`.
const LANES: usize = 16;

/// The staging geometry of `p`: one channel, the band's outputs (rounded up to whole vectors)
/// fitting the output buffer.
fn band(p: &Conv2d) -> Option<Band> {
    Band::new(p, 1, INT8_DEPTHWISE_OUT_BYTES - LANES)
}

/// Whether [`depthwise_conv2d`] takes `p`: an input zero point of the input's type, at most
/// [`INT8_DEPTHWISE_MAX_TAPS`] taps, and one output row fitting the buffers.
pub(super) fn takes<T: QuantElem>(p: &Conv2d) -> bool {
    (T::MIN..=T::MAX).contains(&p.x_zero_point)
        && p.kernel_h * p.kernel_w <= INT8_DEPTHWISE_MAX_TAPS
        && p.out_h * p.out_w > 0
        && band(p).is_some()
}

/// [`crate::quant::depthwise_conv2d`] for a `p` that [`takes`] accepts.
#[inline(always)]
pub(super) fn depthwise_conv2d<T: QuantElem>(p: &Conv2d, x: &[T], w: &[i8], q: &ChannelQuant, y: &mut [T]) {
    let band = band(p).expect("takes() checked that a row fits");
    let taps = p.kernel_h * p.kernel_w;
    let multiplier = p.out_channels / p.in_channels;
    let mut staged = [MaybeUninit::uninit(); INT8_BAND_BYTES];
    let staged = zeroed(&mut staged, band.bytes(p));
    let mut out = [MaybeUninit::uninit(); INT8_DEPTHWISE_OUT_BYTES];
    let out = zeroed(&mut out, (band.rows * band.vw).next_multiple_of(LANES));
    let mut tap_at = [0usize; INT8_DEPTHWISE_MAX_TAPS];
    for (t, at) in tap_at[..taps].iter_mut().enumerate() {
        *at = band.tap(p, 0, t / p.kernel_w, t % p.kernel_w);
    }
    let tap_at = &tap_at[..taps];
    let (signed, ys) = (T::MIN < 0, p.y_strides);
    for b in 0..p.batch {
        for c in 0..p.in_channels {
            for oy0 in (0..p.out_h).step_by(band.rows) {
                band.stage(p, x, (b, c), oy0, 0, staged);
                let rows = band.rows.min(p.out_h - oy0);
                let virtual_len = rows * band.vw;
                for o in c * multiplier..(c + 1) * multiplier {
                    // Weight pairs `(w[t] - w_zero_point, w[t + 1] - w_zero_point)` as `i16`, the
                    // last one of an odd count with a zero (and a tap read twice).
                    let mut wt = [0i32; INT8_DEPTHWISE_MAX_TAPS / 2];
                    let weight = |t: usize| (w[t * p.out_channels + o] as i32 - p.w_zero_point) as i16 as u16 as i32;
                    for (j, v) in wt[..taps.div_ceil(2)].iter_mut().enumerate() {
                        let second = if 2 * j + 1 < taps { weight(2 * j + 1) } else { 0 };
                        *v = weight(2 * j) | second << 16;
                    }
                    let (wt, at) = (&wt[..taps.div_ceil(2)], tap_at.as_chunks::<2>());
                    let stage = Requant8::new::<T>(q, o, p.y_zero_point, (p.act_min, p.act_max));
                    let bias = splat(q.bias[o]);
                    for (q0, dst) in (0..virtual_len).step_by(LANES).zip(out.chunks_exact_mut(LANES)) {
                        // Lanes of `acc[0]`: positions 0-3 and 8-11; of `acc[1]`: 4-7 and 12-15.
                        let mut acc = [bias; 2];
                        let taps_of = at.0.iter().map(|&[a, b]| [a, b]).chain(at.1.iter().map(|&a| [a, a]));
                        for ([a, b], &wv) in taps_of.zip(wt) {
                            let [lo, hi] =
                                pairs(widen16(&staged[a + q0..], signed), widen16(&staged[b + q0..], signed));
                            let wv = splat(wv);
                            acc = [madd(acc[0], lo, wv), madd(acc[1], hi, wv)];
                        }
                        store16(dst, narrow16::<true>(stage.apply(acc[0]), stage.apply(acc[1])));
                    }
                    for (r, row) in out.chunks_exact(band.vw).take(rows).enumerate() {
                        let base = b * ys.n + o * ys.c + (oy0 + r) * ys.h;
                        if ys.w == 1 {
                            copy_short(bytes_mut(&mut y[base..][..p.out_w]), row);
                        } else {
                            for (ox, &v) in row[..p.out_w].iter().enumerate() {
                                y[base + ox * ys.w] = elem(v);
                            }
                        }
                    }
                }
            }
        }
    }
}
