//! The convolutions of [`crate::conv2d_blocked`] on channel-blocked activations, written once
//! over [`Lanes`] (a block of 16 channels is one AVX-512 vector or two AVX2 ones).
//!
//! Pointwise: tiles of up to [`MAX_VECTORS`] vectors of output channels by [`POSITIONS`]
//! positions; per input channel, the vectors of its k-major weights times one broadcast value
//! per position (the 16 channels of a position lie together, so a tile's broadcasts are 16
//! floats apart), a fused multiply-add each, the sums stored as whole vectors into their blocks.
//! Each output is the k-ascending chain from zero, then `+ bias` and the activation: the bits of
//! the NCHW GEMM's tiles. A product's last positions, fewer than a tile, are computed by a tile
//! ending at the last position (it overlaps the tile before and stores the same values there);
//! a plane of under two tiles that they do not divide is one tile of all its positions.
//!
//! Depthwise 3x3: per block, bands of output rows whose zero-padded input rows fit a stack stage
//! (`[row][column][16]`, copied from the blocked input as it lies: no transposes); per output
//! row, [`RUN`] outputs at a time (the last run overlapping the one before), each tap one
//! unchecked load per output, multiplied and added in tap order from the bias: the bits of the
//! NCHW depthwise kernels, whose padding taps add `w * 0` too. On AVX-512, rows of [`RUN`]
//! outputs or more at stride 1 are read from the input where it lies instead, each input vector
//! loaded once for the three outputs it reaches and zero outside the input: the same sums.
//!
//! Dense (one group, any kernel, stride 1 or 2): [`super::blocked_dense`], on the same stage.

use super::blocked_dense::dense;
use super::depthwise::zeroed;
use super::depthwise_blocked::tap_vectors;
use super::lanes::{activate, Lanes};
use crate::arch::x86_64_facts::{CONV_BLOCKED_BYTES, DEPTHWISE_BLOCKED_STAGE, MAX_LANES};
use crate::blocked::{is_pointwise, reorder_block, Reorder, CHANNEL_BLOCK};
use crate::conv_shape::Conv2d;
use crate::Activation;
use core::mem::MaybeUninit;

/// Most vectors of output channels in a pointwise tile (on AVX-512 four blocks: 24
/// accumulators; on AVX2's 16 registers two vectors, one block: 12).
const MAX_VECTORS: usize = 4;

/// Positions per pointwise tile.
const POSITIONS: usize = 6;

/// Outputs of a depthwise row summed at once (independent chains of additions), per vector of
/// a block's channels.
const RUN: usize = 8;

/// [`crate::conv2d_blocked`] on this instruction set.
#[inline(always)]
pub(super) fn conv2d_blocked<S: Lanes>(p: &Conv2d, x: &[f32], w: &[f32], bias: Option<&[f32]>, y: &mut [f32]) {
    match p.groups {
        1 if is_pointwise(p) => pointwise::<S>(p, x, w, bias, y),
        1 => dense::<S>(p, x, w, bias, y),
        _ => depthwise::<S>(p, x, w, bias, y),
    }
}

/// [`crate::to_blocked`] / [`crate::from_blocked`] on this instruction set: each block, 16
/// channels by `plane` positions, transposed `L` channels by `L` positions at a time
/// ([`Lanes::transpose`]; on AVX2 a block's two halves one after the other). The last positions
/// of a plane that `L` does not divide are transposed by a tile ending at the last position,
/// which writes the positions it shares with the tile before again, with the same values. A
/// plane of fewer than `L` positions is converted value by value.
#[inline(always)]
pub(super) fn reorder_blocked<S: Lanes>(way: Reorder, plane: usize, x: &[f32], y: &mut [f32]) {
    let (b, l) = (CHANNEL_BLOCK, S::L);
    for (xb, yb) in x.chunks_exact(b * plane).zip(y.chunks_exact_mut(b * plane)) {
        if plane < l {
            reorder_block(way, plane, xb, yb);
            continue;
        }
        for half in 0..b / l {
            for q in (0..plane).step_by(l) {
                let q0 = q.min(plane - l);
                let (nchw, blocked) = (half * l * plane + q0, q0 * b + half * l);
                match way {
                    Reorder::ToBlocked => S::transpose(&xb[nchw..], plane, l, &mut yb[blocked..], b),
                    Reorder::FromBlocked => S::transpose(&xb[blocked..], b, l, &mut yb[nchw..], plane),
                }
            }
        }
    }
}

