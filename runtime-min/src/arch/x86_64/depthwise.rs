//! The 3x3 depthwise convolution (one input channel per group), any stride, dilation and padding,
//! on x86-64 with AVX2 + FMA or AVX-512F: plain Rust that the entry points of [`super`] compile
//! with those features (everything here is `#[inline(always)]`), where its long loops vectorise.
//!
//! Each output value is `act(bias + taps)` with the taps added in row-major tap order, which is
//! also the order in which the row-wise direct convolution accumulates, so all paths agree bit
//! for bit (the padded plane also adds its padding taps as `w * 0`, which for finite weights can
//! only change the sign of a zero sum). Two plane kernels:
//!
//! - **Padded plane** (any stride, zero-padded plane of at most [`PADDED_PLANE_MAX`] floats): the
//!   plane is copied once into a zero-padded stack buffer split into stride phases, and the
//!   outputs are computed over the flattened output rows, where every tap is one contiguous
//!   shifted slice (outputs landing in the padding columns are computed and dropped). No border
//!   cases, so small planes (KWS's 25x5) run as long vector loops instead of scalar border code.
//! - **Row-wise** (larger planes): the valid column range of every tap is computed once per
//!   call, not per output row, and the interior columns (all three column taps inside the
//!   input) run without per-tap range checks.

// `PADDED_PLANE_MAX`: the largest zero-padded plane (floats) of the padded-plane kernel, 16 KiB
// of stack plus as much again for its flattened output; `TILE`: outputs per register tile.
use super::copy::{copy_even, copy_short};
use super::depthwise_io::DepthwiseOperands;
use super::lanes::Lanes;
use crate::arch::x86_64_facts::{
    DEPTHWISE_PLANE_BYTES, DEPTHWISE_PLANE_MAX as PADDED_PLANE_MAX, DEPTHWISE_TILE as TILE,
};
use crate::conv_shape::Conv2d;
use crate::util::valid_range;
use core::mem::MaybeUninit;

/// The padded-plane kernel's two stack arrays (the padded plane, the flattened output), of which
/// a layer zeroes and uses only a part, aligned to a cache line (the output tiles' stores then
/// never straddle two).
#[repr(C, align(64))]
struct Buffers([[MaybeUninit<f32>; PADDED_PLANE_MAX + TILE]; 2]);

// What the kernel facts say [`depthwise_3x3`]'s buffers take (it keeps them even when a plane is
// too large for them and the row-wise kernel runs).
const _: () =
    assert!(core::mem::size_of::<Buffers>() + core::mem::size_of::<Option<PaddedPlane>>() == DEPTHWISE_PLANE_BYTES);

/// The output planes of channels `c0..` of a 3x3 depthwise convolution with `ocg` output
/// channels per input channel: `y[n, oc] = act(bias[oc] + conv(x[n, oc / ocg], w[oc]))`, one
/// plane after another (so in a shared region too: output plane `oc` ends before input plane
/// `oc`, and the planes after it are read later).
#[inline(always)]
pub(super) fn depthwise_3x3<S: Lanes>(p: &Conv2d, ops: DepthwiseOperands, c0: usize) {
    let DepthwiseOperands { ocg, w, bias, mut planes } = ops;
    let in_plane = p.in_h * p.in_w;
    let out_plane = p.out_h * p.out_w;
    let mut buffers = Buffers([[MaybeUninit::uninit(); PADDED_PLANE_MAX + TILE]; 2]);
    let mut padded = PaddedPlane::new(p, &mut buffers);
    for n in 0..p.batch {
        for oc in c0..p.out_channels {
            let (xplane, yplane) = planes.plane(
                ((n * p.in_channels + oc / ocg) * in_plane, in_plane),
                ((n * p.out_channels + oc) * out_plane, out_plane),
            );
            let (w0, a_rs, ws) = p.weights.gemm_operand(oc / ocg, ocg, 9);
            let wk: [f32; 9] = core::array::from_fn(|t| w[w0 + (oc % ocg) * a_rs + t * ws]);
            let b = bias.row(oc);
            let wk = &wk[..];
            match padded.as_mut() {
                Some(padded) => padded.conv::<S>(p, xplane, wk, b, yplane),
                None => {
                    row_wise(p, xplane, wk, b, yplane);
                    p.act.apply_in_kernel(yplane);
                }
            }
        }
    }
}

/// The padded-plane kernel's stack buffers. `plane` holds the zero-padded input plane (input
/// pixel `(ih, iw)` at padded position `(ih + pad_top, iw + pad_left)`) split into
/// `stride_h x stride_w` phases ([`Phases`]). Output `(oh, ow)` then reads tap `(kh, kw)` at
/// `oh * phase_cols + ow` plus a fixed offset per tap, so every tap is one contiguous slice over
/// the flattened output `out[oh * phase_cols + ow]` (columns `ow >= out_w` are computed and
/// dropped), at any stride.
///
/// Both are the parts a layer uses of the caller's [`Buffers`] ([`Phases::plane_len`] and
/// [`Phases::out_len`] values), zeroed once per call: zeroing the whole arrays (32 KiB, a memset)
/// took longer than a small layer's arithmetic (MobileNetV2's 6x6 and 3x3 planes, the bands of a
/// tiled layer) and pushed its input out of the L1 cache.
struct PaddedPlane<'a> {
    phases: Phases,
    /// Where tap `(kh, kw)` of output `(0, 0)` is in `plane`: `at(kh * dilation_h, kw * dilation_w)`.
    offsets: [usize; 9],
    plane: &'a mut [f32],
    out: &'a mut [f32],
}

