//! The int8 / uint8 depthwise convolution ([`crate::quant::depthwise_conv2d`]) on eight `i32`
//! lanes: per input channel the input rows of a band of output rows are staged ([`Band`]), and
//! each of the channel's output channels is computed over the band's virtual positions, eight at
//! a time, as `bias[o] + sum_t (w[t][o] - w_zero_point) * x_t` with every tap `t` one contiguous
//! 8-byte load widened to `i32` (padding: the input zero point, as in the portable kernel), then
//! the portable output stage ([`Requant8`]) into a buffer of the band's virtual positions, whose
//! output columns are copied out row by row. Integer sums: the portable kernel's bits.

use core::mem::MaybeUninit;

use super::band::{zeroed, Band};
use super::requant::{elem, narrow, Requant8};
use super::vector::{add, mul, splat, widen8};
use crate::arch::x86_64_facts::{
    INT8_BAND_BYTES, INT8_DEPTHWISE_BYTES, INT8_DEPTHWISE_MAX_TAPS, INT8_DEPTHWISE_OUT_BYTES,
};
use crate::quant::{ChannelQuant, Conv2d, QuantElem};

// The buffers below take what the kernel facts say.
const _: () =
    assert!(INT8_DEPTHWISE_BYTES == INT8_BAND_BYTES + INT8_DEPTHWISE_OUT_BYTES + INT8_DEPTHWISE_MAX_TAPS * (8 + 4));

/// Output positions per vector.
const LANES: usize = 8;

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
                    let mut wt = [0i32; INT8_DEPTHWISE_MAX_TAPS];
                    for (t, v) in wt[..taps].iter_mut().enumerate() {
                        *v = w[t * p.out_channels + o] as i32 - p.w_zero_point;
                    }
                    let wt = &wt[..taps];
                    let stage = Requant8::new::<T>(q, o, p.y_zero_point, (p.act_min, p.act_max));
                    let bias = splat(q.bias[o]);
                    for (q0, dst) in (0..virtual_len).step_by(LANES).zip(out.chunks_exact_mut(LANES)) {
                        let mut acc = bias;
                        for (&at, &wv) in tap_at.iter().zip(wt) {
                            acc = add(acc, mul(widen8(&staged[at + q0..], signed), splat(wv)));
                        }
                        dst.copy_from_slice(&narrow(stage.apply(acc)));
                    }
                    for (r, row) in out.chunks_exact(band.vw).take(rows).enumerate() {
                        let base = b * ys.n + o * ys.c + (oy0 + r) * ys.h;
                        if ys.w == 1 {
                            y[base..][..p.out_w].iter_mut().zip(row).for_each(|(d, &v)| *d = elem(v));
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