/// Stores `acc` activated into `out`, vector `o` at `out[o * 16..]`: all of them activated in
/// registers where the activation has a vector form, else stored and activated on `out`. (One
/// decision for the run: with one per vector, LLVM summed each output's taps just before its
/// store, one chain of additions at a time, and KWS's depthwise layer took about 1.5x as long:
/// 1.18-1.20 of the NCHW kernel's time, against 0.75-0.85.)
#[inline(always)]
fn store_run<S: Lanes, const N: usize>(act: Activation, acc: [S::V; N], out: &mut [f32]) {
    let b = CHANNEL_BLOCK;
    match activate::<S>(act, S::zero()).is_some() {
        true => {
            for (o, &a) in acc.iter().enumerate() {
                S::store(&mut out[o * b..], activate::<S>(act, a).unwrap_or(a));
            }
        }
        false => {
            for (o, &a) in acc.iter().enumerate() {
                S::store(&mut out[o * b..], a);
                act.apply_in_place(&mut out[o * b..][..S::L]);
            }
        }
    }
}

/// The pointwise convolution `p` (k-major weights).
#[inline(always)]
fn pointwise<S: Lanes>(p: &Conv2d, x: &[f32], w: &[f32], bias: Option<&[f32]>, y: &mut [f32]) {
    let (k, m, plane) = (p.in_channels, p.out_channels, p.out_h * p.out_w);
    let (w0, _, a_cs) = p.weights.gemm_operand(0, m, k);
    let w = &w[w0..][..(k - 1) * a_cs + m];
    // A plane of under two tiles that tiles of `POSITIONS` do not divide: one tile of every
    // position, half as many vectors of channels.
    let narrow = plane < 2 * POSITIONS && !plane.is_multiple_of(POSITIONS);
    let widest = match (S::REGISTERS >= 32, narrow) {
        (true, false) => MAX_VECTORS,
        (true, true) | (false, false) => 2,
        (false, true) => 1,
    };
    for n in 0..p.batch {
        let pw = Pointwise { k, m, plane, w, a_cs, bias, act: p.act };
        let x = &x[n * k * plane..][..k * plane];
        let y = &mut y[n * m * plane..][..m * plane];
        let mut m0 = 0;
        while m0 < m {
            let vectors = widest.min((m - m0) / S::L);
            match (narrow, vectors) {
                (true, 2) => pw.narrow::<S, 2>(x, y, m0),
                (true, _) => pw.narrow::<S, 1>(x, y, m0),
                (false, 4) => pw.rows::<S, 4>(x, y, m0),
                (false, 3) => pw.rows::<S, 3>(x, y, m0),
                (false, 2) => pw.rows::<S, 2>(x, y, m0),
                (false, _) => pw.rows::<S, 1>(x, y, m0),
            }
            m0 += vectors * S::L;
        }
    }
}

/// One image's pointwise convolution: `k` input and `m` output channels, `plane` positions, the
/// weights `w` (input channel `ic`'s at `w[ic * a_cs..]`), bias and activation.
struct Pointwise<'a> {
    k: usize,
    m: usize,
    plane: usize,
    w: &'a [f32],
    a_cs: usize,
    bias: Option<&'a [f32]>,
    act: Activation,
}