/// The phase blocks of a padded plane: padded position `(r, c)` is row `r / stride_h`, column
/// `c / stride_w` of phase `(r % stride_h, c % stride_w)`, each phase a `rows x cols` row-major
/// block.
#[derive(Clone, Copy)]
struct Phases {
    rows: usize,
    cols: usize,
}

impl Phases {
    /// Index in the plane of padded position `(r, c)`.
    #[inline(always)]
    fn at(self, p: &Conv2d, r: usize, c: usize) -> usize {
        let phase = (r % p.stride_h) * p.stride_w + c % p.stride_w;
        (phase * self.rows + r / p.stride_h) * self.cols + c / p.stride_w
    }

    /// The plane's values the outputs read: the phases, plus the slack of one tile (read by the
    /// last tile at the last phases' offsets, for outputs that are dropped).
    #[inline(always)]
    fn plane_len(self, p: &Conv2d) -> usize {
        p.stride_h * p.stride_w * self.rows * self.cols + TILE
    }

    /// The flattened outputs, in whole tiles (never more than [`Phases::plane_len`]).
    #[inline(always)]
    fn out_len(self, p: &Conv2d) -> usize {
        ((p.out_h - 1) * self.cols + p.out_w).next_multiple_of(TILE)
    }
}

impl<'a> PaddedPlane<'a> {
    /// The buffers for convolution `p` in `buffers` (zeroed once: only the input pixels change
    /// between planes), or `None` if its padded plane exceeds [`PADDED_PLANE_MAX`].
    #[inline(always)]
    fn new(p: &Conv2d, buffers: &'a mut Buffers) -> Option<Self> {
        // The padded extent read by the outputs, split into phases.
        let rows = ((p.out_h - 1) * p.stride_h + 2 * p.dilation_h + 1).div_ceil(p.stride_h);
        let cols = ((p.out_w - 1) * p.stride_w + 2 * p.dilation_w + 1).div_ceil(p.stride_w);
        let phases = Phases { rows, cols };
        if phases.plane_len(p) > PADDED_PLANE_MAX + TILE {
            return None;
        }
        let [plane, out] = &mut buffers.0;
        Some(PaddedPlane {
            phases,
            offsets: core::array::from_fn(|t| phases.at(p, t / 3 * p.dilation_h, t % 3 * p.dilation_w)),
            plane: zeroed(plane, phases.plane_len(p)),
            out: zeroed(out, phases.out_len(p)),
        })
    }

    /// One output plane: `yplane = act(b + conv(xplane, wk))`.
    #[inline(always)]
    fn conv<S: Lanes>(&mut self, p: &Conv2d, xplane: &[f32], wk: &[f32], b: f32, yplane: &mut [f32]) {
        let (sh, sw, ph) = (p.stride_h, p.stride_w, self.phases);
        let (plane, out) = (&mut *self.plane, &mut *self.out);
        // Input rows and columns that some output reads (the rest would land past the extent).
        let in_rows = p.in_h.min((ph.rows * sh).saturating_sub(p.pad_top));
        let in_cols = p.in_w.min((ph.cols * sw).saturating_sub(p.pad_left));
        // Input columns iw0, iw0 + sw, ... land in one phase row, contiguous; the phase row of
        // padded row r is tracked as (r % sh, r / sh) without divisions.
        let row_phase = sw * ph.rows * ph.cols;
        for iw0 in 0..sw.min(in_cols) {
            let count = (in_cols - iw0).div_ceil(sw);
            let mut start = ph.at(p, p.pad_top, iw0 + p.pad_left);
            let mut phase_row = p.pad_top % sh;
            for xrow in xplane.chunks_exact(p.in_w).take(in_rows) {
                let (dst, src) = (&mut plane[start..][..count], &xrow[iw0..in_cols]);
                match sw {
                    1 => copy_short(dst, src),
                    2 => copy_even::<S>(dst, src),
                    _ => dst.iter_mut().zip(src.iter().step_by(sw)).for_each(|(d, &v)| *d = v),
                }
                phase_row += 1;
                if phase_row == sh {
                    // Back to the first row phase, one row further down.
                    phase_row = 0;
                    start = start + ph.cols - (sh - 1) * row_phase;
                } else {
                    start += row_phase;
                }
            }
        }
        let w: [f32; 9] = wk.try_into().unwrap();
        for (i, out) in out.chunks_exact_mut(TILE).enumerate() {
            let mut acc = [b; TILE];
            for (&wt, &off) in w.iter().zip(&self.offsets) {
                let xs: &[f32; TILE] = plane[i * TILE + off..][..TILE].try_into().unwrap();
                for (a, &v) in acc.iter_mut().zip(xs) {
                    *a += wt * v;
                }
            }
            // The activation of every output here, where the values are in registers (the
            // dropped columns' too).
            p.act.apply_in_kernel(&mut acc);
            out.copy_from_slice(&acc);
        }
        for (yrow, out) in yplane.chunks_exact_mut(p.out_w).zip(out.chunks(ph.cols)) {
            copy_short(yrow, out);
        }
    }
}

