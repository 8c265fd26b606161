//! The dense convolutions of [`crate::conv2d_blocked`] (one group, any kernel, stride 1 or 2) on
//! channel-blocked activations, written once over [`Lanes`].
//!
//! Per band of output rows, the zero-padded input rows they read are staged for every block of
//! input channels (`[block][row][column][16]`, copied from the blocked input as it lies; a
//! first layer's NCHW input of fewer than 16 channels as one block, a channel per lane, by
//! [`stage_nchw_rows`]), so every tap of every position is one broadcast from the stage; a
//! blocked input without padding is read in place, the stage of all its rows. Tiles of up to
//! two vectors of output channels by up to [`tile_width`] positions of one output row: per
//! depth `(input channel, kernel row, kernel column)`, ascending, the vectors of its k-major
//! weights times one broadcast value per position, a fused multiply-add each, the sums stored as
//! whole vectors into their blocks (no transposes: in NCHW a tile of channel vectors is
//! transposed into rows of positions). Each output is the k-ascending chain from zero, padding taps adding `w * 0`,
//! then `+ bias` and the activation: the bits of the NCHW implicit GEMM. A row's last positions,
//! fewer than a tile, are computed by a tile ending at its last position (overlapping the one
//! before, storing the same values there).

use super::blocked::{stage_rows, store_tile, Stage, STAGE};
use super::depthwise::zeroed;
use super::lanes::Lanes;
use crate::blocked::{reads_nchw, CHANNEL_BLOCK};
use crate::conv_shape::Conv2d;
use core::mem::MaybeUninit;

/// The dense convolution `p` (one group, k-major weights, whole blocks of channels; its input
/// rows for one output row fit the stage: [`crate::conv2d_blocked_applies`]).
#[inline(always)]
pub(super) fn dense<S: Lanes>(p: &Conv2d, x: &[f32], w: &[f32], bias: Option<&[f32]>, y: &mut [f32]) {
    let b = CHANNEL_BLOCK;
    let (k, m, taps) = (p.in_channels, p.out_channels, p.kernel_h * p.kernel_w);
    let (nchw, blocks) = (reads_nchw(p), k.div_ceil(b));
    let cols = p.cols_read();
    let (w0, _, a_cs) = p.weights.gemm_operand(0, m, k * taps);
    let w = &w[w0..][..(k * taps - 1) * a_cs + m];
    let (in_plane, out_plane) = (p.in_h * p.in_w, p.out_h * p.out_w);
    // Without padding the input is read in place: its blocks are a stage of all its rows.
    if !nchw && p.pad_top == 0 && p.pad_left == 0 && cols <= p.in_w && p.rows_read(p.out_h) <= p.in_h {
        let d = Dense { p, w, a_cs, bias, lanes: b, block: in_plane * b, row: p.in_w * b };
        for n in 0..p.batch {
            let x = &x[n * k * in_plane..][..k * in_plane];
            d.band::<S>(x, &mut y[n * m * out_plane..][..m * out_plane], (0, p.out_h));
        }
        return;
    }
    let band = p.rows_fitting(STAGE / (cols * blocks * b)).min(p.out_h);
    assert!(band > 0, "conv2d_blocked_applies checked that a band fits the stage");
    // Stage floats per block of input channels; the padding columns stay zero, the staged rows
    // are written whole or as the input's.
    let block = p.rows_read(band) * cols * b;
    let mut buf = Stage([MaybeUninit::uninit(); STAGE]);
    let stage = zeroed(&mut buf.0, blocks * block);
    let d = Dense { p, w, a_cs, bias, lanes: k.min(b), block, row: cols * b };
    for n in 0..p.batch {
        let x = &x[n * k * in_plane..][..k * in_plane];
        let y = &mut y[n * m * out_plane..][..m * out_plane];
        let mut oh0 = 0;
        while oh0 < p.out_h {
            let rows = band.min(p.out_h - oh0);
            match nchw {
                true => stage_nchw_rows(p, cols, oh0, rows, x, stage),
                false => {
                    for (xb, sb) in x.chunks_exact(in_plane * b).zip(stage.chunks_exact_mut(block)) {
                        stage_rows(p, cols, oh0, rows, xb, sb);
                    }
                }
            }
            d.band::<S>(stage, y, (oh0, rows));
            oh0 += rows;
        }
    }
}