impl Pointwise<'_> {
    /// Output channels `m0..m0 + R * L` at every position: tiles of [`POSITIONS`] positions, the
    /// last one ending at the last position.
    #[inline(always)]
    fn rows<S: Lanes, const R: usize>(&self, x: &[f32], y: &mut [f32], m0: usize) {
        let mut q0 = 0;
        while q0 < self.plane {
            let q = q0.min(self.plane - POSITIONS);
            self.tile::<S, R, POSITIONS>(x, y, m0, q);
            q0 += POSITIONS;
        }
    }

    /// Output channels `m0..m0 + R * L` at every position of a plane of under two tiles that
    /// tiles of [`POSITIONS`] do not divide, in one tile (with a last tile overlapping the one
    /// before, VWW's 256 channels at 3x3 computed 12 positions for 9 and took 1.2x as long as
    /// the NCHW kernel's exact tiles).
    #[inline(always)]
    fn narrow<S: Lanes, const R: usize>(&self, x: &[f32], y: &mut [f32], m0: usize) {
        match self.plane {
            11 => self.tile::<S, R, 11>(x, y, m0, 0),
            10 => self.tile::<S, R, 10>(x, y, m0, 0),
            9 => self.tile::<S, R, 9>(x, y, m0, 0),
            8 => self.tile::<S, R, 8>(x, y, m0, 0),
            7 => self.tile::<S, R, 7>(x, y, m0, 0),
            5 => self.tile::<S, R, 5>(x, y, m0, 0),
            4 => self.tile::<S, R, 4>(x, y, m0, 0),
            3 => self.tile::<S, R, 3>(x, y, m0, 0),
            2 => self.tile::<S, R, 2>(x, y, m0, 0),
            _ => self.tile::<S, R, 1>(x, y, m0, 0),
        }
    }

    /// Output channels `m0..m0 + R * L` at positions `q0..q0 + C`.
    #[inline(always)]
    fn tile<S: Lanes, const R: usize, const C: usize>(&self, x: &[f32], y: &mut [f32], m0: usize, q0: usize) {
        let (l, b) = (S::L, CHANNEL_BLOCK);
        let block = self.plane * b;
        assert!(m0 + R * l <= self.m && q0 + C <= self.plane && self.k.is_multiple_of(b));
        assert!(x.len() == self.k * self.plane && self.w.len() == (self.k - 1) * self.a_cs + self.m);
        let (xp, wp) = (x.as_ptr(), self.w.as_ptr());
        let mut acc = [[S::zero(); R]; C];
        for kb in 0..self.k / b {
            let xb = kb * block + q0 * b;
            for kk in 0..b {
                let ic = kb * b + kk;
                let mut av = [S::zero(); R];
                for (r, a) in av.iter_mut().enumerate() {
                    // SAFETY: `ic < k` and `m0 + (r + 1) * l <= m`, so the vector ends at or
                    // before `(k - 1) * a_cs + m`, the length of `w` (the assertions above).
                    *a = unsafe { S::load_ptr(wp.add(ic * self.a_cs + m0 + r * l)) };
                }
                for (c, acc_c) in acc.iter_mut().enumerate() {
                    // SAFETY: block `kb < k / 16`, position `q0 + c < plane`, lane `kk < 16`:
                    // inside `x`, whose length is `k * plane`.
                    let bv = S::splat(unsafe { *xp.add(xb + c * b + kk) });
                    for (s, &a) in acc_c.iter_mut().zip(&av) {
                        *s = S::fma(a, bv, *s);
                    }
                }
            }
        }
        store_tile::<S, R, C>(self.bias, self.act, acc, y, self.plane, (m0, q0));
    }
}

/// The epilogue of a tile of output channels `m0..m0 + R * L` at the `C` consecutive positions
/// from `q0` of a channel-blocked output of `plane` positions per channel (`acc[c][r]`: position
/// `q0 + c`, channels `m0 + r * L..`): `+ bias`, then the activation, each vector stored into its
/// block. One call per vector of channels, each with its index constant: as a loop over them,
/// LLVM kept the sums on the stack and the loop rolled, which a first layer's short tiles (9
/// depths) felt: MNIST's 1->32 layer took 11.1 us, against 8.5 us for the NCHW kernel.
#[inline(always)]
pub(super) fn store_tile<S: Lanes, const R: usize, const C: usize>(
    bias: Option<&[f32]>,
    act: Activation,
    acc: [[S::V; R]; C],
    y: &mut [f32],
    plane: usize,
    (m0, q0): (usize, usize),
) {
    const { assert!(R <= MAX_VECTORS) };
    let tile = Tile { bias, act, plane, m0, q0 };
    tile.store::<S, R, C, 0>(&acc, y);
    tile.store::<S, R, C, 1>(&acc, y);
    tile.store::<S, R, C, 2>(&acc, y);
    tile.store::<S, R, C, 3>(&acc, y);
}

