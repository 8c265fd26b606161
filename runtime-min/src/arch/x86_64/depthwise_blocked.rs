//! The depthwise convolution (one input channel per group, channel multiplier 1) over blocks of
//! `L` channels, one per vector lane, on x86-64 with AVX2 + FMA or AVX-512F: plain Rust over
//! [`Lanes`] that the entry points of [`super`] compile with those features (everything here is
//! `#[inline(always)]`).
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
use super::lanes::{transpose8, Avx2 as S, Lanes};
use crate::arch::x86_64_facts::{DEPTHWISE_BLOCKED_BYTES, MAX_LANES};
use crate::arch::x86_64_facts::{
    DEPTHWISE_BLOCKED_MAX_TAPS as MAX_TAPS, DEPTHWISE_BLOCKED_OUT, DEPTHWISE_BLOCKED_STAGE,
};
use crate::conv_shape::Conv2d;
use crate::epilogue::Bias;
use crate::Activation;
use core::arch::x86_64::*;
use core::mem::MaybeUninit;
use core::ops::Range;

/// The kernel's stack buffers: the staged input band and its outputs, `f32`, aligned to a cache
/// line, so that the whole-vector loads and stores at multiples of `L` floats never straddle two
/// (on 4-byte-aligned buffers, half of them did: the band's arithmetic took twice as long).
#[repr(C, align(64))]
struct Buffers {
    stage: [MaybeUninit<f32>; DEPTHWISE_BLOCKED_STAGE],
    out: [MaybeUninit<f32>; DEPTHWISE_BLOCKED_OUT],
}

// What the kernel facts say [`depthwise_blocked`]'s arrays take: the buffers, the weight vectors
// of the largest kernel and the bias vector, its tap offsets, and the lanes of an activation's
// copy.
const _: () = assert!(
    core::mem::size_of::<Buffers>()
        + core::mem::size_of::<[__m256; MAX_TAPS + 1]>()
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
    /// The bands of `p` for `L` channels, or `None` if one output row's input rows do not fit
    /// the stage, or its outputs the output buffer. Separate planes: a band of as many output
    /// rows as both buffers hold. Planes `shared` in one region: one band of all output rows,
    /// `None` unless the stage holds them (a block's outputs may overwrite any of its input
    /// planes but the last).
    #[inline(always)]
    fn new(p: &Conv2d, shared: bool) -> Option<Bands> {
        let cols = p.cols_read();
        let by_stage = p.rows_fitting(DEPTHWISE_BLOCKED_STAGE / (cols * S::L)).min(p.out_h);
        let out_rows = (DEPTHWISE_BLOCKED_OUT / (p.out_w * S::L)).min(p.out_h);
        let rows = match shared {
            false => by_stage.min(out_rows),
            true if by_stage == p.out_h => by_stage,
            true => 0,
        };
        (rows > 0 && out_rows > 0).then_some(Bands { cols, rows, out_rows })
    }
}

/// Whether [`depthwise_blocked`] computes convolution `p` with `ocg` output channels per group,
/// its planes `shared` in one region or not: channel multiplier 1, at least one block of `L`
/// channels, a 3x3 or 5x5 kernel, and [`Bands::new`] has bands. At every width and stride it is
/// faster than the plane kernels of [`super::depthwise`] (which take the channels left): up to
/// 2x on narrow and strided planes, 10% on 48-wide rows at stride 1 (VWW's, MobileNetV2's
/// bands), 1.5-2x on 64x64 and 112x112 planes.
#[inline(always)]
pub(super) fn blocked_applies(p: &Conv2d, ocg: usize, shared: bool) -> bool {
    ocg == 1
        && p.groups == p.in_channels
        && p.out_channels >= S::L
        && matches!((p.kernel_h, p.kernel_w), (3, 3) | (5, 5))
        && Bands::new(p, shared).is_some()
}

