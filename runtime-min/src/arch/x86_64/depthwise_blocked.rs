//! The depthwise convolution (one input channel per group, channel multiplier 1) over blocks of
//! `L` channels, one per vector lane, on x86-64 with AVX2 + FMA or AVX-512F: plain Rust over
//! [`Lanes`] that the entry points of [`super`] compile with those features (everything here is
//! `#[inline(always)]`). On AVX-512, blocks of 16 channels, then a block of 8 (AVX2 vectors) for
//! the channels left.
//!
//! The NCHW planes put one channel's values side by side, so a kernel with vectors along a plane
//! row wastes lanes on narrow planes (KWS's 25x5, the 6x6 and 3x3 planes of MobileNets) and
//! needs border code at every row end. Here a band of input rows of `L` channels is staged
//! transposed, `[row][column][channel]`, with its zero padding, and every output position is
//! then `kernel_h * kernel_w` whole-vector steps at any width, stride or dilation, its `L`
//! outputs transposed back into their planes (onnxruntime's NCHWc layout keeps the channels
//! blocked between layers; sramfit's planes are NCHW, so the transposes happen in the kernel).
//!
//! Each output is `act(bias + w0 * x0 + w1 * x1 + ...)`, the products rounded, then added in
//! row-major tap order: the order and rounding of the direct convolution, so every path agrees
//! bit for bit (padding taps add `w * 0`, which for finite weights can only change the sign of
//! a zero sum, as in [`super::depthwise`]).

use super::depthwise::zeroed;
use super::depthwise_io::{DepthwiseOperands, Planes};
use super::lanes::{activate, Avx2, Lanes};
use crate::arch::x86_64_facts::{DEPTHWISE_BLOCKED_BYTES, MAX_LANES};
use crate::arch::x86_64_facts::{
    DEPTHWISE_BLOCKED_MAX_TAPS as MAX_TAPS, DEPTHWISE_BLOCKED_OUT, DEPTHWISE_BLOCKED_STAGE,
};
use crate::conv_shape::Conv2d;
use crate::epilogue::Bias;
use core::mem::MaybeUninit;
use core::ops::Range;

/// The kernel's stack buffers: the staged input band and its outputs, a block's tap vectors and
/// bias vector, and positions of a narrow band transposed on their way to the stage, all `f32`,
/// aligned to a cache line, so that the whole-vector loads and stores at multiples of `L` floats
/// never straddle two (on 4-byte-aligned buffers, half of them did: the band's arithmetic took
/// twice as long). One set for every block width of a call.
#[repr(C, align(64))]
struct Buffers {
    stage: [MaybeUninit<f32>; DEPTHWISE_BLOCKED_STAGE],
    out: [MaybeUninit<f32>; DEPTHWISE_BLOCKED_OUT],
    taps: [MaybeUninit<f32>; (MAX_TAPS + 1) * MAX_LANES],
    narrow: [MaybeUninit<f32>; MAX_LANES * MAX_LANES],
}

// What the kernel facts say [`depthwise_blocked`]'s arrays take: the buffers, the tap offsets,
// and the lanes of an activation's copy.
const _: () = assert!(
    core::mem::size_of::<Buffers>()
        + core::mem::size_of::<[usize; MAX_TAPS]>()
        + core::mem::size_of::<[f32; MAX_LANES]>()
        == DEPTHWISE_BLOCKED_BYTES
);

/// The geometry of one layer's bands: padded columns per staged row, output rows per staged
/// band, and output rows per pass through the output buffer (a staged band's rows in one or
/// more passes).
#[derive(Clone, Copy)]
struct Bands {
    cols: usize,
    rows: usize,
    out_rows: usize,
}

impl Bands {
    /// The bands of `p` for blocks of `l` channels, or `None` if one output row's input rows do
    /// not fit the stage, or its outputs the output buffer. Separate planes: a band of as many
    /// output rows as both buffers hold. Planes `shared` in one region: one band of all output
    /// rows, `None` unless the stage holds them (a block's outputs may overwrite any of its
    /// input planes but the last).
    #[inline(always)]
    fn new(p: &Conv2d, l: usize, shared: bool) -> Option<Bands> {
        let cols = p.cols_read();
        let by_stage = p.rows_fitting(DEPTHWISE_BLOCKED_STAGE / (cols * l)).min(p.out_h);
        let out_rows = (DEPTHWISE_BLOCKED_OUT / (p.out_w * l)).min(p.out_h);
        let rows = match shared {
            false => by_stage.min(out_rows),
            true if by_stage == p.out_h => by_stage,
            true => 0,
        };
        (rows > 0 && out_rows > 0).then_some(Bands { cols, rows, out_rows })
    }
}