/// What [`store_tile`] needs besides the sums: the bias, the activation, the output's positions
/// per channel, and the tile's first output channel and position.
struct Tile<'a> {
    bias: Option<&'a [f32]>,
    act: Activation,
    plane: usize,
    m0: usize,
    q0: usize,
}

impl Tile<'_> {
    /// Vector `V` of the tile's channels (nothing when the tile has fewer).
    #[inline(always)]
    fn store<S: Lanes, const R: usize, const C: usize, const V: usize>(&self, acc: &[[S::V; R]; C], y: &mut [f32]) {
        if V >= R {
            return;
        }
        let (b, oc) = (CHANNEL_BLOCK, self.m0 + V * S::L);
        let mut sums = [S::zero(); C];
        for (sum, acc_c) in sums.iter_mut().zip(acc) {
            *sum = match self.bias {
                Some(bias) => S::add(acc_c[V], S::load(&bias[oc..])),
                None => acc_c[V],
            };
        }
        let at = (oc - oc % b) * self.plane + self.q0 * b + oc % b;
        store_run::<S, C>(self.act, sums, &mut y[at..][..(C - 1) * b + S::L]);
    }
}

/// The 3x3 depthwise convolution `p`, block by block: with 32 vector registers (AVX-512), at
/// column stride 1 or 2 and on rows of at least [`RUN`] outputs, reading the block's input where
/// it lies ([`Block::direct_outputs`]); otherwise in bands of output rows whose input rows, zero-padded,
/// fit the stage ([`Block::outputs`]).
#[inline(always)]
fn depthwise<S: Lanes>(p: &Conv2d, x: &[f32], w: &[f32], bias: Option<&[f32]>, y: &mut [f32]) {
    let b = CHANNEL_BLOCK;
    let direct = S::REGISTERS >= 32 && p.stride_w <= 2 && p.out_w >= RUN;
    let cols = p.cols_read();
    let band = p.rows_fitting(STAGE / (cols * b)).min(p.out_h);
    assert!(band > 0, "conv2d_blocked_applies checked that a band fits the stage");
    let mut buf = Stage([MaybeUninit::uninit(); STAGE]);
    // The padding columns stay zero; the staged rows are written whole or as the input's.
    let stage = zeroed(&mut buf.0, if direct { 0 } else { p.rows_read(band) * cols * b });
    let (in_plane, out_plane) = (p.in_h * p.in_w, p.out_h * p.out_w);
    for n in 0..p.batch {
        for cb in 0..p.out_channels / b {
            let block = Block::<S>::new(p, w, bias, cb);
            let at = n * p.out_channels + cb * b;
            let x = &x[at * in_plane..][..in_plane * b];
            let y = &mut y[at * out_plane..][..out_plane * b];
            if direct {
                for oh in 0..p.out_h {
                    block.direct_row(p, x, oh, &mut y[oh * p.out_w * b..][..p.out_w * b]);
                }
                continue;
            }
            let mut oh0 = 0;
            while oh0 < p.out_h {
                let rows = band.min(p.out_h - oh0);
                stage_rows(p, cols, oh0, rows, x, stage);
                for oh in oh0..oh0 + rows {
                    let first = (oh - oh0) * p.stride_h * cols * b;
                    block.row(p, cols, stage, first, &mut y[oh * p.out_w * b..][..p.out_w * b]);
                }
                oh0 += rows;
            }
        }
    }
}

