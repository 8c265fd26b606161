//! The int8 / uint8 depthwise convolution ([`crate::quant::depthwise_conv2d`]) on eight `i32`
//! lanes: per input channel the input rows of a band of output rows are staged ([`Band`]), and
//! each of the channel's output channels is computed over the band's virtual positions, eight at
//! a time, as `bias[o] + sum_t (w[t][o] - w_zero_point) * x_t` with every tap `t` one contiguous
//! 8-byte load widened to `i32` (padding: the input zero point, as in the portable kernel), then
//! the portable output stage ([`Requant8`]). Integer sums: the portable kernel's bits.

use super::band::{Band, Outputs};
use super::requant::{elem, narrow, Requant8};
use super::vector::{add, mul, splat, widen8};
use crate::arch::x86_64_facts::{INT8_BAND_BYTES, INT8_DEPTHWISE_BYTES, INT8_DEPTHWISE_MAX_TAPS};
use crate::quant::{ChannelQuant, Conv2d, QuantElem};

// The buffers below take what the kernel facts say.
const _: () = assert!(INT8_DEPTHWISE_BYTES == INT8_BAND_BYTES + INT8_DEPTHWISE_MAX_TAPS * (8 + 4));

/// Output positions per vector.
const LANES: usize = 8;

/// Whether [`depthwise_conv2d`] takes `p`: an input zero point of the input's type, at most
/// [`INT8_DEPTHWISE_MAX_TAPS`] taps, and one output row's input fitting the staging buffer.
pub(super) fn takes<T: QuantElem>(p: &Conv2d) -> bool {
    (T::MIN..=T::MAX).contains(&p.x_zero_point)
        && p.kernel_h * p.kernel_w <= INT8_DEPTHWISE_MAX_TAPS
        && p.out_h * p.out_w > 0
        && Band::new(p, 1).is_some()
}

/// [`crate::quant::depthwise_conv2d`] for a `p` that [`takes`] accepts.
#[inline(always)]
pub(super) fn depthwise_conv2d<T: QuantElem>(p: &Conv2d, x: &[T], w: &[i8], q: &ChannelQuant, y: &mut [T]) {
    let band = Band::new(p, 1).expect("takes() checked that a row fits");
    let taps = p.kernel_h * p.kernel_w;
    let multiplier = p.out_channels / p.in_channels;
    let mut staged = [0u8; INT8_BAND_BYTES];
    let mut tap_at = [0usize; INT8_DEPTHWISE_MAX_TAPS];
    for (t, at) in tap_at[..taps].iter_mut().enumerate() {
        *at = band.tap(p, 0, t / p.kernel_w, t % p.kernel_w);
    }
    let tap_at = &tap_at[..taps];
    let signed = T::MIN < 0;
    for b in 0..p.batch {
        for c in 0..p.in_channels {
            for oy0 in (0..p.out_h).step_by(band.rows) {
                let rows = band.rows.min(p.out_h - oy0);
                band.stage(p, x, (b, c), (oy0, rows), 0, &mut staged);
                let virtual_len = rows * band.vw;
                for o in c * multiplier..(c + 1) * multiplier {
                    let mut wt = [0i32; INT8_DEPTHWISE_MAX_TAPS];
                    for (t, v) in wt[..taps].iter_mut().enumerate() {
                        *v = w[t * p.out_channels + o] as i32 - p.w_zero_point;
                    }
                    let wt = &wt[..taps];
                    let stage = Requant8::new::<T>(q, o, p.y_zero_point, (p.act_min, p.act_max));
                    let bias = splat(q.bias[o]);
                    let oc = o * p.y_strides.c;
                    for q0 in (0..virtual_len).step_by(LANES) {
                        let mut acc = bias;
                        for (&at, &wv) in tap_at.iter().zip(wt) {
                            acc = add(acc, mul(widen8(&staged[at + q0..], signed), splat(wv)));
                        }
                        let bytes = narrow(stage.apply(acc));
                        for &(lane, at) in Outputs::new(p, &band, (b, oy0), (q0, LANES), virtual_len).iter() {
                            y[at + oc] = elem(bytes[lane]);
                        }
                    }
                }
            }
        }
    }
}
