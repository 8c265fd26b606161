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
//! Up to eight vectors of one plane are summed at once (their chains are independent: the add's
//! latency is hidden), all their taps read before any output is stored. In a region shared by
//! input and output, a channel's output plane ends at or before its input plane starts, so its
//! stores only overwrite planes already read.

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
/// as wide as the input's, planes of at least four vectors (on smaller ones the channel-blocked
/// kernel is faster: MobileNetV2's 144 planes of 6x6, 3.9-4.0 against 5.2-5.4 us), a mask for
/// every vector and tap within [`DEPTHWISE_MASKS`], and an activation with a vector form.
#[inline(always)]
pub(super) fn masked_applies(p: &Conv2d, ocg: usize, shared: bool) -> bool {
    let nv = vectors(p);
    blocked_applies(p, ocg, shared)
        && p.out_channels.is_multiple_of(Avx2::L)
        && p.stride_h == 1
        && p.stride_w == 1
        && p.out_w == p.in_w
        && nv >= 4
        && nv * p.kernel_h * p.kernel_w <= DEPTHWISE_MASKS
        && activate::<Avx512>(p.act, Avx512::zero()).is_some()
}

/// All output planes of a depthwise convolution that [`masked_applies`] to:
/// `y[n, c] = act(bias[c] + conv(x[n, c], w[c]))`, a plane's vectors eight at a time (then four,
/// then the rest).
#[inline(always)]
pub(super) fn depthwise_masked(p: &Conv2d, ops: DepthwiseOperands) {
    let DepthwiseOperands { w, bias, mut planes, .. } = ops;
    let mut tables = Tables { masks: [0; DEPTHWISE_MASKS], offsets: [0; MAX_TAPS] };
    fill_tables(p, &mut tables);
    let nv = vectors(p);
    let taps = p.kernel_h * p.kernel_w;
    let (in_plane, out_plane) = (p.in_h * p.in_w, p.out_h * p.out_w);
    for n in 0..p.batch {
        for oc in 0..p.out_channels {
            let (w0, _, ws) = p.weights.gemm_operand(oc, 1, taps);
            let chan = Channel {
                p,
                tables: &tables,
                x_at: (n * p.in_channels + oc) * in_plane,
                y_at: (n * p.out_channels + oc) * out_plane,
                w: &w[w0..][..(taps - 1) * ws + 1],
                ws,
                bias: match bias {
                    Bias::Row(b) => b[oc],
                    _ => 0.0,
                },
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

/// The masks and offsets of convolution `p` (see [`Tables`]): lane by lane, the output row and
/// column of each position, stepped a vector at a time, compared against each tap's row and
/// column shift.
#[inline(always)]
fn fill_tables(p: &Conv2d, tables: &mut Tables) {
    let taps = p.kernel_h * p.kernel_w;
    let width = p.out_w as i32;
    let positions = (p.out_h * p.out_w) as i32;
    let row_shift = |t: usize| ((t / p.kernel_w) * p.dilation_h) as i32 - p.pad_top as i32;
    let col_shift = |t: usize| ((t % p.kernel_w) * p.dilation_w) as i32 - p.pad_left as i32;
    for (t, off) in tables.offsets[..taps].iter_mut().enumerate() {
        *off = row_shift(t) as isize * p.in_w as isize + col_shift(t) as isize;
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
            for (t, m) in masks.iter_mut().enumerate() {
                *m = in_plane & inside(row, row_shift(t), rows_in) & inside(col, col_shift(t), cols_in);
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