/// Whether [`depthwise_blocked`] computes convolution `p` with `ocg` output channels per group,
/// its planes `shared` in one region or not: channel multiplier 1, at least one block of 8
/// channels, a 3x3 or 5x5 kernel, and [`Bands::new`] has bands for it. At every width and
/// stride it is faster than the plane kernels of [`super::depthwise`] (which take the channels
/// left): up to 2x on narrow and strided planes, 10% on 48-wide rows at stride 1 (VWW's,
/// MobileNetV2's bands), 1.5-2x on 64x64 and 112x112 planes (AVX2 vectors, on an AMD core).
#[inline(always)]
pub(super) fn blocked_applies(p: &Conv2d, ocg: usize, shared: bool) -> bool {
    ocg == 1
        && p.groups == p.in_channels
        && p.out_channels >= Avx2::L
        && matches!((p.kernel_h, p.kernel_w), (3, 3) | (5, 5))
        && Bands::new(p, Avx2::L, shared).is_some()
}

/// The first channels of a depthwise convolution that [`blocked_applies`] to, in blocks of `L`
/// channels (`S`'s lanes), then, on vectors wider than 8, of 8 for the whole blocks left:
/// `y[n, c] = act(bias[c] + conv(x[n, c], w[c]))`. Returns the channels computed; the rest are
/// the caller's. In a shared region, each block's input is staged whole before its outputs are
/// written, and the blocks run in channel order.
#[inline(always)]
pub(super) fn depthwise_blocked<S: Lanes>(p: &Conv2d, ops: DepthwiseOperands) -> usize {
    let DepthwiseOperands { w, bias, mut planes, .. } = ops;
    let mut buffers = Buffers {
        stage: [MaybeUninit::uninit(); DEPTHWISE_BLOCKED_STAGE],
        out: [MaybeUninit::uninit(); DEPTHWISE_BLOCKED_OUT],
        taps: [MaybeUninit::uninit(); (MAX_TAPS + 1) * MAX_LANES],
        narrow: [MaybeUninit::uninit(); MAX_LANES * MAX_LANES],
    };
    let done = by_taps::<S>(p, w, bias, planes.reborrow(), &mut buffers, 0);
    match S::L > Avx2::L {
        true => by_taps::<Avx2>(p, w, bias, planes, &mut buffers, done),
        false => done,
    }
}

/// The blocks of `L` channels from channel `from` of [`depthwise_blocked`], by the kernel's
/// size; returns where they end (`from` where the bands of `L` channels do not fit).
#[inline(always)]
fn by_taps<S: Lanes>(p: &Conv2d, w: &[f32], bias: Bias, planes: Planes, buffers: &mut Buffers, from: usize) -> usize {
    let Some(bands) = Bands::new(p, S::L, planes.shared()) else { return from };
    match (p.kernel_h, p.kernel_w) {
        (3, 3) => blocks::<S, 9>(p, bands, w, bias, planes, buffers, from),
        _ => blocks::<S, 25>(p, bands, w, bias, planes, buffers, from),
    }
}

/// The channel blocks of `L` channels from channel `from` with `T` (`kernel_h * kernel_w`)
/// taps; returns where they end.
#[inline(always)]
fn blocks<S: Lanes, const T: usize>(
    p: &Conv2d,
    bands: Bands,
    w: &[f32],
    bias: Bias,
    mut planes: Planes,
    buffers: &mut Buffers,
    from: usize,
) -> usize {
    let l = S::L;
    let blocks = (p.out_channels - from) / l;
    if blocks == 0 {
        return from;
    }
    let Buffers { stage: stage_buf, out: out_buf, taps, narrow } = buffers;
    // The parts a layer uses, zeroed once (zeroing all 40 KiB took longer than a small layer;
    // initialised as the struct's fields, LLVM built the buffers elsewhere and copied them in).
    let stage_buf = zeroed(stage_buf, p.rows_read(bands.rows) * bands.cols * l);
    // At least `L` positions: a pass of fewer is unstaged as `L` (`unstage`).
    let out_buf = zeroed(out_buf, (bands.out_rows * p.out_w).max(l) * l);
    let (taps, narrow) = (zeroed(taps, T * l), zeroed(narrow, l * l));
    for block in 0..blocks {
        let c0 = from + block * l;
        tap_vectors::<S, T>(p, w, c0, taps);
        let bv = match bias {
            Bias::Row(b) => S::load(&b[c0..]),
            _ => S::zero(),
        };
        let wv = Weights { taps: &taps[..T * l], bias: bv };
        for n in 0..p.batch {
            let mut oh0 = 0;
            while oh0 < p.out_h {
                let bo = bands.rows.min(p.out_h - oh0);
                stage::<S>(p, bands, Band { n, c0, oh0, bo }, planes.x(), stage_buf, narrow);
                let mut done = 0;
                while done < bo {
                    let rows = bands.out_rows.min(bo - done);
                    compute::<S, T>(p, bands, done..done + rows, wv, stage_buf, out_buf);
                    unstage::<S>(p, Band { n, c0, oh0: oh0 + done, bo: rows }, out_buf, narrow, planes.y());
                    done += rows;
                }
                oh0 += bo;
            }
        }
    }
    from + blocks * l
}