/// The input rows of output rows `oh0..oh0 + rows` of a convolution that [`reads_nchw`] (fewer
/// than 16 input channels), staged from its NCHW image `x` as one block: padded row `j` (input
/// row `oh0 * stride_h + j - pad_top`) at `stage[j * cols * 16..]`, input column `iw` at column
/// `pad_left + iw`, input channel `ic` in lane `ic`; rows outside the input zero (the padding
/// columns, and the lanes past the channels, which nothing reads, stay as they are).
#[inline(always)]
fn stage_nchw_rows(p: &Conv2d, cols: usize, oh0: usize, rows: usize, x: &[f32], stage: &mut [f32]) {
    let (b, plane) = (CHANNEL_BLOCK, p.in_h * p.in_w);
    let width = p.in_w.min(cols - p.pad_left);
    for (j, srow) in stage[..p.rows_read(rows) * cols * b].chunks_exact_mut(cols * b).enumerate() {
        let ih = (oh0 * p.stride_h + j) as isize - p.pad_top as isize;
        if !(0..p.in_h as isize).contains(&ih) {
            srow.fill(0.0);
            continue;
        }
        let inside = &mut srow[p.pad_left * b..][..width * b];
        for ic in 0..p.in_channels {
            let xrow = &x[ic * plane + ih as usize * p.in_w..][..width];
            for (column, &v) in inside.chunks_exact_mut(b).zip(xrow) {
                column[ic] = v;
            }
        }
    }
}

/// One image's dense convolution on its staged bands: the convolution, its weights `w` (depth
/// `d`'s at `w[d * a_cs..]`), bias, the input channels per block (16, or all of an NCHW input's),
/// the stage's floats per block of input channels and per row.
struct Dense<'a> {
    p: &'a Conv2d,
    w: &'a [f32],
    a_cs: usize,
    bias: Option<&'a [f32]>,
    lanes: usize,
    block: usize,
    row: usize,
}

/// Positions per tile of an output row `width` positions wide, for tiles of `R` vectors of
/// channels: the candidate that computes the fewest positions (tiles overlapping at a row's
/// end compute some twice), the wider on a tie; a row narrower than every candidate is one
/// tile. On AVX-512 (32 registers) 16 or 8 positions by one vector, 12 or 8 by two; on AVX2 6
/// or 4 by two (a block).
#[inline(always)]
fn tile_width<S: Lanes, const R: usize>(width: usize) -> usize {
    let candidates: [usize; 2] = match (S::REGISTERS >= 32, R) {
        (true, 1) => [16, 8],
        (true, _) => [12, 8],
        (false, _) => [6, 4],
    };
    match width < candidates[1] {
        true => width,
        false => {
            let cost = |c: usize| width.div_ceil(c) * c + usize::from(c < candidates[0]);
            candidates.into_iter().filter(|&c| c <= width).min_by_key(|&c| cost(c)).unwrap_or(width)
        }
    }
}

