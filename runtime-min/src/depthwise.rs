//! The 3x3 depthwise convolution (one input channel per group), any stride, dilation and padding.
//!
//! Each output value is `act(bias + taps)` with the nine taps added in row-major tap order, which
//! is also the order in which the row-wise direct convolution accumulates (so every path gives
//! bit-identical results). Two plane kernels:
//!
//! - **Padded plane** (stride 1, zero-padded plane of at most [`PADDED_PLANE_MAX`] floats): the
//!   plane is copied into a zero-padded stack buffer, and the outputs are computed over the
//!   flattened padded rows, where every tap is one contiguous shifted slice (outputs landing in
//!   the padding columns are computed and dropped). No border cases, so small planes (KWS's
//!   25x5) run as long vector loops instead of scalar border code.
//! - **Row-wise** (everything else): the valid column range of every tap is computed once per
//!   call, not per output row, and the interior columns (all three column taps inside the
//!   input) run without per-tap range checks.

use crate::util::valid_range;
use crate::Conv2d;

/// Whether [`depthwise_3x3`] computes this convolution (3x3 kernel, one input channel per group):
/// on x86-64 builds with AVX2 and FMA only, where it beats the row-wise direct convolution; on a
/// Cortex-M4 it executed twice the instructions of the row-wise path on the KWS model.
pub(crate) fn is_depthwise_3x3(p: &Conv2d, icg: usize) -> bool {
    cfg!(all(target_arch = "x86_64", target_feature = "avx2", target_feature = "fma"))
        && icg == 1
        && p.kernel_h == 3
        && p.kernel_w == 3
}

/// Largest zero-padded plane (floats) of the padded-plane kernel: 16 KiB of stack, plus as much
/// again for its flattened output.
const PADDED_PLANE_MAX: usize = 4096;

/// Outputs per register tile of the padded-plane kernel.
const TILE: usize = 16;

/// All output planes of a 3x3 depthwise convolution with `ocg` output channels per input
/// channel: `y[n, oc] = act(bias[oc] + conv(x[n, oc / ocg], w[oc]))`.
pub(crate) fn depthwise_3x3(p: &Conv2d, ocg: usize, x: &[f32], w: &[f32], bias: Option<&[f32]>, y: &mut [f32]) {
    let in_plane = p.in_h * p.in_w;
    let out_plane = p.out_h * p.out_w;
    let mut padded = PaddedPlane::new(p);
    for n in 0..p.batch {
        for oc in 0..p.out_channels {
            let xplane = &x[(n * p.in_channels + oc / ocg) * in_plane..][..in_plane];
            let yplane = &mut y[(n * p.out_channels + oc) * out_plane..][..out_plane];
            let (wk, b) = (&w[oc * 9..][..9], bias.map_or(0.0, |b| b[oc]));
            match padded.as_mut() {
                Some(padded) => padded.conv(p, xplane, wk, b, yplane),
                None => row_wise(p, xplane, wk, b, yplane),
            }
            p.act.apply_in_place(yplane);
        }
    }
}

/// The padded-plane kernel's stack buffers: the zero-padded input plane (`rows x cols`,
/// input pixel `(ih, iw)` at `(ih + pad_top, iw + pad_left)`), and the flattened output
/// (`out[oh * cols + ow]`, columns `ow >= out_w` are dropped).
struct PaddedPlane {
    rows: usize,
    cols: usize,
    plane: [f32; PADDED_PLANE_MAX + TILE],
    out: [f32; PADDED_PLANE_MAX + TILE],
}

impl PaddedPlane {
    /// The buffers for convolution `p` (zeroed once: only the input pixels change between
    /// planes), or `None` if it is strided or its padded plane exceeds [`PADDED_PLANE_MAX`].
    fn new(p: &Conv2d) -> Option<Self> {
        let rows = p.out_h + 2 * p.dilation_h;
        let cols = p.out_w + 2 * p.dilation_w;
        (p.stride_h == 1 && p.stride_w == 1 && rows * cols <= PADDED_PLANE_MAX).then(|| PaddedPlane {
            rows,
            cols,
            plane: [0.0; PADDED_PLANE_MAX + TILE],
            out: [0.0; PADDED_PLANE_MAX + TILE],
        })
    }

    /// One output plane before the activation: `yplane = b + conv(xplane, wk)`.
    fn conv(&mut self, p: &Conv2d, xplane: &[f32], wk: &[f32], b: f32, yplane: &mut [f32]) {
        let cols = self.cols;
        // Input rows and columns that some output reads (the rest would land past the padding).
        let in_rows = p.in_h.min(self.rows - p.pad_top.min(self.rows));
        let in_cols = p.in_w.min(cols - p.pad_left.min(cols));
        for ih in 0..in_rows {
            let xrow = &xplane[ih * p.in_w..][..in_cols];
            self.plane[(ih + p.pad_top) * cols + p.pad_left..][..in_cols].copy_from_slice(xrow);
        }
        let w: [f32; 9] = wk.try_into().unwrap();
        let offsets: [usize; 9] = core::array::from_fn(|t| (t / 3) * p.dilation_h * cols + (t % 3) * p.dilation_w);
        let len = (p.out_h - 1) * cols + p.out_w;
        debug_assert!(len.next_multiple_of(TILE) + offsets[8] <= self.rows * cols + TILE);
        for (i, out) in self.out[..len.next_multiple_of(TILE)].chunks_exact_mut(TILE).enumerate() {
            let mut acc = [b; TILE];
            for (&wt, &off) in w.iter().zip(&offsets) {
                let xs: &[f32; TILE] = self.plane[i * TILE + off..][..TILE].try_into().unwrap();
                for (a, &v) in acc.iter_mut().zip(xs) {
                    *a += wt * v;
                }
            }
            out.copy_from_slice(&acc);
        }
        for (yrow, out) in yplane.chunks_exact_mut(p.out_w).zip(self.out.chunks(cols)) {
            yrow.copy_from_slice(&out[..p.out_w]);
        }
    }
}

/// One output plane before the activation, row by row: `yplane = b + conv(xplane, wk)` with `wk`
/// the 9 weights of the channel.
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
