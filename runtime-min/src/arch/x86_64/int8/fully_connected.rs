//! The int8 / uint8 fully connected layer ([`crate::quant::fully_connected`]) on a [`Dot4`]:
//! four output features at a time, each a dot product of the input row with a weight row (both
//! read in place) in 32-byte vectors, summed across lanes at the end; the `in_features % 32` last
//! products and the output stage are the portable kernel's.
//!
//! The dot product needs one unsigned operand: a uint8 input is it; for an int8 input the weights
//! are (`w ^ 0x80 = w + 128`), and `128 * sum(x)`, computed once per input row, is subtracted
//! (the offset on the operand read once per row, not on every weight's channel).

use super::dot::Dot4;
use super::vector::{bytes, load32, splat, sum_lanes, xor_bytes};
use crate::quant::{ChannelQuant, FullyConnected, QuantElem};

/// Input features per vector.
const LANES: usize = 32;

/// Whether [`fully_connected`] takes `p`: symmetric weights and at least one vector of input
/// features.
pub(super) fn takes(p: &FullyConnected) -> bool {
    p.w_zero_point == 0 && p.in_features >= LANES
}

/// [`crate::quant::fully_connected`] for a `p` that [`takes`] accepts.
#[inline(always)]
pub(super) fn fully_connected<D: Dot4, T: QuantElem>(
    p: &FullyConnected,
    x: &[T],
    w: &[i8],
    q: &ChannelQuant,
    y: &mut [T],
) {
    let (k, n) = (p.in_features, p.out_features);
    let main = k - k % LANES;
    let signed = T::MIN < 0;
    let wb = bytes(w);
    for (xr, yr) in x.chunks_exact(k).zip(y.chunks_exact_mut(n)).take(p.batch) {
        let xb = bytes(xr);
        // 128 * sum(x) over the vectorised features, for an int8 input.
        let offset =
            if signed { xr[..main].iter().fold(0i32, |s, v| s.wrapping_add(v.to_i32())).wrapping_mul(128) } else { 0 };
        for o in (0..n).step_by(4) {
            // Four output features at a time; the last block repeats its last feature.
            let rows: [usize; 4] = core::array::from_fn(|r| (o + r).min(n - 1));
            let mut acc = [splat(0); 4];
            for c in (0..main).step_by(LANES) {
                let xv = load32(&xb[c..]);
                if signed {
                    let xs = D::signed(xv);
                    for (acc, &r) in acc.iter_mut().zip(&rows) {
                        *acc = D::dot(*acc, D::unsigned(xor_bytes(load32(&wb[r * k + c..]), 0x80)), xs);
                    }
                } else {
                    let xu = D::unsigned(xv);
                    for (acc, &r) in acc.iter_mut().zip(&rows) {
                        *acc = D::dot(*acc, xu, D::signed(load32(&wb[r * k + c..])));
                    }
                }
            }
            for (&r, acc) in rows.iter().zip(acc).take(n - o) {
                let wr = &w[r * k..][..k];
                let tail = wr[main..]
                    .iter()
                    .zip(&xr[main..])
                    .fold(0i32, |s, (&wv, xv)| s.wrapping_add(wv as i32 * xv.to_i32()));
                let sum = sum_lanes(acc).wrapping_sub(offset).wrapping_add(tail);
                yr[r] = q.output(r, q.bias[r].wrapping_add(sum), p.y_zero_point, p.act_min, p.act_max);
            }
        }
    }
}