/// Floats of the depthwise kernel's stage: zero-padded input rows, `[row][column][16]`; the dense
/// kernel's bands of output rows read about as many input floats.
pub(super) const STAGE: usize = DEPTHWISE_BLOCKED_STAGE;

/// The depthwise stage, aligned to a cache line: a whole-vector load never straddles two.
#[repr(C, align(64))]
struct Stage([MaybeUninit<f32>; STAGE]);

// The stack fact counts the stage and a block's tap lanes (`crate::facts::conv2d_blocked_stack_bytes`).
const _: () = assert!(size_of::<Stage>() + 9 * MAX_LANES * 4 <= CONV_BLOCKED_BYTES);

/// Stages the input rows of output rows `oh0..oh0 + rows` from the block's input `x`: padded row
/// `j` (input row `oh0 * stride_h + j - pad_top`) at `stage[j * cols * 16..]`, its input columns
/// from column `pad_left` on; rows outside the input zero.
#[inline(always)]
fn stage_rows(p: &Conv2d, cols: usize, oh0: usize, rows: usize, x: &[f32], stage: &mut [f32]) {
    let b = CHANNEL_BLOCK;
    let width = p.in_w.min(cols - p.pad_left) * b;
    for (j, srow) in stage[..p.rows_read(rows) * cols * b].chunks_exact_mut(cols * b).enumerate() {
        let ih = (oh0 * p.stride_h + j) as isize - p.pad_top as isize;
        match (0..p.in_h as isize).contains(&ih) {
            true => srow[p.pad_left * b..][..width].copy_from_slice(&x[ih as usize * p.in_w * b..][..width]),
            false => srow.fill(0.0),
        }
    }
}

/// Vectors per block of channels, at most (16 channels in AVX2's 8 lanes).
const BLOCK_VECTORS: usize = 2;

/// One block of a depthwise convolution: its taps as vectors (`taps[t][v]`: tap `t` of the
/// block's channels `v * L..`) and its bias vectors.
struct Block<S: Lanes> {
    taps: [[S::V; BLOCK_VECTORS]; 9],
    bias: [S::V; BLOCK_VECTORS],
}

impl<S: Lanes> Block<S> {
    /// Block `cb`: each channel's 9 taps gathered into vectors across the block's channels, a
    /// vector's channels at a time ([`tap_vectors`]).
    #[inline(always)]
    fn new(p: &Conv2d, w: &[f32], bias: Option<&[f32]>, cb: usize) -> Self {
        let b = CHANNEL_BLOCK;
        let c0 = cb * b;
        let mut taps = [[S::zero(); BLOCK_VECTORS]; 9];
        let mut lanes = [0.0f32; 9 * MAX_LANES];
        for v in 0..b / S::L {
            tap_vectors::<S, 9>(p, w, c0 + v * S::L, &mut lanes);
            for (t, tap) in taps.iter_mut().enumerate() {
                tap[v] = S::load(&lanes[t * S::L..]);
            }
        }
        let mut bv = [S::zero(); BLOCK_VECTORS];
        if let Some(bias) = bias {
            for (v, x) in bv.iter_mut().take(b / S::L).enumerate() {
                *x = S::load(&bias[c0 + v * S::L..]);
            }
        }
        Block { taps, bias: bv }
    }

    /// One output row into `out` from the stage, whose row holding its first kernel row starts at
    /// `first`: [`RUN`] outputs at a time, the last run ending at the row's end (overlapping the
    /// one before, storing the same values again), or all of a shorter row.
    #[inline(always)]
    fn row(&self, p: &Conv2d, cols: usize, stage: &[f32], first: usize, out: &mut [f32]) {
        match p.out_w {
            7 => self.outputs::<7>(p, cols, stage, first, 0, out),
            6 => self.outputs::<6>(p, cols, stage, first, 0, out),
            5 => self.outputs::<5>(p, cols, stage, first, 0, out),
            4 => self.outputs::<4>(p, cols, stage, first, 0, out),
            3 => self.outputs::<3>(p, cols, stage, first, 0, out),
            2 => self.outputs::<2>(p, cols, stage, first, 0, out),
            1 => self.outputs::<1>(p, cols, stage, first, 0, out),
            _ => {
                let mut ow = 0;
                while ow < p.out_w {
                    self.outputs::<RUN>(p, cols, stage, first, ow.min(p.out_w - RUN), out);
                    ow += RUN;
                }
            }
        }
    }

