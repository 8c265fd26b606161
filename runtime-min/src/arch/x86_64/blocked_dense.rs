//! The dense convolutions of [`crate::conv2d_blocked`] (one group, any kernel, stride 1 or 2) on
//! channel-blocked activations, written once over [`Lanes`].
//!
//! The input is read where it lies: a blocked one (`[block][row][column][16]`), or a first
//! layer's NCHW one of fewer than 16 channels (read as one block, a channel per lane). Tiles of
//! up to two vectors of output channels by up to [`tile_width`] positions of one output row: per
//! depth `(input channel, kernel row, kernel column)`, ascending, the vectors of its weights
//! (k-major, or in panels: [`crate::ConvWeights::Panels`], one sequential stream per tile) times
//! one broadcast input value per position, a fused multiply-add each, the sums
//! stored as whole vectors into their blocks (no transposes: in NCHW a tile of channel vectors is
//! transposed into rows of positions). Taps in the padding are skipped: a whole kernel row
//! outside the input for every position of a row, a kernel column outside it per position, in
//! the tiles at a row's ends only. Each output is the k-ascending chain from zero
//! (skipping a tap adds what its `w * 0` would: the chain from `+0.0` is never `-0.0`), then
//! `+ bias` and the activation: the bits of the NCHW implicit GEMM. A row's last positions, fewer
//! than a tile, are computed by a tile ending at its last position (overlapping the one before,
//! storing the same values there). Output rows go in bands whose input rows fit the L1-sized
//! [`STAGE`] (every tile of a band reads them, one vector pair of output channels after another).

use super::blocked::{store_tile, STAGE};
use super::lanes::Lanes;
use crate::blocked::{reads_nchw, CHANNEL_BLOCK};
use crate::conv_shape::{Conv2d, PANEL};

/// The dense convolution `p` (one group, weights k-major or in panels, whole blocks of channels,
/// or an NCHW input of fewer than 16: [`crate::conv2d_blocked_applies`]).
#[inline(always)]
pub(super) fn dense<S: Lanes>(p: &Conv2d, x: &[f32], w: &[f32], bias: Option<&[f32]>, y: &mut [f32]) {
    let b = CHANNEL_BLOCK;
    let (k, m, taps) = (p.in_channels, p.out_channels, p.kernel_h * p.kernel_w);
    let w = &w[..m * k * taps];
    let (in_plane, out_plane) = (p.in_h * p.in_w, p.out_h * p.out_w);
    let input = match reads_nchw(p) {
        true => Input { blocks: 1, lanes: k, block: 0, lane: in_plane, row: p.in_w },
        false => Input { blocks: k / b, lanes: b, block: in_plane * b, lane: 1, row: p.in_w * b },
    };
    let d = Dense { p, w, bias, input };
    // Output rows per band: those whose input rows, all blocks of them, fit the stage's size.
    let band = p.rows_fitting(STAGE / (p.in_w.max(1) * k.next_multiple_of(b))).clamp(1, p.out_h);
    for n in 0..p.batch {
        let x = &x[n * k * in_plane..][..k * in_plane];
        let y = &mut y[n * m * out_plane..][..m * out_plane];
        let mut oh0 = 0;
        while oh0 < p.out_h {
            let rows = band.min(p.out_h - oh0);
            d.band::<S>(x, y, (oh0, rows));
            oh0 += rows;
        }
    }
}

/// Where an input value lies, in floats: per block of 16 input channels `block` apart, `lanes`
/// channels per block (16, or all of an NCHW input's) `lane` apart, rows `row` apart; columns
/// are the tiles' `COL` apart (16 blocked, 1 NCHW).
struct Input {
    blocks: usize,
    lanes: usize,
    block: usize,
    lane: usize,
    row: usize,
}

/// One image's dense convolution: the convolution, its weights `w` (k-major or in panels), bias,
/// and where its input values lie.
struct Dense<'a> {
    p: &'a Conv2d,
    w: &'a [f32],
    bias: Option<&'a [f32]>,
    input: Input,
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

/// A tile's place: its output row `oh`, its first position's column `ow0`, its first output
/// channel `m0`.
#[derive(Clone, Copy)]
struct At {
    oh: usize,
    ow0: usize,
    m0: usize,
}