/// The first `out_channels / L * L` output channels of a depthwise convolution that
/// [`blocked_applies`] to: `y[n, c] = act(bias[c] + conv(x[n, c], w[c]))`. Returns the channels
/// computed; the rest are the caller's. In a shared region, each block's input is staged whole
/// before its outputs are written.
#[inline(always)]
pub(super) fn depthwise_blocked(p: &Conv2d, ops: DepthwiseOperands) -> usize {
    let DepthwiseOperands { w, bias, planes, .. } = ops;
    let Some(bands) = Bands::new(p, planes.shared()) else { return 0 };
    match (p.kernel_h, p.kernel_w) {
        (3, 3) => blocks::<9>(p, bands, w, bias, planes),
        _ => blocks::<25>(p, bands, w, bias, planes),
    }
}

/// The channel blocks of [`depthwise_blocked`], with `T` (`kernel_h * kernel_w`) taps.
#[inline(always)]
fn blocks<const T: usize>(p: &Conv2d, bands: Bands, w: &[f32], bias: Bias, mut planes: Planes) -> usize {
    let mut buffers = Buffers {
        stage: [MaybeUninit::uninit(); DEPTHWISE_BLOCKED_STAGE],
        out: [MaybeUninit::uninit(); DEPTHWISE_BLOCKED_OUT],
    };
    // The parts a layer uses, zeroed once (zeroing all 40 KiB took longer than a small layer).
    let stage_buf = zeroed(&mut buffers.stage, p.rows_read(bands.rows) * bands.cols * S::L);
    let out_buf = zeroed(&mut buffers.out, bands.out_rows * p.out_w * S::L);
    let blocks = p.out_channels / S::L;
    for block in 0..blocks {
        let c0 = block * S::L;
        let wv = tap_vectors::<T>(p, w, c0);
        let bv = match bias {
            Bias::Row(b) => S::load(&b[c0..]),
            _ => S::zero(),
        };
        for n in 0..p.batch {
            let mut oh0 = 0;
            while oh0 < p.out_h {
                let bo = bands.rows.min(p.out_h - oh0);
                stage(p, bands, Band { n, c0, oh0, bo }, planes.x(), stage_buf);
                let mut done = 0;
                while done < bo {
                    let rows = bands.out_rows.min(bo - done);
                    compute::<T>(p, bands, done..done + rows, &wv, bv, stage_buf, out_buf);
                    unstage(p, Band { n, c0, oh0: oh0 + done, bo: rows }, out_buf, planes.y());
                    done += rows;
                }
                oh0 += bo;
            }
        }
    }
    blocks * S::L
}