/// Writes the tap vectors of channels `c0..c0 + L` into `taps`: tap `t`'s `L` lanes at
/// `taps[t * L..]`, lane `ch` holding the tap's weight of channel `c0 + ch`. With one output
/// channel per group, channel `c0 + ch`'s `T` taps follow `c0`'s, `ch * T` after them, in both
/// weight layouts: `L` taps of the `L` channels at a time are one [`Lanes::transpose`] (the
/// last `L` overlapping the ones before; under `L` taps, one of `T`), not `L * T` lanes written
/// one by one and read back as vectors (which waited on store forwarding).
#[inline(always)]
pub(super) fn tap_vectors<S: Lanes, const T: usize>(p: &Conv2d, w: &[f32], c0: usize, taps: &mut [f32]) {
    let l = S::L;
    let (w0, _, ws) = p.weights.gemm_operand(c0, 1, T);
    debug_assert_eq!(ws, 1);
    let block = &w[w0..][..l * T];
    let n = l.min(T);
    for t in (0..T).step_by(l) {
        let t0 = t.min(T - n);
        S::transpose(&block[t0..], T, n, &mut taps[t0 * l..], l);
    }
}

/// A block's tap vectors (tap `t` at `taps[t * L..]`) and its bias vector.
#[derive(Clone, Copy)]
struct Weights<'a, V> {
    taps: &'a [f32],
    bias: V,
}

/// Which values one band covers: image `n`, channels `c0..c0 + L`, output rows `oh0..oh0 + bo`.
#[derive(Clone, Copy)]
struct Band {
    n: usize,
    c0: usize,
    oh0: usize,
    bo: usize,
}

/// Stages the input rows of a band, transposed and zero-padded: padded row `oh0 * stride_h + j`
/// and column `c` of channel `c0 + ch` at `stage[(j * cols + c) * L + ch]`.
#[inline(always)]
fn stage<S: Lanes>(p: &Conv2d, bands: Bands, at: Band, x: &[f32], stage: &mut [f32], narrow: &mut [f32]) {
    let (l, cols) = (S::L, bands.cols);
    let in_plane = p.in_h * p.in_w;
    // Input columns the band reads, and where they land.
    let iw_end = p.in_w.min(cols.saturating_sub(p.pad_left));
    let left = p.pad_left.min(cols);
    let right = left + iw_end;
    let rows = p.rows_read(at.bo);
    // The band's staged rows inside the input: `j0..j1`, input rows `ih0..`.
    let first = at.oh0 * p.stride_h;
    let j0 = p.pad_top.saturating_sub(first).min(rows);
    let j1 = (p.pad_top + p.in_h).saturating_sub(first).clamp(j0, rows);
    for (j, srow) in stage[..rows * cols * l].chunks_exact_mut(cols * l).enumerate() {
        match (j0..j1).contains(&j) {
            true => {
                srow[..left * l].fill(0.0);
                srow[right * l..].fill(0.0);
            }
            false => srow.fill(0.0),
        }
    }
    if j0 == j1 {
        return;
    }
    let ih0 = first + j0 - p.pad_top;
    let plane = |ih: usize| (at.n * p.in_channels + at.c0) * in_plane + ih * p.in_w;
    if iw_end >= l {
        // Row by row, `L` columns at a time, the last `L` overlapping the ones before.
        for j in j0..j1 {
            // The row in the `L` planes, `in_plane` apart.
            let rows = &x[plane(ih0 + j - j0)..][..(l - 1) * in_plane + iw_end];
            let dst = &mut stage[(j * cols + left) * l..][..iw_end * l];
            for c in (0..iw_end).step_by(l) {
                let c0 = c.min(iw_end - l);
                S::transpose(&rows[c0..], in_plane, l, &mut dst[c0 * l..], l);
            }
        }
        return;
    }
    // Narrow rows: all the band's input rows as one run of positions (contiguous in each plane),
    // `L` at a time (the last `L` overlapping the ones before when the run is longer, the run
    // at once when it is shorter), transposed into `narrow`, position `q` landing at staged row
    // `j0 + q / in_w`, column `left + q % in_w` (if inside the columns read).
    let run = (j1 - j0) * p.in_w;
    let planes = &x[plane(ih0)..][..(l - 1) * in_plane + run];
    let n = l.min(run);
    // The staged row and input column of the next position to land.
    let (mut row, mut iw) = (j0, 0);
    for q in (0..run).step_by(l) {
        let q0 = q.min(run - n);
        if q0 < q {
            (row, iw) = (j0 + q0 / p.in_w, q0 % p.in_w);
        }
        S::transpose(&planes[q0..], in_plane, n, narrow, l);
        for k in 0..n {
            if iw < iw_end {
                S::store(&mut stage[(row * cols + left + iw) * l..], S::load(&narrow[k * l..]));
            }
            iw += 1;
            if iw == p.in_w {
                (row, iw) = (row + 1, 0);
            }
        }
    }
}

