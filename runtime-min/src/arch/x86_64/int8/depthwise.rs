//! The int8 / uint8 depthwise convolution ([`crate::quant::depthwise_conv2d`]) on `i32` lanes:
//! per input channel the input rows of a band of output rows are staged ([`Band`]) and widened
//! once to `i16`, and each of the channel's output channels is computed over the band's virtual
//! positions, 16 at a time, as `bias[o] + sum_t (w[t][o] - w_zero_point) * x_t` (padding: the
//! input zero point, as in the portable kernel). The taps go by pairs whose staged inputs are
//! adjacent (`(ky, kx)` and `(ky, kx + 1)` at stride 1, `(ky, kx)` and `(ky, kx + 2)` at stride 2;
//! a tap with no such partner pairs with a zero weight): one load of 16 `i16` at the pair's
//! first input holds, in each `i32` lane, the pair's two inputs of an even position, one load a
//! value later those of an odd position, each multiplied by the pair of weights (`VPMADDWD`:
//! products of at most 255 x 255, exact) with no shuffle. Then the portable output stage
//! ([`Requant8`]) on the even and the odd positions, interleaved back into a buffer of the band's
//! virtual positions, whose output columns are copied out row by row. Integer sums: the portable
//! kernel's bits.

use core::mem::MaybeUninit;

use super::band::{zeroed, Band};
use super::requant::{elem, narrow16, Requant8};
use super::vector::{bytes_mut, copy_short, interleave32, load_i16, madd, splat, store16, widen_into};
use crate::arch::x86_64_facts::{
    INT8_DEPTHWISE_BYTES, INT8_DEPTHWISE_MAX_TAPS, INT8_DEPTHWISE_OUT_BYTES, INT8_DEPTHWISE_STAGED,
};
use crate::quant::{ChannelQuant, Conv2d, QuantElem};

// The buffers below take what the kernel facts say.
const _: () = assert!(
    INT8_DEPTHWISE_BYTES
        == INT8_DEPTHWISE_STAGED * 3
            + INT8_DEPTHWISE_OUT_BYTES
            + INT8_DEPTHWISE_MAX_TAPS
                * (size_of::<(usize, usize, Option<usize>)>() + 4 + size_of::<usize>() + size_of::<bool>())
);

/// Output positions per block: two vectors of `i32`.
const LANES: usize = 16;

/// The staging geometry of `p`: one channel, the band's outputs (rounded up to whole vectors)
/// fitting the output buffer and its staged bytes (rounded up to whole vectors) the staging
/// buffers; fewer rows per band until they do.
fn band(p: &Conv2d) -> Option<Band> {
    let mut max_virtual = INT8_DEPTHWISE_OUT_BYTES - LANES;
    loop {
        let band = Band::new(p, 1, max_virtual)?;
        if band.bytes(p).next_multiple_of(LANES) <= INT8_DEPTHWISE_STAGED {
            return Some(band);
        }
        max_virtual = band.rows / 2 * band.vw;
    }
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
    let multiplier = p.out_channels / p.in_channels;
    let staged_len = band.bytes(p).next_multiple_of(LANES);
    let mut staged = [MaybeUninit::uninit(); INT8_DEPTHWISE_STAGED];
    let staged = zeroed(&mut staged, staged_len);
    let mut wide = [MaybeUninit::uninit(); INT8_DEPTHWISE_STAGED];
    let wide: &mut [i16] = zeroed(&mut wide, staged_len);
    let mut out = [MaybeUninit::uninit(); INT8_DEPTHWISE_OUT_BYTES];
    let out = zeroed(&mut out, (band.rows * band.vw).next_multiple_of(LANES));
    // The taps by pairs: (the first's staged offset, the first tap, the second tap if any).
    let mut pair_of = [(0usize, 0usize, None); INT8_DEPTHWISE_MAX_TAPS];
    let pair_count = tap_pairs(p, &band, &mut pair_of);
    let pair_of = &pair_of[..pair_count];
    let (signed, ys) = (T::MIN < 0, p.y_strides);
    for b in 0..p.batch {
        for c in 0..p.in_channels {
            for oy0 in (0..p.out_h).step_by(band.rows) {
                band.stage(p, x, (b, c), oy0, 0, staged);
                widen_into(staged, signed, wide);
                let rows = band.rows.min(p.out_h - oy0);
                let virtual_len = rows * band.vw;
                for o in c * multiplier..(c + 1) * multiplier {
                    // Each pair's weights `(w[t] - w_zero_point, w[u] - w_zero_point)` as `i16`.
                    let mut wt = [0i32; INT8_DEPTHWISE_MAX_TAPS];
                    let weight = |t: usize| (w[t * p.out_channels + o] as i32 - p.w_zero_point) as i16 as u16 as i32;
                    for (v, &(_, t, u)) in wt.iter_mut().zip(pair_of) {
                        *v = weight(t) | u.map_or(0, weight) << 16;
                    }
                    let wt = &wt[..pair_count];
                    let stage = Requant8::new::<T>(q, o, p.y_zero_point, (p.act_min, p.act_max));
                    let bias = splat(q.bias[o]);
                    for (q0, dst) in (0..virtual_len).step_by(LANES).zip(out.chunks_exact_mut(LANES)) {
                        // Lane j of `even`: position `q0 + 2j`; of `odd`: `q0 + 2j + 1`.
                        let (mut even, mut odd) = (bias, bias);
                        for (&(at, ..), &wv) in pair_of.iter().zip(wt) {
                            let wv = splat(wv);
                            even = madd(even, load_i16(&wide[at + q0..]), wv);
                            odd = madd(odd, load_i16(&wide[at + q0 + 1..]), wv);
                        }
                        let [first, second] = interleave32(stage.apply(even), stage.apply(odd));
                        store16(dst, narrow16::<true>(first, second));
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

/// Fills `pairs` with the taps of `p` by pairs whose staged inputs are adjacent (the second's
/// offset the first's plus one), each tap in one pair, a tap with no partner alone; returns how
/// many pairs.
fn tap_pairs(p: &Conv2d, band: &Band, pairs: &mut [(usize, usize, Option<usize>)]) -> usize {
    let taps = p.kernel_h * p.kernel_w;
    let mut at = [0usize; INT8_DEPTHWISE_MAX_TAPS];
    for (t, a) in at[..taps].iter_mut().enumerate() {
        *a = band.tap(p, 0, t / p.kernel_w, t % p.kernel_w);
    }
    let mut paired = [false; INT8_DEPTHWISE_MAX_TAPS];
    let mut count = 0;
    for t in 0..taps {
        if paired[t] {
            continue;
        }
        paired[t] = true;
        let partner = (t + 1..taps).find(|&u| !paired[u] && at[u] == at[t] + 1);
        if let Some(u) = partner {
            paired[u] = true;
        }
        pairs[count] = (at[t], t, partner);
        count += 1;
    }
    count
}