impl Dense<'_> {
    /// Output rows `oh0..oh0 + rows`, all output channels, from `stage` (output row `oh0`'s
    /// first kernel row at its start).
    #[inline(always)]
    fn band<S: Lanes>(&self, stage: &[f32], y: &mut [f32], (oh0, rows): (usize, usize)) {
        let (m, mut m0) = (self.p.out_channels, 0);
        while m0 < m {
            let vectors = 2.min((m - m0) / S::L);
            match (vectors, self.p.stride_w) {
                (2, 1) => self.rows::<S, 2, 16>(stage, y, (oh0, rows), m0),
                (2, _) => self.rows::<S, 2, 32>(stage, y, (oh0, rows), m0),
                (_, 1) => self.rows::<S, 1, 16>(stage, y, (oh0, rows), m0),
                (_, _) => self.rows::<S, 1, 32>(stage, y, (oh0, rows), m0),
            }
            m0 += vectors * S::L;
        }
    }

    /// Output channels `m0..m0 + R * L` of output rows `oh0..oh0 + rows` (the band staged),
    /// `STEP` stage floats between neighbouring positions (16 times the column stride).
    #[inline(always)]
    fn rows<S: Lanes, const R: usize, const STEP: usize>(
        &self,
        stage: &[f32],
        y: &mut [f32],
        (oh0, rows): (usize, usize),
        m0: usize,
    ) {
        let p = self.p;
        let c = tile_width::<S, R>(p.out_w);
        for oh in oh0..oh0 + rows {
            let first = (oh - oh0) * p.stride_h * self.row;
            let mut ow = 0;
            while ow < p.out_w {
                let ow0 = ow.min(p.out_w - c);
                let at = (first + ow0 * STEP, oh * p.out_w + ow0);
                match c {
                    16 => self.tile::<S, R, 16, STEP>(stage, at, y, m0),
                    12 => self.tile::<S, R, 12, STEP>(stage, at, y, m0),
                    8 => self.tile::<S, R, 8, STEP>(stage, at, y, m0),
                    7 => self.tile::<S, R, 7, STEP>(stage, at, y, m0),
                    6 => self.tile::<S, R, 6, STEP>(stage, at, y, m0),
                    5 => self.tile::<S, R, 5, STEP>(stage, at, y, m0),
                    4 => self.tile::<S, R, 4, STEP>(stage, at, y, m0),
                    3 => self.tile::<S, R, 3, STEP>(stage, at, y, m0),
                    2 => self.tile::<S, R, 2, STEP>(stage, at, y, m0),
                    _ => self.tile::<S, R, 1, STEP>(stage, at, y, m0),
                }
                ow += c;
            }
        }
    }

    /// Output channels `m0..m0 + R * L` at the `C` positions from `q0`, whose first one's
    /// top-left tap of the first input block is at `stage[s0]`.
    #[inline(always)]
    fn tile<S: Lanes, const R: usize, const C: usize, const STEP: usize>(
        &self,
        stage: &[f32],
        (s0, q0): (usize, usize),
        y: &mut [f32],
        m0: usize,
    ) {
        let (l, b, p) = (S::L, CHANNEL_BLOCK, self.p);
        let (blocks, kh_n, kw_n) = (p.in_channels.div_ceil(b), p.kernel_h, p.kernel_w);
        let last = s0 + (blocks - 1) * self.block + (kh_n - 1) * self.row + (kw_n - 1) * b + (C - 1) * STEP;
        assert!(last + b <= stage.len() && m0 + R * l <= p.out_channels);
        assert!(self.w.len() == (p.in_channels * kh_n * kw_n - 1) * self.a_cs + p.out_channels);
        let (xp, wp) = (stage.as_ptr(), self.w.as_ptr());
        let mut acc = [[S::zero(); R]; C];
        // The weights of depth `(ic, kh, kw)`, ascending, at `w[wk + m0..]`.
        let mut wk = m0;
        for kb in 0..blocks {
            for lane in 0..self.lanes {
                let mut tap_row = s0 + kb * self.block + lane;
                for _ in 0..kh_n {
                    for kw in 0..kw_n {
                        let mut av = [S::zero(); R];
                        for (r, a) in av.iter_mut().enumerate() {
                            // SAFETY: depth `d < in_channels * taps` and `m0 + (r + 1) * L <=
                            // out_channels`, so the vector ends at or before `(depths - 1) * a_cs
                            // + out_channels`, the length of `w` (asserted above).
                            *a = unsafe { S::load_ptr(wp.add(wk + r * l)) };
                        }
                        let xq = tap_row + kw * b;
                        for (c, acc_c) in acc.iter_mut().enumerate() {
                            // SAFETY: block `kb < blocks`, lane `< 16`, kernel row and column
                            // inside the kernel and position `c < C`: at most `last + 15`,
                            // inside `stage` (asserted above).
                            let bv = S::splat(unsafe { *xp.add(xq + c * STEP) });
                            for (s, &a) in acc_c.iter_mut().zip(&av) {
                                *s = S::fma(a, bv, *s);
                            }
                        }
                        wk += self.a_cs;
                    }
                    tap_row += self.row;
                }
            }
        }
        store_tile::<S, R, C>(self.bias, p.act, acc, y, p.out_h * p.out_w, (m0, q0));
    }
}