/// One vector per tap of channels `c0..c0 + L`: lane `ch` holds the tap's weight of channel
/// `c0 + ch`. With one output channel per group, channel `c0 + ch`'s `T` taps follow `c0`'s,
/// `ch * T` after them, in both weight layouts: eight taps of the eight channels at a time are
/// one [`transpose8`] of eight loads (the last eight overlapping the ones before), not 8 `T`
/// lanes written one by one and read back as vectors (which waited on store forwarding).
#[inline(always)]
fn tap_vectors<const T: usize>(p: &Conv2d, w: &[f32], c0: usize) -> [__m256; T] {
    const { assert!(T >= 8) };
    let (w0, _, ws) = p.weights.gemm_operand(c0, 1, T);
    debug_assert_eq!(ws, 1);
    let block = &w[w0..][..S::L * T];
    let mut wv = [S::zero(); T];
    for t in (0..T).step_by(8) {
        let t0 = t.min(T - 8);
        let taps = transpose8(core::array::from_fn(|ch| S::load(&block[ch * T + t0..])));
        wv[t0..t0 + 8].copy_from_slice(&taps);
    }
    wv
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
fn stage(p: &Conv2d, bands: Bands, at: Band, x: &[f32], stage: &mut [f32]) {
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
    let plane = |ch: usize, ih: usize| (at.n * p.in_channels + at.c0 + ch) * in_plane + ih * p.in_w;
    if iw_end >= 8 {
        // Row by row, eight columns at a time, the last eight overlapping the ones before.
        for j in j0..j1 {
            // The row in the eight planes, `in_plane` apart (one slice: eight would not stay in
            // registers).
            let rows = &x[plane(0, ih0 + j - j0)..][..7 * in_plane + iw_end];
            let dst = &mut stage[(j * cols + left) * l..][..iw_end * l];
            for c in (0..iw_end).step_by(8) {
                let c0 = c.min(iw_end - 8);
                // SAFETY: `ch * in_plane + c0 + 8 <= 7 * in_plane + iw_end = rows.len()`.
                let columns = transpose8(core::array::from_fn(|ch| unsafe {
                    S::load_ptr(rows.as_ptr().add(ch * in_plane + c0))
                }));
                for (k, v) in columns.into_iter().enumerate() {
                    S::store(&mut dst[(c0 + k) * l..], v);
                }
            }
        }
        return;
    }
    // Narrow rows: all the band's input rows as one run of positions (contiguous in each plane),
    // eight at a time (the last eight overlapping the ones before when the run is longer),
    // position `q` landing at staged row `j0 + q / in_w`, column `left + q % in_w` (if inside
    // the columns read).
    let run = (j1 - j0) * p.in_w;
    let planes: [&[f32]; 8] = core::array::from_fn(|ch| &x[plane(ch, ih0)..][..run]);
    // The staged row and input column of the next position to land.
    let (mut row, mut iw) = (j0, 0);
    let mut vectors = [S::zero(); 8];
    for q in (0..run).step_by(8) {
        // Eight positions (or, for a run under eight, the run), the last eight overlapping the
        // ones before.
        let q0 = match run < 8 {
            true => {
                for (at, v) in vectors[..run].iter_mut().enumerate() {
                    let mut lanes = [0.0; 8];
                    for (l, plane) in lanes.iter_mut().zip(&planes) {
                        *l = plane[at];
                    }
                    *v = S::load(&lanes);
                }
                0
            }
            false => {
                let q0 = q.min(run - 8);
                if q0 < q {
                    (row, iw) = (j0 + q0 / p.in_w, q0 % p.in_w);
                }
                vectors = transpose8(core::array::from_fn(|ch| S::load(&planes[ch][q0..])));
                q0
            }
        };
        for &v in &vectors[..(run - q0).min(8)] {
            if iw < iw_end {
                S::store(&mut stage[(row * cols + left + iw) * l..], v);
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
fn compute<const T: usize>(
    p: &Conv2d,
    bands: Bands,
    rows: Range<usize>,
    wv: &[__m256; T],
    bv: __m256,
    stage: &[f32],
    out: &mut [f32],
) {
    let (l, cols) = (S::L, bands.cols);
    // Offset in the stage of each tap from an output's top-left staged value.
    let offsets: [usize; T] =
        core::array::from_fn(|t| ((t / p.kernel_w) * p.dilation_h * cols + (t % p.kernel_w) * p.dilation_w) * l);
    let at = Taps { cols, offsets: &offsets };
    // Every tap of every output of the rows lies inside the staged rows.
    assert!(at.first(p, rows.end - 1, p.out_w - 1) + offsets[T - 1] + l <= stage.len());
    let positions = rows.len() * p.out_w;
    let out = &mut out[..positions * l];
    match positions {
        n if n >= WIDE_FROM => groups::<T, 8>(p, rows, at, wv, bv, stage, out),
        n if n >= 4 => groups::<T, 4>(p, rows, at, wv, bv, stage, out),
        _ => groups::<T, 1>(p, rows, at, wv, bv, stage, out),
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
    fn first(&self, p: &Conv2d, oh: usize, ow: usize) -> usize {
        (oh * p.stride_h * self.cols + ow * p.stride_w) * S::L
    }
}

/// [`compute`]'s outputs in groups of `P` (at least `P` of them) in order over the rows, the
/// last group overlapping the one before when fewer than `P` are left (its shared outputs are
/// computed twice, the same way, into the same place).
#[inline(always)]
fn groups<const T: usize, const P: usize>(
    p: &Conv2d,
    rows: Range<usize>,
    at: Taps<'_, T>,
    wv: &[__m256; T],
    bv: __m256,
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
        let starts = match ow + P <= p.out_w {
            // The group inside one row: its outputs `step` apart.
            true => {
                let base = at.first(p, oh, ow);
                qw += P;
                core::array::from_fn(|q| base + q * step)
            }
            // Across rows.
            false => core::array::from_fn(|_| {
                if qw == p.out_w {
                    (qh, qw) = (qh + 1, 0);
                }
                qw += 1;
                at.first(p, qh, qw - 1)
            }),
        };
        if qw == p.out_w {
            (qh, qw) = (qh + 1, 0);
        }
        store_act(p, &outputs::<T, P>(wv, bv, stage, starts, at.offsets), &mut out[i * l..][..P * l]);
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
fn outputs<const T: usize, const P: usize>(
    wv: &[__m256; T],
    bv: __m256,
    stage: &[f32],
    starts: [usize; P],
    offsets: &[usize; T],
) -> [__m256; P] {
    let mut acc = [bv; P];
    let at = stage.as_ptr();
    for (&wt, &off) in wv.iter().zip(offsets) {
        for (a, &start) in acc.iter_mut().zip(&starts) {
            // SAFETY: the caller's check: `start + off + L <= stage.len()`.
            let x = unsafe { S::load_ptr(at.add(start + off)) };
            *a = S::add(*a, S::mul(wt, x));
        }
    }
    acc
}

/// Stores `acc` into `out` (whole vectors, one after another), the activation applied in
/// registers: ReLU and Clip as vector maxima and minima (the same values as
/// [`Activation::apply`], NaN included), the others on a local copy (on `out`, LLVM wrote a ReLU
/// as a masked store, slow on AMD cores).
#[inline(always)]
fn store_act(p: &Conv2d, acc: &[__m256], out: &mut [f32]) {
    let l = S::L;
    for (&a, o) in acc.iter().zip(out.chunks_exact_mut(l)) {
        // SAFETY (the intrinsics): AVX, as in `transpose8`. `max_ps(m, v)` is `m > v ? m : v`
        // and `min_ps(m, v)` is `m < v ? m : v`, `v` when either is NaN, as in `relu_f` and
        // `clip_f` (for `min <= max`).
        match p.act {
            Activation::None => S::store(o, a),
            Activation::Relu => S::store(o, unsafe { _mm256_max_ps(S::zero(), a) }),
            Activation::Clip { min, max } if min <= max => {
                S::store(o, unsafe { _mm256_min_ps(S::splat(max), _mm256_max_ps(S::splat(min), a)) })
            }
            act => {
                let mut lanes = [0.0; MAX_LANES];
                S::store(&mut lanes, a);
                act.apply_in_kernel(&mut lanes[..l]);
                o.copy_from_slice(&lanes[..l]);
            }
        }
    }
}

/// Writes a band's outputs into their planes: channel `c0 + ch`, rows `oh0..oh0 + bo`, eight
/// positions at a time through [`transpose8`].
#[inline(always)]
fn unstage(p: &Conv2d, at: Band, out: &[f32], y: &mut [f32]) {
    let out_plane = p.out_h * p.out_w;
    let len = at.bo * p.out_w;
    let start = (at.n * p.out_channels + at.c0) * out_plane + at.oh0 * p.out_w;
    let y = &mut y[start..][..7 * out_plane + len];
    if len < 8 {
        for q in 0..len {
            for ch in 0..8 {
                y[ch * out_plane + q] = out[q * 8 + ch];
            }
        }
        return;
    }
    // Eight positions at a time, the last eight overlapping the ones before (writing the same
    // values again).
    for q in (0..len).step_by(8) {
        let q0 = q.min(len - 8);
        let planes = transpose8(core::array::from_fn(|k| S::load(&out[(q0 + k) * 8..])));
        for (ch, v) in planes.into_iter().enumerate() {
            S::store(&mut y[ch * out_plane + q0..], v);
        }
    }
}
