//! The depthwise convolution at stride 1 on AVX-512F, read and written where its NCHW planes are:
//! no staging, no transposes, no zero padding. Plain Rust over the AVX-512 intrinsics, compiled
//! into the AVX-512 entry point of [`super`] (everything here is `#[inline(always)]`).
//!
//! At stride 1 with rows as wide in the output as in the input, output position `p` of a
//! flattened plane reads tap `(kh, kw)` at input position `p + off(kh, kw)`, one offset per tap
//! for the whole plane. So 16 consecutive outputs, whatever rows they span, are one vector per
//! tap: a load at that offset, masked to the lanes whose tap lands inside the input (the row
//! above the plane, the column left of a row's start: AVX-512's masked loads neither read nor
//! fault on masked-off lanes, which load zero), a product and an add. The masks depend only on
//! the position and the tap, so they are computed once per call, for every vector of a plane
//! and every tap, and shared by all channels.
//!
//! Each output is `act(bias + w0 * x0 + w1 * x1 + ...)`, each product rounded, then added in
//! row-major tap order, a tap outside the input adding `w * 0`: the channel-blocked kernel's
//! sums (it stages the padding as zeros), which the AVX2 path runs on the same layers
//! ([`masked_applies`] takes no other), so both paths give the same bits; and the direct
//! convolution's values (which skips those taps: for finite weights only a zero sum's sign can
//! differ).
//!
//! Several independent sums are kept at once (the add's latency is hidden), all their taps read
//! before any output is stored. Layers of 16 channels and more on separate planes take up to
//! four vectors of a plane through every channel, four channels at a time, so that a vector's
//! masks are read once for all channels (in mask registers where only the kernel column decides
//! them) and a weight broadcast serves every vector. Others, and every layer whose input and
//! output share a region, take up to eight vectors of one plane at a time, channel after channel:
//! a channel's output plane ends at or before its input plane starts, so its stores only
//! overwrite planes already read.

use super::depthwise_blocked::blocked_applies;
use super::depthwise_io::{DepthwiseOperands, Planes};
use super::lanes::{activate, Avx2, Avx512, Lanes};
use crate::arch::x86_64_facts::{DEPTHWISE_BLOCKED_MAX_TAPS, DEPTHWISE_MASKED_BYTES, DEPTHWISE_MASKS};
use crate::conv_shape::Conv2d;
use crate::epilogue::Bias;
use core::arch::x86_64::*;

/// Lanes per vector.
const L: usize = 16;

/// Most taps (those of the channel-blocked kernel, which the layers have: 3x3 or 5x5).
const MAX_TAPS: usize = DEPTHWISE_BLOCKED_MAX_TAPS;

/// The per-call tables: a mask per vector of a plane and tap (`masks[v * taps + t]`: the lanes
/// of vector `v` whose tap `t` lands inside the input and whose position is inside the plane),
/// and each tap's offset from an output position to the input position it reads.
struct Tables {
    masks: [u16; DEPTHWISE_MASKS],
    offsets: [isize; MAX_TAPS],
}

// What the kernel facts say [`depthwise_masked`]'s tables take.
const _: () = assert!(core::mem::size_of::<Tables>() == DEPTHWISE_MASKED_BYTES);

/// Vectors of `L` outputs per output plane of `p`.
#[inline(always)]
fn vectors(p: &Conv2d) -> usize {
    (p.out_h * p.out_w).div_ceil(L)
}

/// Whether [`depthwise_masked`] computes depthwise convolution `p` with `ocg` output channels per
/// group, its planes `shared` in one region or not: a layer whose channels the channel-blocked
/// kernel would all take ([`blocked_applies`], whole blocks of 8), at stride 1, with output rows
/// as wide as the input's, planes of at least four vectors or taken by [`by_vectors`] (on smaller
/// planes the channel-blocked kernel is faster than [`by_channels`], MobileNetV2's 144 planes of
/// 6x6 3.9-4.0 against 5.2-5.4 us, and slower than [`by_vectors`], p10 against it: VWW's 128
/// planes of 6x6 0.86-0.88, its 256 of 3x3 0.66-0.67, 96 planes of 6x6 0.87-0.89, 24 of 5x5
/// 0.60-0.63, 32 of 2x2 1.01-1.03), a mask for every vector and tap within [`DEPTHWISE_MASKS`], and
/// an activation with a vector form.
#[inline(always)]
pub(super) fn masked_applies(p: &Conv2d, ocg: usize, shared: bool) -> bool {
    let nv = vectors(p);
    blocked_applies(p, ocg, shared)
        && p.out_channels.is_multiple_of(Avx2::L)
        && p.stride_h == 1
        && p.stride_w == 1
        && p.out_w == p.in_w
        && (nv >= 4 || !shared && p.out_channels >= BY_VECTORS_FROM)
        && nv * p.kernel_h * p.kernel_w <= DEPTHWISE_MASKS
        && activate::<Avx512>(p.act, Avx512::zero()).is_some()
}

