//! Softmax and LogSoftmax over one axis.

use crate::util::fold_contig;

/// Number of inner positions processed together when the softmax axis is
/// not innermost (bounds the stack use to two arrays of this many floats).
const SOFTMAX_BLOCK: usize = 64;

/// Stack bytes of the softmax kernels' local arrays: the running maxima and sums of a block.
pub(crate) const SOFTMAX_STACK_BYTES: usize = 2 * core::mem::size_of::<[f32; SOFTMAX_BLOCK]>();

#[inline(always)]
fn fmax(a: f32, b: f32) -> f32 {
    if b > a || b.is_nan() {
        b
    } else {
        a
    }
}

/// Shared driver over the `[outer, axis_len, inner]` view. For each
/// softmax vector with maximum `m` and `s = sum(exp(x - m))`, first writes
/// `exp(x - m)` (`exp_pass`) then calls `fin(&mut y, x, m, s)` per element.
#[inline(always)]
fn softmax_impl(
    x: &[f32],
    y: &mut [f32],
    outer: usize,
    axis_len: usize,
    inner: usize,
    fin: impl Fn(&mut f32, f32, f32, f32) + Copy,
) {
    let block = axis_len * inner;
    if block == 0 {
        return;
    }
    let x = &x[..outer * block];
    let y = &mut y[..outer * block];
    if inner == 1 {
        for (xr, yr) in x.chunks_exact(axis_len).zip(y.chunks_exact_mut(axis_len)) {
            let m = fold_contig(f32::NEG_INFINITY, xr, f32::NEG_INFINITY, |v| v, fmax);
            let mut s = 0.0;
            for (yv, &xv) in yr.iter_mut().zip(xr) {
                let e = libm::expf(xv - m);
                *yv = e;
                s += e;
            }
            for (yv, &xv) in yr.iter_mut().zip(xr) {
                fin(yv, xv, m, s);
            }
        }
        return;
    }
    for (xb, yb) in x.chunks_exact(block).zip(y.chunks_exact_mut(block)) {
        let mut i0 = 0;
        while i0 < inner {
            let w = SOFTMAX_BLOCK.min(inner - i0);
            let mut m = [f32::NEG_INFINITY; SOFTMAX_BLOCK];
            let mut s = [0.0f32; SOFTMAX_BLOCK];
            let (m, s) = (&mut m[..w], &mut s[..w]);
            for xr in xb.chunks_exact(inner) {
                for (mv, &xv) in m.iter_mut().zip(&xr[i0..i0 + w]) {
                    *mv = fmax(*mv, xv);
                }
            }
            for (xr, yr) in xb.chunks_exact(inner).zip(yb.chunks_exact_mut(inner)) {
                let it = yr[i0..i0 + w].iter_mut().zip(&xr[i0..i0 + w]);
                for ((yv, &xv), (&mv, sv)) in it.zip(m.iter().zip(s.iter_mut())) {
                    let e = libm::expf(xv - mv);
                    *yv = e;
                    *sv += e;
                }
            }
            for (xr, yr) in xb.chunks_exact(inner).zip(yb.chunks_exact_mut(inner)) {
                let it = yr[i0..i0 + w].iter_mut().zip(&xr[i0..i0 + w]);
                for ((yv, &xv), (&mv, &sv)) in it.zip(m.iter().zip(s.iter())) {
                    fin(yv, xv, mv, sv);
                }
            }
            i0 += w;
        }
    }
}

/// ONNX Softmax (opset >= 13 semantics) over the middle axis of `x` viewed
/// as `[outer, axis_len, inner]` (row-major):
/// `y = exp(x - max) / sum(exp(x - max))` along that axis. Numerically
/// stable; uses no scratch.
pub fn softmax(x: &[f32], y: &mut [f32], outer: usize, axis_len: usize, inner: usize) {
    softmax_impl(x, y, outer, axis_len, inner, |yv, _, _, s| *yv /= s);
}

/// ONNX LogSoftmax over the middle axis of `[outer, axis_len, inner]`:
/// `y = x - max - ln(sum(exp(x - max)))`. Numerically stable; uses no
/// scratch.
pub fn log_softmax(x: &[f32], y: &mut [f32], outer: usize, axis_len: usize, inner: usize) {
    softmax_impl(x, y, outer, axis_len, inner, |yv, xv, m, s| *yv = xv - m - libm::logf(s));
}
