//! Global average pooling's sums on x86-64: `L` planes at a time (`L` lanes of [`Lanes`]), their
//! values transposed `L` positions at a time ([`Lanes::transpose`]) into vectors holding one
//! position of every plane, added in position order. The portable fold
//! ([`crate::pool`]'s `global_fold`) adds a plane's values one after another from `0.0`, one
//! chain per plane, 8 planes in flight; these are the same additions in the same order, each
//! lane one plane's chain (KWS's 64 planes of 125 values: 3.2 to 0.9 us on their own, Zen 4).

use super::lanes::Lanes;
use crate::arch::x86_64_facts::PLANE_SUMS_FLOATS;

/// `y[c] = 0.0 + x[c * plane] + x[c * plane + 1] + ...` (`plane = x.len() / y.len()`, in that
/// order) for the first planes, a whole number of blocks of `L`; returns how many (the rest are
/// the caller's).
#[inline(always)]
pub(super) fn plane_sums<S: Lanes>(x: &[f32], y: &mut [f32]) -> usize {
    let l = S::L;
    let planes = y.len() / l * l;
    if planes == 0 {
        return 0;
    }
    let plane = x.len() / y.len();
    // Position `i0 + i` of the block's planes at `lanes[i * L..]`.
    let mut lanes = [0.0; PLANE_SUMS_FLOATS];
    for (yc, block) in y[..planes].chunks_exact_mut(l).zip(x.chunks_exact(l * plane)) {
        let mut acc = S::zero();
        for i0 in (0..plane).step_by(l) {
            let n = l.min(plane - i0);
            S::transpose(&block[i0..], plane, n, &mut lanes, l);
            for position in lanes.chunks_exact(l).take(n) {
                acc = S::add(acc, S::load(position));
            }
        }
        S::store(yc, acc);
    }
    planes
}