/// All output planes of a depthwise convolution that [`masked_applies`] to:
/// `y[n, c] = act(bias[c] + conv(x[n, c], w[c]))`: [`by_vectors`] on separate planes of at least
/// [`BY_VECTORS_FROM`] channels, else [`by_channels`] (the only order for a region shared by
/// input and output).
#[inline(always)]
pub(super) fn depthwise_masked(p: &Conv2d, ops: DepthwiseOperands) {
    let DepthwiseOperands { w, bias, planes, .. } = ops;
    let mut tables = Tables { masks: [0; DEPTHWISE_MASKS], offsets: [0; MAX_TAPS] };
    fill_tables(p, &mut tables);
    let layer = Layer { p, tables: &tables, w, bias };
    match (planes, p.kernel_h * p.kernel_w) {
        (Planes::Split { x, y }, 9) if p.out_channels >= BY_VECTORS_FROM => by_vectors::<9>(layer, x, y),
        (Planes::Split { x, y }, 25) if p.out_channels >= BY_VECTORS_FROM => by_vectors::<25>(layer, x, y),
        (planes, _) => by_channels(layer, planes),
    }
}

/// What every tile of one call reads: the layer, its tables, weights and bias.
#[derive(Clone, Copy)]
struct Layer<'a> {
    p: &'a Conv2d,
    tables: &'a Tables,
    w: &'a [f32],
    bias: Bias<'a>,
}

/// Channels [`by_vectors`] sums at once ([`masked_applies`] takes whole blocks of 8).
const GROUP: usize = 4;

/// The planes one channel after another, a plane's vectors eight at a time (then four, then the
/// rest). In a shared region a channel's output plane ends at or before its input plane starts,
/// so its stores only overwrite planes already read, none that a later channel reads.
#[inline(always)]
fn by_channels(layer: Layer, mut planes: Planes) {
    let Layer { p, tables, w, .. } = layer;
    let nv = vectors(p);
    let taps = p.kernel_h * p.kernel_w;
    let (in_plane, out_plane) = (p.in_h * p.in_w, p.out_h * p.out_w);
    for n in 0..p.batch {
        for oc in 0..p.out_channels {
            let (w0, _, ws) = p.weights.gemm_operand(oc, 1, taps);
            let chan = Channel {
                p,
                tables,
                x_at: (n * p.in_channels + oc) * in_plane,
                y_at: (n * p.out_channels + oc) * out_plane,
                w: &w[w0..][..(taps - 1) * ws + 1],
                ws,
                bias: layer.bias.row(oc),
            };
            let mut v = 0;
            while v < nv {
                v += match nv - v {
                    1 => chan.tile::<1>(&mut planes, v),
                    2 => chan.tile::<2>(&mut planes, v),
                    3 => chan.tile::<3>(&mut planes, v),
                    4..=7 => chan.tile::<4>(&mut planes, v),
                    _ => chan.tile::<8>(&mut planes, v),
                };
            }
        }
    }
}