/// The positions `c < C` (bit `c`) whose tap in input column `col + c * STRIDE` lies inside the
/// input's `in_w` columns.
#[inline(always)]
fn inside_positions<const C: usize, const STRIDE: usize>(col: isize, in_w: usize) -> u32 {
    let lo = ((-col).max(0) as usize).div_ceil(STRIDE).min(C);
    let hi = ((in_w as isize - col).max(0) as usize).div_ceil(STRIDE).min(C);
    let below = |n: usize| ((1u64 << n) - 1) as u32;
    below(hi) & !below(lo)
}

/// Whether every tap of the `c` positions from column `ow0` (at column stride `stride`) lies
/// inside the input's columns: they span input columns `ow0 * stride - pad_left` on, `(c - 1) *
/// stride + kernel_w` of them.
#[inline(always)]
fn columns_inside(p: &Conv2d, ow0: usize, c: usize, stride: usize) -> bool {
    let first = ow0 * stride;
    first >= p.pad_left && first + (c - 1) * stride + p.kernel_w <= p.pad_left + p.in_w
}

impl Dense<'_> {
    /// Output rows `oh0..oh0 + rows`, all output channels.
    #[inline(always)]
    fn band<S: Lanes>(&self, x: &[f32], y: &mut [f32], (oh0, rows): (usize, usize)) {
        let (m, mut m0) = (self.p.out_channels, 0);
        while m0 < m {
            let vectors = 2.min((m - m0) / S::L);
            match (vectors, self.p.stride_w, reads_nchw(self.p)) {
                (2, 1, false) => self.rows::<S, 2, 1, 16>(x, y, (oh0, rows), m0),
                (2, _, false) => self.rows::<S, 2, 2, 16>(x, y, (oh0, rows), m0),
                (_, 1, false) => self.rows::<S, 1, 1, 16>(x, y, (oh0, rows), m0),
                (_, _, false) => self.rows::<S, 1, 2, 16>(x, y, (oh0, rows), m0),
                (2, 1, true) => self.rows::<S, 2, 1, 1>(x, y, (oh0, rows), m0),
                (2, _, true) => self.rows::<S, 2, 2, 1>(x, y, (oh0, rows), m0),
                (_, 1, true) => self.rows::<S, 1, 1, 1>(x, y, (oh0, rows), m0),
                (_, _, true) => self.rows::<S, 1, 2, 1>(x, y, (oh0, rows), m0),
            }
            m0 += vectors * S::L;
        }
    }

    /// Output channels `m0..m0 + R * L` of output rows `oh0..oh0 + rows`, at column stride
    /// `STRIDE`, input columns `COL` floats apart.
    #[inline(always)]
    fn rows<S: Lanes, const R: usize, const STRIDE: usize, const COL: usize>(
        &self,
        x: &[f32],
        y: &mut [f32],
        (oh0, rows): (usize, usize),
        m0: usize,
    ) {
        let p = self.p;
        let c = tile_width::<S, R>(p.out_w);
        for oh in oh0..oh0 + rows {
            let mut ow = 0;
            while ow < p.out_w {
                let at = At { oh, ow0: ow.min(p.out_w - c), m0 };
                match columns_inside(p, at.ow0, c, STRIDE) {
                    true => self.tile_of::<S, R, STRIDE, COL, false>(c, x, at, y),
                    false => self.tile_of::<S, R, STRIDE, COL, true>(c, x, at, y),
                }
                ow += c;
            }
        }
    }

    /// The tile of `c` positions at `at` ([`Dense::tile`] for that width).
    #[inline(always)]
    fn tile_of<S: Lanes, const R: usize, const STRIDE: usize, const COL: usize, const CHECK: bool>(
        &self,
        c: usize,
        x: &[f32],
        at: At,
        y: &mut [f32],
    ) {
        match c {
            16 => self.tile::<S, R, 16, STRIDE, COL, CHECK>(x, at, y),
            12 => self.tile::<S, R, 12, STRIDE, COL, CHECK>(x, at, y),
            8 => self.tile::<S, R, 8, STRIDE, COL, CHECK>(x, at, y),
            7 => self.tile::<S, R, 7, STRIDE, COL, CHECK>(x, at, y),
            6 => self.tile::<S, R, 6, STRIDE, COL, CHECK>(x, at, y),
            5 => self.tile::<S, R, 5, STRIDE, COL, CHECK>(x, at, y),
            4 => self.tile::<S, R, 4, STRIDE, COL, CHECK>(x, at, y),
            3 => self.tile::<S, R, 3, STRIDE, COL, CHECK>(x, at, y),
            2 => self.tile::<S, R, 2, STRIDE, COL, CHECK>(x, at, y),
            _ => self.tile::<S, R, 1, STRIDE, COL, CHECK>(x, at, y),
        }
    }

    /// Output channels `m0..m0 + R * L` at the `C` positions of row `oh` from column `ow0`.
    /// `CHECK`: whether the tile checks, per position and kernel column, that the tap lies inside
    /// the input's columns; without it, every one does (only a row's end tiles reach padding).
    #[inline(always)]
    fn tile<S: Lanes, const R: usize, const C: usize, const STRIDE: usize, const COL: usize, const CHECK: bool>(
        &self,
        x: &[f32],
        At { oh, ow0, m0 }: At,
        y: &mut [f32],
    ) {
        let (l, p, input) = (S::L, self.p, &self.input);
        let (kh_n, kw_n, taps) = (p.kernel_h, p.kernel_w, p.kernel_h * p.kernel_w);
        assert!(m0 + R * l <= p.out_channels && ow0 + C <= p.out_w);
        let depths = p.in_channels * taps;
        // Channel `m0`'s weight at depth 0, and the distance between depths; the tile's channels
        // of one depth are contiguous (k-major, or in one panel: `m0` is a multiple of `R * L`,
        // which divides [`PANEL`]).
        let (w0, depth) = p.weights.column(p.out_channels, depths, m0);
        assert!(PANEL.is_multiple_of(R * l) && m0.is_multiple_of(R * l) && self.w.len() == p.out_channels * depths);
        assert!(depth >= R * l && w0 + (depths - 1) * depth + R * l <= self.w.len());
        assert!(x.len() == p.in_channels * p.in_h * p.in_w);
        assert!(CHECK || columns_inside(p, ow0, C, STRIDE));
        // The kernel rows inside the input; the column of position 0's first tap (may be before
        // the input, by at most `pad_left`).
        let ih0 = (oh * p.stride_h) as isize - p.pad_top as isize;
        let kh_lo = (-ih0).clamp(0, kh_n as isize) as usize;
        let kh_hi = (p.in_h as isize - ih0).clamp(kh_lo as isize, kh_n as isize) as usize;
        let col0 = (ow0 * STRIDE) as isize - p.pad_left as isize;
        let (xp, wp) = (x.as_ptr(), self.w.as_ptr());
        let mut acc = [[S::zero(); R]; C];
        for kb in 0..input.blocks {
            for lane in 0..input.lanes {
                let ic = kb * CHANNEL_BLOCK + lane;
                // The tile's weights of depth `(ic, kh, kw)`, ascending, at `w[wk..]`.
                let mut wk = w0 + (ic * taps + kh_lo * kw_n) * depth;
                let ih = (ih0 + kh_lo as isize).max(0) as usize;
                let mut row = kb * input.block + lane * input.lane + ih * input.row;
                for _ in kh_lo..kh_hi {
                    for kw in 0..kw_n {
                        let mut av = [S::zero(); R];
                        for (r, a) in av.iter_mut().enumerate() {
                            // SAFETY: depth `d < depths`, so the vector ends at or before
                            // `w0 + (depths - 1) * depth + R * L`, inside `w` (asserted above).
                            *a = unsafe { S::load_ptr(wp.add(wk + r * l)) };
                        }
                        let col = col0 + kw as isize;
                        let inside = match CHECK {
                            true => inside_positions::<C, STRIDE>(col, p.in_w),
                            false => u32::MAX,
                        };
                        for (c, acc_c) in acc.iter_mut().enumerate() {
                            if inside & (1 << c) == 0 {
                                continue;
                            }
                            let column = col + (c * STRIDE) as isize;
                            // SAFETY: channel `ic < in_channels`, input row `ih0 + kh` inside
                            // `0..in_h` (`kh_lo..kh_hi`) and `column` inside `0..in_w` (position
                            // `c` is `inside`, or for every tap of a tile without `CHECK`,
                            // asserted above): inside the image `x` (its length asserted above), whose
                            // values lie `block`, `lane`, `row` and `COL` floats apart.
                            let bv = S::splat(unsafe { *xp.add(row + column as usize * COL) });
                            for (s, &a) in acc_c.iter_mut().zip(&av) {
                                *s = S::fma(a, bv, *s);
                            }
                        }
                        wk += depth;
                    }
                    row += input.row;
                }
            }
        }
        store_tile::<S, R, C>(self.bias, p.act, acc, y, p.out_h * p.out_w, (m0, oh * p.out_w + ow0));
    }
}