/// Output rows `rows` of a staged band into `out` (position `(oh, ow)` at
/// `out[((oh - rows.start) * out_w + ow) * L..]`, the `L` channels side by side), the activation
/// applied: `T` taps, several outputs at a time (independent chains of additions; one alone
/// waits on each addition's latency), taken in that order over the rows, so that narrow rows
/// (3x3 and 6x6 planes) fill the chains too: groups of 8 from [`WIDE_FROM`] outputs, else of 4,
/// one by one under 4 ([`groups`]).
#[inline(always)]
fn compute<S: Lanes, const T: usize>(
    p: &Conv2d,
    bands: Bands,
    rows: Range<usize>,
    wv: Weights<S::V>,
    stage: &[f32],
    out: &mut [f32],
) {
    let (l, cols) = (S::L, bands.cols);
    // Offset in the stage of each tap from an output's top-left staged value.
    let mut offsets = [0; T];
    for (t, o) in offsets.iter_mut().enumerate() {
        *o = ((t / p.kernel_w) * p.dilation_h * cols + (t % p.kernel_w) * p.dilation_w) * l;
    }
    let at = Taps { cols, offsets: &offsets };
    // Every tap of every output of the rows lies inside the staged rows.
    assert!(at.first::<S>(p, rows.end - 1, p.out_w - 1) + offsets[T - 1] + l <= stage.len());
    let positions = rows.len() * p.out_w;
    let out = &mut out[..positions * l];
    match positions {
        n if n >= WIDE_FROM => groups::<S, T, 8>(p, rows, at, wv, stage, out),
        n if n >= 4 => groups::<S, T, 4>(p, rows, at, wv, stage, out),
        _ => groups::<S, T, 1>(p, rows, at, wv, stage, out),
    }
}

/// The outputs from which [`compute`] keeps 8 in flight rather than 4: 10-15% faster on
/// MobileNetV2's and VWW's bands and 12x12 planes (72 to 288 outputs); on a 6x6 plane (36
/// outputs, 40 computed in groups of 8) no faster, and a 3x3 plane would compute 16.
const WIDE_FROM: usize = 48;

/// Where an output's taps lie in a staged band.
#[derive(Clone, Copy)]
struct Taps<'a, const T: usize> {
    /// Staged columns per staged row.
    cols: usize,
    /// Offset of each tap from an output's top-left staged value.
    offsets: &'a [usize; T],
}

impl<const T: usize> Taps<'_, T> {
    /// The top-left staged value of output `(oh, ow)`.
    #[inline(always)]
    fn first<S: Lanes>(&self, p: &Conv2d, oh: usize, ow: usize) -> usize {
        (oh * p.stride_h * self.cols + ow * p.stride_w) * S::L
    }
}