/// Separate planes, `T` taps: four (else two, else one) vectors of a plane at a time, through all
/// channels [`GROUP`] at a time ([`across_channels`]), so that the vectors' masks are read once
/// for every channel and each weight broadcast serves every vector. Where a vector's masks depend
/// only on the kernel column (every kernel row inside the input: all rows but the first and last
/// few), its taps need `kernel_w` masks, which mostly stay in mask registers: [`by_channels`]
/// read a mask from memory for every load, and on this kernel's layers the loads are the bound
/// (on a Sapphire Rapids core, masked loads with a mask register ran 1.4x as many products per
/// second as with a mask read for each). Against [`by_channels`] in one process, p10 times:
/// KWS's 64 planes of 25x5 0.83-0.84 (3.8 -> 3.2 us), 64 planes of 12x12 0.87-0.88, a 5x5 kernel
/// on them 0.84-0.95, 32 and 64 planes of 24x24 0.87-0.90, 16 of them 0.92-0.96, 16 planes of
/// 48x48 0.93-0.97; with 8 channels (two groups per set of vectors) it was 1.1x slower, so
/// [`by_channels`] takes those layers ([`BY_VECTORS_FROM`]).
#[inline(always)]
fn by_vectors<const T: usize>(layer: Layer, x: &[f32], y: &mut [f32]) {
    let nv = vectors(layer.p);
    let masks = Masks::<T> { table: &layer.tables.masks[..nv * T], kernel_w: layer.p.kernel_w };
    for n in 0..layer.p.batch {
        // A vector whose masks need every tap waits for a second one.
        let mut pending = None;
        let mut v = 0;
        while v < nv {
            match (v..nv).take(4).take_while(|&u| masks.by_column(u)).count() {
                4 => {
                    let vs = [v, v + 1, v + 2, v + 3];
                    across_channels::<T, 4>(layer, (x, y), n, vs, masks.of(vs));
                    v += 4;
                }
                2 | 3 => {
                    across_channels::<T, 2>(layer, (x, y), n, [v, v + 1], masks.of([v, v + 1]));
                    v += 2;
                }
                _ => {
                    if let Some(u) = pending.take() {
                        across_channels::<T, 2>(layer, (x, y), n, [u, v], masks.of([u, v]));
                    } else {
                        pending = Some(v);
                    }
                    v += 1;
                }
            }
        }
        if let Some(u) = pending {
            across_channels::<T, 1>(layer, (x, y), n, [u], masks.of([u]));
        }
    }
}

/// The channels from which [`by_vectors`] takes a layer on separate planes.
const BY_VECTORS_FROM: usize = 16;

/// The masks of [`Tables`] for a kernel of `T` taps, `kernel_w` wide.
struct Masks<'a, const T: usize> {
    table: &'a [u16],
    kernel_w: usize,
}

impl<const T: usize> Masks<'_, T> {
    /// Vector `v`'s masks, tap by tap.
    #[inline(always)]
    fn taps(&self, v: usize) -> &[u16] {
        &self.table[v * T..][..T]
    }

    /// Whether every tap of vector `v` has the mask of its column's tap in the first kernel row
    /// (kernel rows compared whole, without a division per tap).
    #[inline(always)]
    fn by_column(&self, v: usize) -> bool {
        let (first, rest) = self.taps(v).split_at(self.kernel_w);
        rest.chunks_exact(self.kernel_w).all(|row| row == first)
    }

    /// The masks of vectors `vs`, tap by tap: the table's (where `by_column`, which the caller
    /// has checked for every vector, each kernel row's are the first row's).
    #[inline(always)]
    fn of<const V: usize>(&self, vs: [usize; V]) -> [[u16; T]; V] {
        let mut m = [[0; T]; V];
        for (mv, &v) in m.iter_mut().zip(&vs) {
            mv.copy_from_slice(self.taps(v));
        }
        m
    }
}