    /// Output row `oh` (of at least [`RUN`] outputs) into `out` from the block's input `x`, [`RUN`]
    /// outputs at a time as [`Self::row`] runs them; a run whose input columns all lie inside the
    /// input checks none (at stride 1, MobileNetV2's 48x48 layer in 0.80 of the time of checking
    /// every column, VWW's 24x24 one 0.92).
    #[inline(always)]
    fn direct_row(&self, p: &Conv2d, x: &[f32], oh: usize, out: &mut [f32]) {
        let mut ow = 0;
        while ow < p.out_w {
            let ow0 = ow.min(p.out_w - RUN);
            // Whether the run's input columns all lie inside the input: no check per column.
            let first = (ow0 * p.stride_w) as isize - p.pad_left as isize;
            let inside = first >= 0 && first as usize + (RUN - 1) * p.stride_w + 3 <= p.in_w;
            match (p.stride_w, inside) {
                (1, true) => self.direct_outputs::<1, false>(p, x, oh, ow0, out),
                (1, false) => self.direct_outputs::<1, true>(p, x, oh, ow0, out),
                (_, true) => self.direct_outputs::<2, false>(p, x, oh, ow0, out),
                (_, false) => self.direct_outputs::<2, true>(p, x, oh, ow0, out),
            }
            ow += RUN;
        }
    }

    /// Outputs `ow0..ow0 + N` of a row (the caller's `first` and `out`), `L` channels of the
    /// block at a time: from the bias, each tap's rounded product added in tap order, then the
    /// activation.
    #[inline(always)]
    fn outputs<const N: usize>(
        &self,
        p: &Conv2d,
        cols: usize,
        stage: &[f32],
        first: usize,
        ow0: usize,
        out: &mut [f32],
    ) {
        let (l, b) = (S::L, CHANNEL_BLOCK);
        let step = p.stride_w * b;
        let start = first + ow0 * step;
        // The last output's last tap ends inside the stage, and so does every other.
        assert!(start + (N - 1) * step + (2 * cols + 3) * b <= stage.len() && (ow0 + N) * b <= out.len());
        for v in 0..b / l {
            let mut acc = [self.bias[v]; N];
            let sp = stage.as_ptr().wrapping_add(start + v * l);
            for (t, tap) in self.taps.iter().enumerate() {
                let off = ((t / 3) * cols + t % 3) * b;
                for (o, a) in acc.iter_mut().enumerate() {
                    // SAFETY: `start + off + o * step + v * L + L` is at most the bound checked
                    // above.
                    let xv = unsafe { S::load_ptr(sp.add(off + o * step)) };
                    *a = S::add(*a, S::mul(tap[v], xv));
                }
            }
            store_run::<S, N>(p.act, acc, &mut out[ow0 * b + v * l..][..(N - 1) * b + l]);
        }
    }

    /// The block's vector at column `c` of an input row of the block's input (`row`: its first
    /// vector of the lanes wanted, where `row_inside`), or zero where the row or, `CHECKED`, the
    /// column lies outside the input.
    ///
    /// # Safety
    /// Where `row_inside`, `row` points into the block's input at the row's start and, unless
    /// `CHECKED`, `0 <= c < in_w`.
    #[inline(always)]
    unsafe fn input<const CHECKED: bool>(p: &Conv2d, row: *const f32, row_inside: bool, c: isize) -> S::V {
        match row_inside && (!CHECKED || (0..p.in_w as isize).contains(&c)) {
            // SAFETY: the row and column are inside the input (the caller's contract), so its
            // vector's `L` floats from `c * 16` on lie in it.
            true => unsafe { S::load_ptr(row.add(c as usize * CHANNEL_BLOCK)) },
            false => S::zero(),
        }
    }

