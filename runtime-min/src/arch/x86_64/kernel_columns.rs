//! A stride-1 convolution whose output rows are not whole vectors (ResNet's 8x8 maps, 7x7 ones)
//! on the column tiles of [`fma`](super::fma), over its input staged once per kernel column.
//!
//! The column tiles put vectors along the output positions and read each tap's values for a
//! vector of positions with one load. Where an output row is whole vectors that load reads an
//! input row in place ([`fma`](super::fma)'s `conv_cols`); where it is not, a vector spans output
//! rows, and the input values under one tap for consecutive rows are not consecutive (an input
//! row is wider than an output row by the kernel's reach and its padding). Staged as
//! `[channel][kernel column][row][output column]`, kernel column `kw`'s copy holding at output
//! column `ow` of a row the input value at column `ow + kw * dilation_w - pad_left` (zero in the
//! padding), every tap is one run over all positions: tap `(ic, kh, kw)` of position `(oh, ow)`
//! is at `(ic * kernel_w + kw) * rows * out_w + (oh + kh * dilation_h) * out_w + ow`. Three
//! copies of the input for a 3x3 kernel, where im2col makes nine.

use super::depthwise::zeroed;
use super::fma::{copy_row, BRows, ColumnRun, Epilogue, COLS_MAX_VECTORS};
use super::lanes::Lanes;
use crate::arch::x86_64_facts::{FMA_CONV_BAND, FMA_NB as NB};
use crate::conv_shape::Conv2d;
use crate::epilogue::{Bias, Gemm};
use crate::util::valid_range;
use core::mem::MaybeUninit;

/// How [`conv_kernel_columns`] stages a convolution: its input rows (padding included) per
/// kernel column, and the input channels staged at a time.
pub(super) struct KernelColumns {
    rows: usize,
    channels: usize,
}

impl KernelColumns {
    /// The staging of `p` (its GEMM `g`), when it applies: on instruction sets with registers to
    /// spare (AVX-512), weights packed k-major, stride 1, output rows narrower than a row tile
    /// ([`NB`] positions, which the row tiles could not take whole), the positions filling
    /// tiles of four vectors (the last one's last vector may be partly masked: 8x8 and 7x7 maps,
    /// not 6x6), and at least one input channel's copies fitting [`FMA_CONV_BAND`]. Chunks of
    /// input channels are as even as their number allows.
    #[inline(always)]
    pub(super) fn of<S: Lanes>(p: &Conv2d, g: &Gemm) -> Option<Self> {
        let (rows, l) = (p.rows_read(p.out_h), S::L);
        let applies = S::REGISTERS >= 32 && g.a_rs == 1 && p.stride_h == 1 && p.stride_w == 1 && p.out_w < NB;
        let fills = g.n.is_multiple_of(4 * l) || g.n % (4 * l) > 3 * l;
        let most = FMA_CONV_BAND / (p.kernel_w * rows * p.out_w);
        let icg = g.k / (p.kernel_h * p.kernel_w);
        (applies && fills && most > 0).then(|| KernelColumns { rows, channels: icg.div_ceil(icg.div_ceil(most)) })
    }

    /// Values of one kernel column's copy of one input channel.
    #[inline(always)]
    fn copy_len(&self, p: &Conv2d) -> usize {
        self.rows * p.out_w
    }

    /// Copies input channels `0..channels` of `x` into `buf` as `[channel][kernel column][row]
    /// [output column]`, zeros where a tap reads the padding.
    #[inline(always)]
    fn stage<'a, S: Lanes>(
        &self,
        p: &Conv2d,
        x: &[f32],
        channels: usize,
        buf: &'a mut [MaybeUninit<f32>],
    ) -> &'a [f32] {
        let len = self.copy_len(p);
        let staged = zeroed(buf, channels * p.kernel_w * len);
        for (i, copy) in staged.chunks_exact_mut(len).enumerate() {
            let (ic, kw) = (i / p.kernel_w, i % p.kernel_w);
            // Output columns `lo..hi` read input columns `lo + left..hi + left`.
            let left = (kw * p.dilation_w) as isize - p.pad_left as isize;
            let (lo, hi) = valid_range(p.out_w, 1, left, p.in_w);
            if lo >= hi {
                continue;
            }
            for (r, row) in copy.chunks_exact_mut(p.out_w).enumerate() {
                let ih = r as isize - p.pad_top as isize;
                if !(0..p.in_h as isize).contains(&ih) {
                    continue;
                }
                let src = &x[(ic * p.in_h + ih as usize) * p.in_w..][..p.in_w];
                copy_row::<S>(&mut row[lo..hi], &src[(lo as isize + left) as usize..]);
            }
        }
        staged
    }
}

/// Convolution `p` (its GEMM `g`: output channels by positions, weights `w` packed k-major) over
/// its input `x` staged by [`KernelColumns`], a chunk of input channels at a time, on the column
/// tiles: B's row for tap `(ic, kh, kw)` is the run at that tap's staged offset ([`BRows`]: runs
/// of `kernel_w` rows, one per kernel row and channel), as a matrix product's ([`ColumnRun::all`]:
/// 6 output channels by four vectors of positions). Chunks after the first add to C's sums
/// and the last applies the epilogue: each element is still the k-ascending chain of fused
/// multiply-adds (partial sums are stored and reloaded exactly), the bits of the row tiles.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn conv_kernel_columns<S: Lanes>(
    p: &Conv2d,
    g: &Gemm,
    staging: &KernelColumns,
    x: &[f32],
    w: &[f32],
    bias: Bias,
    y: &mut [f32],
    buf: &mut [MaybeUninit<f32>],
) {
    let taps = p.kernel_h * p.kernel_w;
    let (icg, len) = (g.k / taps, staging.copy_len(p));
    for ic0 in (0..icg).step_by(staging.channels) {
        let channels = staging.channels.min(icg - ic0);
        let staged = staging.stage::<S>(p, &x[ic0 * p.in_h * p.in_w..], channels, buf);
        let gc = Gemm { k: channels * taps, add_to_c: ic0 > 0, epilogue: ic0 + channels == icg, ..*g };
        let rows = BRows {
            across: COLS_MAX_VECTORS,
            next: 0,
            runs: channels * p.kernel_h,
            len: p.kernel_w,
            step: len,
            per_plane: p.kernel_h,
            row: p.dilation_h * p.out_w,
            plane: p.kernel_w * len,
            phase: 0,
        };
        let a = &w[ic0 * taps * g.a_cs..];
        let run = ColumnRun { g: &gc, a, b: staged, bias, epilogue: Epilogue::of::<S>(&gc, bias), rows };
        let n_main = g.n - g.n % (2 * S::L);
        run.all::<S>(n_main, g.n - n_main, y);
    }
}