/// Vectors `vs` of image `n`'s planes, every channel, [`GROUP`] channels at a time: for each tap
/// in order, each channel's weight broadcast once and multiplied into its `V` vectors, masked
/// load by masked load (`masks[i][t]` for vector `vs[i]` and tap `t`: the table's masks), then
/// the activation and the stores.
#[inline(always)]
fn across_channels<const T: usize, const V: usize>(
    layer: Layer,
    (x, y): (&[f32], &mut [f32]),
    n: usize,
    vs: [usize; V],
    masks: [[u16; T]; V],
) {
    let Layer { p, tables, w, .. } = layer;
    let (in_plane, out_plane) = (p.in_h * p.in_w, p.out_h * p.out_w);
    let offsets = &tables.offsets[..T];
    for c0 in (0..p.out_channels).step_by(GROUP) {
        let mut acc = [[Avx512::zero(); V]; GROUP];
        let mut planes = [x.as_ptr(); GROUP];
        let mut taps: [&[f32]; GROUP] = [&[]; GROUP];
        let mut ws = 1;
        for (c, ((acc, plane), taps)) in acc.iter_mut().zip(&mut planes).zip(&mut taps).enumerate() {
            let oc = c0 + c;
            *acc = [Avx512::splat(layer.bias.row(oc)); V];
            *plane = x[(n * p.in_channels + oc) * in_plane..][..in_plane].as_ptr();
            let (w0, _, s) = p.weights.gemm_operand(oc, 1, T);
            (*taps, ws) = (&w[w0..][..(T - 1) * s + 1], s);
        }
        for (t, &off) in offsets.iter().enumerate() {
            for c in 0..GROUP {
                let wv = Avx512::splat(taps[c][t * ws]);
                for (i, &v) in vs.iter().enumerate() {
                    // SAFETY: AVX-512F (as in `fill_tables`); the load reads only the lanes of
                    // mask `masks[i][t]`, the table's mask of vector `v` and tap `t`, whose input
                    // positions `fill_tables` found inside the plane (a slice of `x` above).
                    unsafe {
                        let at = planes[c].wrapping_add(v * L).wrapping_offset(off);
                        let xv = _mm512_maskz_loadu_ps(masks[i][t], at);
                        acc[c][i] = _mm512_add_ps(acc[c][i], _mm512_mul_ps(wv, xv));
                    }
                }
            }
        }
        for (c, acc) in acc.iter().enumerate() {
            let y = &mut y[(n * p.out_channels + c0 + c) * out_plane..][..out_plane];
            for (&a, &v) in acc.iter().zip(&vs) {
                let out = activate::<Avx512>(p.act, a).expect("masked_applies checked the activation");
                let at = v * L;
                let k = L.min(out_plane - at);
                Avx512::store_first(&mut y[at..at + k], out, k);
            }
        }
    }
}

/// The masks and offsets of convolution `p` (see [`Tables`]): lane by lane, the output row and
/// column of each position, stepped a vector at a time, compared against each tap's row and
/// column shift.
#[inline(always)]
fn fill_tables(p: &Conv2d, tables: &mut Tables) {
    let taps = p.kernel_h * p.kernel_w;
    let width = p.out_w as i32;
    let positions = (p.out_h * p.out_w) as i32;
    // Kernel row `kh`'s and column `kw`'s shifts, taps in row-major order. No division: one per
    // tap and vector here, and per tap in `Masks::by_column`, made VWW's band layers (8 and 32
    // channels, rows of 48 and 24) 1.15-1.2x slower.
    let row_shift = |kh: usize| (kh * p.dilation_h) as i32 - p.pad_top as i32;
    let col_shift = |kw: usize| (kw * p.dilation_w) as i32 - p.pad_left as i32;
    let mut offsets = tables.offsets[..taps].iter_mut();
    for kh in 0..p.kernel_h {
        for (kw, off) in (0..p.kernel_w).zip(offsets.by_ref()) {
            *off = row_shift(kh) as isize * p.in_w as isize + col_shift(kw) as isize;
        }
    }
    // SAFETY (every intrinsic below): AVX-512F, which the entry point calling this is compiled
    // with and only called where detection found it.
    unsafe {
        let lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        let mut row = rows_of_lanes(lanes, width);
        let mut col = _mm512_sub_epi32(lanes, _mm512_mullo_epi32(row, _mm512_set1_epi32(width)));
        let mut pos = lanes;
        let (step_rows, step_cols) = (_mm512_set1_epi32(L as i32 / width), _mm512_set1_epi32(L as i32 % width));
        let (rows_in, cols_in) = (_mm512_set1_epi32(p.in_h as i32), _mm512_set1_epi32(width));
        // Lanes `v` with `0 <= v + shift < limit`.
        let inside = |v: __m512i, shift: i32, limit: __m512i| {
            let at = _mm512_add_epi32(v, _mm512_set1_epi32(shift));
            _mm512_mask_cmplt_epi32_mask(_mm512_cmpge_epi32_mask(at, _mm512_setzero_si512()), at, limit)
        };
        for masks in tables.masks[..vectors(p) * taps].chunks_exact_mut(taps) {
            let in_plane = _mm512_cmplt_epi32_mask(pos, _mm512_set1_epi32(positions));
            let mut masks = masks.iter_mut();
            for kh in 0..p.kernel_h {
                let in_rows = in_plane & inside(row, row_shift(kh), rows_in);
                for (kw, m) in (0..p.kernel_w).zip(masks.by_ref()) {
                    *m = in_rows & inside(col, col_shift(kw), cols_in);
                }
            }
            // The next vector's positions: `L` further on, `L / width` rows and `L % width`
            // columns, and one more row where the columns pass the row's end.
            pos = _mm512_add_epi32(pos, _mm512_set1_epi32(L as i32));
            row = _mm512_add_epi32(row, step_rows);
            col = _mm512_add_epi32(col, step_cols);
            let wrapped = _mm512_cmpge_epi32_mask(col, cols_in);
            col = _mm512_mask_sub_epi32(col, wrapped, col, cols_in);
            row = _mm512_mask_add_epi32(row, wrapped, row, _mm512_set1_epi32(1));
        }
    }
}

