//! The f32 max pooling ([`crate::max_pool2d`]) of 2x2 windows at stride 2 without padding
//! (LeNet- and VGG-style downsampling, MNIST's) on x86-64: `L` outputs of a row at once (`L`
//! lanes of [`Lanes`]), their windows' four values from two loads of each input row split into
//! even and odd columns ([`Lanes::deinterleave`]), combined by [`Lanes::pool_max`], the portable
//! kernel's combination lane by lane: the portable kernel's bits, NaN payloads and zeros' signs
//! included. Rows narrower than `L` outputs (MNIST's 12) are loaded and stored masked.
//!
//! The portable kernel folds a window in row-major order from minus infinity, which gives the
//! last NaN of the window if it holds one, else its first largest value (of `0.0` and `-0.0`,
//! the first). Combining two results that way (`pool_max(earlier, later)`) gives the same for
//! their values together, and minus infinity changes no result, so the window is folded as
//! `pool_max(pool_max(top left, top right), pool_max(bottom left, bottom right))`: two dependent
//! compare-and-blends per output instead of four. MNIST's 64 planes of 24x24 (Zen 4, against the
//! portable kernel compiled for AVX-512, whose loop LLVM vectorised, alternating in one process,
//! p10): 6.5 to 5.3 us folded in order, to 4.2-4.4 as a tree, to 3.2 with a plane's rows taken
//! by columns of `L` outputs, a column's width `n` (and so its load and store masks) the same for
//! all its rows (row by row, the width changing within each row, a row took about 20 cycles).

use super::copy::even_odd;
use super::lanes::Lanes;
use crate::pool::Pool2d;

/// Whether [`max_pool_square2`] takes `p`: 2x2 windows at stride 2, undilated, no padding
/// before the input, every window inside it, one depth slice per plane (2-D pooling).
#[inline(always)]
pub(super) fn takes(p: &Pool2d) -> bool {
    (p.kernel_h, p.kernel_w, p.stride_h, p.stride_w) == (2, 2, 2, 2)
        && (p.dilation_h, p.dilation_w, p.pad_top, p.pad_left) == (1, 1, 0, 0)
        && (p.kernel_d, p.stride_d, p.pad_front, p.in_d) == (1, 1, 0, p.out_d)
        && 2 * p.out_h <= p.in_h
        && 2 * p.out_w <= p.in_w
}

/// [`crate::max_pool2d`] of every plane, for a `p` that [`takes`] accepts.
#[inline(always)]
pub(super) fn max_pool_square2<S: Lanes>(p: &Pool2d, x: &[f32], y: &mut [f32]) {
    let (in_plane, out_plane) = (p.in_h * p.in_w, p.out_h * p.out_w);
    let planes = p.batch * p.channels * p.in_d;
    let (x, y) = (&x[..planes * in_plane], &mut y[..planes * out_plane]);
    for (xplane, yplane) in x.chunks_exact(in_plane).zip(y.chunks_exact_mut(out_plane)) {
        // A plane's outputs by columns of `L` (the last one `n` wide), each column's rows in one
        // loop over the same width (see the module docs).
        for ow in (0..p.out_w).step_by(S::L) {
            let n = S::L.min(p.out_w - ow);
            for (oh, yrow) in yplane.chunks_exact_mut(p.out_w).enumerate() {
                let top = &xplane[2 * oh * p.in_w + 2 * ow..][..2 * n];
                let bottom = &xplane[(2 * oh + 1) * p.in_w + 2 * ow..][..2 * n];
                let (t0, t1) = even_odd::<S>(top);
                let (b0, b1) = even_odd::<S>(bottom);
                // The portable fold from minus infinity, as a tree (see the module docs).
                let acc = S::pool_max(S::pool_max(t0, t1), S::pool_max(b0, b1));
                S::store_first(&mut yrow[ow..], acc, n);
            }
        }
    }
}