/// [`compute`]'s outputs in groups of `P` (at least `P` of them) in order over the rows, the
/// last group overlapping the one before when fewer than `P` are left (its shared outputs are
/// computed twice, the same way, into the same place).
#[inline(always)]
fn groups<S: Lanes, const T: usize, const P: usize>(
    p: &Conv2d,
    rows: Range<usize>,
    at: Taps<'_, T>,
    wv: Weights<S::V>,
    stage: &[f32],
    out: &mut [f32],
) {
    let (l, step) = (S::L, p.stride_w * S::L);
    let positions = rows.len() * p.out_w;
    // Output `i` of the rows is `(oh, ow)`, advanced without dividing (a division per output
    // took as long as a 3x3 output's arithmetic).
    let (mut i, mut oh, mut ow) = (0, rows.start, 0);
    loop {
        let (mut qh, mut qw) = (oh, ow);
        let mut starts = [0; P];
        match ow + P <= p.out_w {
            // The group inside one row: its outputs `step` apart.
            true => {
                let base = at.first::<S>(p, oh, ow);
                qw += P;
                for (q, s) in starts.iter_mut().enumerate() {
                    *s = base + q * step;
                }
            }
            // Across rows.
            false => {
                for s in starts.iter_mut() {
                    if qw == p.out_w {
                        (qh, qw) = (qh + 1, 0);
                    }
                    qw += 1;
                    *s = at.first::<S>(p, qh, qw - 1);
                }
            }
        }
        if qw == p.out_w {
            (qh, qw) = (qh + 1, 0);
        }
        let acc = outputs::<S, T, P>(wv, stage, starts, at.offsets);
        store_act::<S>(p, &acc, &mut out[i * l..][..P * l]);
        if i == positions - P {
            break;
        }
        // The next group, or the last one, overlapping this one.
        i += P;
        (oh, ow) = (qh, qw);
        if i > positions - P {
            i = positions - P;
            (oh, ow) = (rows.start + i / p.out_w, i % p.out_w);
        }
    }
}

/// `P` outputs, the `q`-th with its top-left staged value at `starts[q]`: `bias + w0 * x0 + w1 *
/// x1 + ...`. The caller has checked that every tap lies inside `stage`.
#[inline(always)]
fn outputs<S: Lanes, const T: usize, const P: usize>(
    wv: Weights<S::V>,
    stage: &[f32],
    starts: [usize; P],
    offsets: &[usize; T],
) -> [S::V; P] {
    let mut acc = [wv.bias; P];
    let at = stage.as_ptr();
    let taps = &wv.taps[..T * S::L];
    for (t, &off) in offsets.iter().enumerate() {
        // SAFETY: `t < T`, so tap `t`'s `L` lanes lie inside `taps`.
        let wt = unsafe { S::load_ptr(taps.as_ptr().add(t * S::L)) };
        for (a, &start) in acc.iter_mut().zip(&starts) {
            // SAFETY: the caller's check: `start + off + L <= stage.len()`.
            let x = unsafe { S::load_ptr(at.add(start + off)) };
            *a = S::add(*a, S::mul(wt, x));
        }
    }
    acc
}

/// Stores `acc` into `out` (whole vectors, one after another), the activation applied in
/// registers where it has a vector form ([`activate`]: the same values as
/// [`crate::Activation::apply`], NaN included), the others on a local copy (on `out`, LLVM wrote
/// a ReLU as a masked store, slow on AMD cores).
#[inline(always)]
fn store_act<S: Lanes>(p: &Conv2d, acc: &[S::V], out: &mut [f32]) {
    let l = S::L;
    for (&a, o) in acc.iter().zip(out.chunks_exact_mut(l)) {
        match activate::<S>(p.act, a) {
            Some(v) => S::store(o, v),
            None => {
                let mut lanes = [0.0; MAX_LANES];
                S::store(&mut lanes, a);
                p.act.apply_in_kernel(&mut lanes[..l]);
                o.copy_from_slice(&lanes[..l]);
            }
        }
    }
}

/// Writes a band's outputs into their planes: channel `c0 + ch`, rows `oh0..oh0 + bo`, `L`
/// positions at a time through [`Lanes::transpose`]. Fewer than `L` positions are one
/// transpose of `L` (`out` holds at least `L`; the values past the pass's, zeros or an earlier
/// pass's, land in lanes no store writes) into `narrow`, then each channel's first lanes stored;
/// against storing one value at a time, a VWW band layer's call (32 channels of 12 outputs at
/// stride 2, AVX-512) takes 0.70-0.78 of the time.
#[inline(always)]
fn unstage<S: Lanes>(p: &Conv2d, at: Band, out: &[f32], narrow: &mut [f32], y: &mut [f32]) {
    let l = S::L;
    let out_plane = p.out_h * p.out_w;
    let len = at.bo * p.out_w;
    let start = (at.n * p.out_channels + at.c0) * out_plane + at.oh0 * p.out_w;
    let y = &mut y[start..][..(l - 1) * out_plane + len];
    if len < l {
        S::transpose(out, l, l, narrow, l);
        for ch in 0..l {
            S::store_first(&mut y[ch * out_plane..], S::load(&narrow[ch * l..]), len);
        }
        return;
    }
    // `L` positions at a time, the last `L` overlapping the ones before (writing the same
    // values again).
    for q in (0..len).step_by(l) {
        let q0 = q.min(len - l);
        S::transpose(&out[q0 * l..], l, l, &mut y[q0..], out_plane);
    }
}