    /// Outputs `ow0..ow0 + RUN` of output row `oh` (the caller's `x` and `out`; `STRIDE` across;
    /// `CHECKED`: whether any of their input columns lies outside the input), `L` channels of the
    /// block at a time: from the bias, each tap's rounded product added in tap order, then the
    /// activation (the bits of [`Self::outputs`]), the block's taps held in registers; a
    /// position outside the input is a zero vector, so a padding tap adds `w * 0`. At stride 1
    /// each input vector of a kernel row is loaded once and multiplied by the taps of the three
    /// outputs it reaches; at stride 2 output after output, each tap's vector loaded (a column
    /// order there, over 17 columns, measured 2x slower; this order at stride 1 1.5x). Against
    /// the staged kernel, one layer each (AVX-512, Zen 4, a crate outside the workspace without
    /// flags, least p10 of eight alternating runs): VWW's 32-channel 24x24 layer 0.62 of its
    /// time, MobileNetV2's 16-channel 48x48 one 0.64 and 96-channel 12x12 one 0.72; at stride 2
    /// VWW's 16-channel 48x48 one 0.51 (p50). Rows of fewer than [`RUN`] outputs measured slower
    /// (KWS's 5: 1.35; 6: 1.31), as did AVX2's 16 registers (up to 1.46): those keep the staged
    /// kernel.
    #[inline(always)]
    fn direct_outputs<const STRIDE: usize, const CHECKED: bool>(
        &self,
        p: &Conv2d,
        x: &[f32],
        oh: usize,
        ow0: usize,
        out: &mut [f32],
    ) {
        const N: usize = RUN;
        let (l, b) = (S::L, CHANNEL_BLOCK);
        // Input columns a kernel row of the run reads, from column `c0` (negative in the padding).
        let width = (N - 1) * STRIDE + 3;
        let c0 = (ow0 * STRIDE) as isize - p.pad_left as isize;
        assert!(CHECKED || (c0 >= 0 && c0 as usize + width <= p.in_w));
        assert!(x.len() >= p.in_h * p.in_w * b && (ow0 + N) * b <= out.len());
        for v in 0..b / l {
            let mut taps = [S::zero(); 9];
            for (t, tap) in taps.iter_mut().enumerate() {
                *tap = self.taps[t][v];
            }
            let mut acc = [self.bias[v]; N];
            for r in 0..3 {
                let ih = (oh * p.stride_h + r) as isize - p.pad_top as isize;
                let row_inside = (0..p.in_h as isize).contains(&ih);
                // The row's first vector (unused outside the input).
                let row = x.as_ptr().wrapping_add(if row_inside { ih as usize * p.in_w * b + v * l } else { 0 });
                if STRIDE == 1 {
                    for j in 0..width {
                        // SAFETY: `row` is row `ih`'s in `x` where `row_inside`, and column
                        // `c0 + j` is checked, or inside the input (asserted above).
                        let xv = unsafe { Self::input::<CHECKED>(p, row, row_inside, c0 + j as isize) };
                        // Output `o` reads column `j` as its tap `k = j - o`: in ascending `j`,
                        // each output's taps of this row come in ascending `k`.
                        for k in 0..3 {
                            if j >= k && j - k < N {
                                acc[j - k] = S::add(acc[j - k], S::mul(taps[r * 3 + k], xv));
                            }
                        }
                    }
                } else {
                    for (o, a) in acc.iter_mut().enumerate() {
                        for k in 0..3 {
                            let c = c0 + (o * STRIDE + k) as isize;
                            // SAFETY: as above, column `c` of the run's.
                            let xv = unsafe { Self::input::<CHECKED>(p, row, row_inside, c) };
                            *a = S::add(*a, S::mul(taps[r * 3 + k], xv));
                        }
                    }
                }
            }
            store_run::<S, N>(p.act, acc, &mut out[ow0 * b + v * l..][..(N - 1) * b + l]);
        }
    }
}