/// `lanes / width` for the lanes `0..16` and `width >= 1`, lane by lane (an integer division
/// AVX-512F lacks, by counting the multiples of `width` at or below each lane).
#[inline(always)]
fn rows_of_lanes(lanes: __m512i, width: i32) -> __m512i {
    // SAFETY: as in `fill_tables`.
    unsafe {
        let mut rows = _mm512_setzero_si512();
        let mut edge = width;
        while edge < L as i32 {
            let past = _mm512_cmpge_epi32_mask(lanes, _mm512_set1_epi32(edge));
            rows = _mm512_mask_add_epi32(rows, past, rows, _mm512_set1_epi32(1));
            edge += width;
        }
        rows
    }
}

/// One output channel of one image: its input plane at `x_at` and output plane at `y_at`
/// (relative to their operands), its taps `w[t * ws]` and its bias.
struct Channel<'a> {
    p: &'a Conv2d,
    tables: &'a Tables,
    x_at: usize,
    y_at: usize,
    w: &'a [f32],
    ws: usize,
    bias: f32,
}

impl Channel<'_> {
    /// Vectors `v0..v0 + V` of the channel's output plane: all their taps summed in registers
    /// from the input plane, then stored (their lanes inside the plane). In a region shared by
    /// input and output, the output plane ends at or before its input plane starts, so the
    /// stores only overwrite planes already read. Returns `V`.
    #[inline(always)]
    fn tile<const V: usize>(&self, planes: &mut Planes, v0: usize) -> usize {
        let Channel { p, tables, w, ws, .. } = *self;
        let (in_plane, out_plane) = (p.in_h * p.in_w, p.out_h * p.out_w);
        let x = &planes.x()[self.x_at..][..in_plane];
        // Where vector `v0`'s outputs would be in the input plane (past its end where the output
        // is taller than the input: only the masked loads' lanes, inside `x`, are read).
        let base = x.as_ptr().wrapping_add(v0 * L);
        let taps = p.kernel_h * p.kernel_w;
        let acc = match taps {
            9 => sum::<V, 9>(tables, taps, base, w, ws, self.bias, v0),
            _ => sum::<V, 0>(tables, taps, base, w, ws, self.bias, v0),
        };
        let y = &mut planes.y()[self.y_at..][..out_plane];
        for (v, &a) in acc.iter().enumerate() {
            let out = activate::<Avx512>(p.act, a).expect("masked_applies checked the activation");
            let at = (v0 + v) * L;
            let n = L.min(out_plane - at);
            Avx512::store_first(&mut y[at..at + n], out, n);
        }
        V
    }
}

/// The sums of [`Channel::tile`] before the activation, over `T` taps, or `taps` where `T` is 0
/// (a 3x3 kernel's loop unrolled whole).
#[inline(always)]
fn sum<const V: usize, const T: usize>(
    tables: &Tables,
    taps: usize,
    base: *const f32,
    w: &[f32],
    ws: usize,
    bias: f32,
    v0: usize,
) -> [__m512; V] {
    let taps = if T == 0 { taps } else { T };
    let mut acc = [Avx512::splat(bias); V];
    let masks: [&[u16]; V] = core::array::from_fn(|v| &tables.masks[(v0 + v) * taps..][..taps]);
    for (t, &off) in tables.offsets[..taps].iter().enumerate() {
        let wv = Avx512::splat(w[t * ws]);
        for v in 0..V {
            let m = masks[v][t];
            // SAFETY: AVX-512F (as in `fill_tables`); the load reads only the lanes of mask `m`,
            // whose input positions `fill_tables` found inside the plane whose vector `v0` starts
            // at `base`.
            unsafe {
                let xv = _mm512_maskz_loadu_ps(m, base.wrapping_add(v * L).wrapping_offset(off));
                acc[v] = _mm512_add_ps(acc[v], _mm512_mul_ps(wv, xv));
            }
        }
    }
    acc
}