/// The first `len` floats of `buf`, zeroed (only what a layer uses is written).
#[inline(always)]
pub(super) fn zeroed(buf: &mut [MaybeUninit<f32>], len: usize) -> &mut [f32] {
    let buf = &mut buf[..len];
    buf.fill(MaybeUninit::new(0.0));
    // SAFETY: every element of `buf` was just initialised, and `MaybeUninit<f32>` has the layout
    // of `f32`.
    unsafe { &mut *(buf as *mut [MaybeUninit<f32>] as *mut [f32]) }
}

/// `buf` as the values written into it.
///
/// # Safety
/// Every element of `buf` has been written.
#[inline(always)]
pub(super) unsafe fn written(buf: &[MaybeUninit<f32>]) -> &[f32] {
    // SAFETY: the caller's guarantee; `MaybeUninit<f32>` has the layout of `f32`.
    unsafe { &*(buf as *const [MaybeUninit<f32>] as *const [f32]) }
}

/// One output plane before the activation, row by row: `yplane = b + conv(xplane, wk)` with `wk`
/// the 9 weights of the channel.
#[inline(always)]
fn row_wise(p: &Conv2d, xplane: &[f32], wk: &[f32], b: f32, yplane: &mut [f32]) {
    let w: [[f32; 3]; 3] = [wk[0..3].try_into().unwrap(), wk[3..6].try_into().unwrap(), wk[6..9].try_into().unwrap()];
    // Column taps: input column of output column `ow` is `ow * stride_w + col_off[kw]`.
    let col_off: [isize; 3] = core::array::from_fn(|kw| (kw * p.dilation_w) as isize - p.pad_left as isize);
    let ranges: [(usize, usize); 3] = core::array::from_fn(|kw| valid_range(p.out_w, p.stride_w, col_off[kw], p.in_w));
    let inner_lo = ranges.iter().map(|r| r.0).max().unwrap_or(0);
    let inner_hi = ranges.iter().map(|r| r.1).min().unwrap_or(0).max(inner_lo);
    for (oh, yrow) in yplane.chunks_exact_mut(p.out_w).enumerate() {
        let rows: [Option<&[f32]>; 3] = core::array::from_fn(|kh| {
            let ih = (oh * p.stride_h + kh * p.dilation_h) as isize - p.pad_top as isize;
            (0..p.in_h as isize).contains(&ih).then(|| &xplane[ih as usize * p.in_w..][..p.in_w])
        });
        for ow in (0..inner_lo).chain(inner_hi..p.out_w) {
            let mut acc = b;
            for (row, wrow) in rows.iter().zip(&w) {
                let Some(xrow) = row else { continue };
                for kw in 0..3 {
                    if (ranges[kw].0..ranges[kw].1).contains(&ow) {
                        acc += wrow[kw] * xrow[((ow * p.stride_w) as isize + col_off[kw]) as usize];
                    }
                }
            }
            yrow[ow] = acc;
        }
        if inner_hi > inner_lo {
            let inner = &mut yrow[inner_lo..inner_hi];
            let first = ((inner_lo * p.stride_w) as isize + col_off[0]) as usize;
            match rows {
                [Some(r0), Some(r1), Some(r2)] if p.stride_w == 1 && p.dilation_w == 1 => {
                    let span = inner.len() + 2;
                    let (r0, r1, r2) = (&r0[first..][..span], &r1[first..][..span], &r2[first..][..span]);
                    for (i, y) in inner.iter_mut().enumerate() {
                        let mut acc = b;
                        acc += w[0][0] * r0[i];
                        acc += w[0][1] * r0[i + 1];
                        acc += w[0][2] * r0[i + 2];
                        acc += w[1][0] * r1[i];
                        acc += w[1][1] * r1[i + 1];
                        acc += w[1][2] * r1[i + 2];
                        acc += w[2][0] * r2[i];
                        acc += w[2][1] * r2[i + 1];
                        acc += w[2][2] * r2[i + 2];
                        *y = acc;
                    }
                }
                _ => {
                    let (s, d) = (p.stride_w, p.dilation_w);
                    for (i, y) in inner.iter_mut().enumerate() {
                        let x0 = first + i * s;
                        let mut acc = b;
                        for (row, wrow) in rows.iter().zip(&w) {
                            if let Some(xrow) = row {
                                acc += wrow[0] * xrow[x0];
                                acc += wrow[1] * xrow[x0 + d];
                                acc += wrow[2] * xrow[x0 + 2 * d];
                            }
                        }
                        *y = acc;
                    }
                }
            }
        }
    }
}
