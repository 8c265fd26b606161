//! The int8 / uint8 depthwise convolution ([`crate::quant::depthwise_conv2d`]) 16 output
//! channels at a time, for NHWC layers and narrow NCHW planes: the plane-order kernel
//! ([`super::depthwise`]) computes one channel's positions per vector, and on the small planes of
//! a network's last stages (6x6, 3x3 with hundreds of channels), or on NHWC inputs whose
//! channels it stages one by one, its per-channel staging and output stage cost more than the
//! taps. Here each vector holds 16 channels of one output position:
//!
//! - the padded input rows of a band of output rows of 16 output channels are staged as `i16`,
//!   position by position (`[row][column][channel]`, the padding the input zero point): NHWC
//!   inputs one widening load per position, NCHW planes 16 elements of 16 channels per 16x16
//!   byte transpose;
//! - taps go by pairs `(t, u)`: the 16 channels' inputs of `t` and of `u` interleaved
//!   (`VPUNPCKLWD` / `VPUNPCKHWD`) give, in each `i32` lane, one channel's two inputs, multiplied
//!   by the pair's weights interleaved alike once per group (`VPMADDWD`: products of at most 255 x
//!   255, exact);
//! - the unpacks put channels 0-3 and 8-11 in one accumulator and 4-7 and 12-15 in the other,
//!   each with its channels' output stage ([`Requant8::channels`], built once per group), and the
//!   16-bit pack of the two restores the channel order; NCHW outputs go back through the
//!   transpose.
//!
//! `bias[o] + sum_t (w[t][o] - w_zero_point) * x_t` in integer sums: the portable kernel's bits.

use core::arch::x86_64::__m256i;
use core::mem::MaybeUninit;

use super::band::zeroed;
use super::requant::{elem, load, narrow16, Requant8};
use super::vector::{
    bytes, bytes_mut, load16, load_i16, madd, splat, store16, store_i16, transpose16, unpack16, widen, widen16,
};
use crate::arch::x86_64_facts::{
    INT8_DEPTHWISE_BYTES, INT8_DEPTHWISE_MAX_TAPS, INT8_DEPTHWISE_OUT_BYTES, INT8_DEPTHWISE_STAGED,
};
use crate::quant::{ChannelQuant, Conv2d, QuantElem};

/// Channels per group: sixteen `i16` lanes.
const LANES: usize = 16;

/// Most output positions of an NCHW layer whose planes are not contiguous (so staged and stored
/// element by element) that this kernel takes: on larger planes that costs what the channel
/// vectors save.
const MAX_STRIDED_POSITIONS: usize = 16;

/// Widest output rows of an NCHW layer with contiguous planes (staged and stored through 16x16
/// byte transposes) that this kernel takes: on wide rows the plane-order kernel, whose vectors
/// run along them, is faster. `quant_perf` (best of 4 alternating runs on AVX2, ms, this kernel
/// against the plane-order one): 3x3 planes of 336 channels 0.016 / 0.039, 6x6 of 144 0.009 /
/// 0.029, 12x12 of 96 0.017 / 0.040; in MobileNetV2-0.35's bands of 48-wide rows (`sramfit-bench
/// --layers`) it took 1.3-1.7 times as long.
const MAX_TRANSPOSED_WIDTH: usize = 12;

/// Tap pairs of the largest window.
const MAX_PAIRS: usize = INT8_DEPTHWISE_MAX_TAPS.div_ceil(2);

// The staged planes (`i16`), the band's outputs and the pairs' weights and offsets fit the stack
// the kernel facts give the int8 depthwise convolution.
const _: () = assert!(
    INT8_DEPTHWISE_STAGED * 2
        + INT8_DEPTHWISE_OUT_BYTES
        + MAX_PAIRS * (2 * size_of::<__m256i>() + 2 * size_of::<usize>())
        <= INT8_DEPTHWISE_BYTES
);

/// The staging geometry: output rows per band, and the padded input columns every output row
/// reads.
#[derive(Clone, Copy)]
struct Bands {
    rows: usize,
    columns: usize,
}

impl Bands {
    /// The most output rows of `p` whose padded input rows and outputs of 16 channels fit the
    /// staging and output buffers, if one does.
    fn of(p: &Conv2d) -> Option<Bands> {
        let columns = (p.out_w - 1) * p.stride_w + (p.kernel_w - 1) * p.dilation_w + 1;
        let fit = INT8_DEPTHWISE_STAGED / (columns * LANES);
        let extra = (p.kernel_h - 1) * p.dilation_h + 1;
        let outputs = INT8_DEPTHWISE_OUT_BYTES / (p.out_w * LANES);
        let rows = (fit.checked_sub(extra)? / p.stride_h + 1).min(p.out_h).min(outputs);
        if rows == 0 {
            return None;
        }
        Some(Bands { rows, columns })
    }

    /// The padded input rows that `rows` output rows read.
    fn padded_rows(&self, p: &Conv2d, rows: usize) -> usize {
        (rows - 1) * p.stride_h + (p.kernel_h - 1) * p.dilation_h + 1
    }
}

/// Whether the 16 channels of a position are one vector of the input and of the output.
fn channels_contiguous(p: &Conv2d) -> bool {
    p.x_strides.c == 1 && p.y_strides.c == 1 && p.out_channels == p.in_channels
}

/// Whether each channel's input and output plane is contiguous (NCHW without gaps).
fn planes_contiguous(p: &Conv2d) -> bool {
    let (xs, ys) = (p.x_strides, p.y_strides);
    xs.w == 1 && xs.h == p.in_w && ys.w == 1 && ys.h == p.out_w
}

/// Whether [`depthwise_conv2d`] takes `p`: an input zero point of the input's type, at most
/// [`INT8_DEPTHWISE_MAX_TAPS`] taps, one output row's padded input of 16 channels fitting the
/// staging buffer, and contiguous channels (NHWC), or contiguous planes, at least 16 channels and
/// output rows at most [`MAX_TRANSPOSED_WIDTH`] wide, or at most [`MAX_STRIDED_POSITIONS`] output
/// positions.
pub(super) fn takes<T: QuantElem>(p: &Conv2d) -> bool {
    let positions = p.out_h * p.out_w;
    let transposed = planes_contiguous(p) && p.out_channels >= LANES && p.out_w <= MAX_TRANSPOSED_WIDTH;
    (T::MIN..=T::MAX).contains(&p.x_zero_point)
        && p.kernel_h * p.kernel_w <= INT8_DEPTHWISE_MAX_TAPS
        && positions > 0
        && (channels_contiguous(p) || transposed || positions <= MAX_STRIDED_POSITIONS)
        && Bands::of(p).is_some()
}

/// [`crate::quant::depthwise_conv2d`] for a `p` that [`takes`] accepts.
#[inline(always)]
pub(super) fn depthwise_conv2d<T: QuantElem>(p: &Conv2d, x: &[T], w: &[i8], q: &ChannelQuant, y: &mut [T]) {
    let bands = Bands::of(p).expect("takes() checked that a row fits");
    let columns = bands.columns;
    let mut staged = [MaybeUninit::uninit(); INT8_DEPTHWISE_STAGED];
    let staged: &mut [i16] = zeroed(&mut staged, bands.padded_rows(p, bands.rows) * columns * LANES);
    // Each pair's two taps as staged offsets (the last of an odd window paired with itself, its
    // second weight zero).
    let taps = p.kernel_h * p.kernel_w;
    let pairs = taps.div_ceil(2);
    let tap_at = |t: usize| ((t / p.kernel_w) * p.dilation_h * columns + (t % p.kernel_w) * p.dilation_w) * LANES;
    let mut pair_at = [(0usize, 0usize); MAX_PAIRS];
    for (k, at) in pair_at[..pairs].iter_mut().enumerate() {
        *at = (tap_at(2 * k), tap_at((2 * k + 1).min(taps - 1)));
    }
    let pair_at = &pair_at[..pairs];
    let mut out = [MaybeUninit::uninit(); INT8_DEPTHWISE_OUT_BYTES];
    let out = zeroed(&mut out, bands.rows * p.out_w * LANES);
    let (ys, clamp) = (p.y_strides, (p.act_min, p.act_max));
    for o0 in (0..p.out_channels).step_by(LANES) {
        let n = LANES.min(p.out_channels - o0);
        // 16 output channels one vector store, else through `out`.
        let direct = ys.c == 1 && n == LANES;
        // Lane `i` of the two accumulators: channel `o0 + LO[i]` and `o0 + HI[i]` (the last
        // channel for lanes past `n`: computed, not stored).
        let channel = |j: usize| o0 + j.min(n - 1);
        let (lo, hi) = (LO.map(channel), HI.map(channel));
        let stage_lo = Requant8::channels::<T>(q, lo, p.y_zero_point, clamp);
        let stage_hi = Requant8::channels::<T>(q, hi, p.y_zero_point, clamp);
        let bias = |c: [usize; 8]| load(c.map(|o| q.bias[o]));
        let (bias_lo, bias_hi) = (bias(lo), bias(hi));
        let mut weights = [[splat(0); 2]; MAX_PAIRS];
        for (k, wk) in weights[..pairs].iter_mut().enumerate() {
            let second = (2 * k + 1 < taps).then_some(2 * k + 1);
            *wk = unpack16(tap_weights(p, w, Some(2 * k), (o0, n)), tap_weights(p, w, second, (o0, n)));
        }
        let weights = &weights[..pairs];
        for b in 0..p.batch {
            for oy0 in (0..p.out_h).step_by(bands.rows) {
                let rows = bands.rows.min(p.out_h - oy0);
                let padded_rows = bands.padded_rows(p, rows);
                stage(p, x, (b, o0, n), (oy0 * p.stride_h, padded_rows, columns), staged);
                for oy in oy0..oy0 + rows {
                    for ox in 0..p.out_w {
                        let at = ((oy - oy0) * p.stride_h * columns + ox * p.stride_w) * LANES;
                        let (mut acc_lo, mut acc_hi) = (bias_lo, bias_hi);
                        for (&(t, u), &[w_lo, w_hi]) in pair_at.iter().zip(weights) {
                            let [x_lo, x_hi] = unpack16(load_i16(&staged[at + t..]), load_i16(&staged[at + u..]));
                            acc_lo = madd(acc_lo, x_lo, w_lo);
                            acc_hi = madd(acc_hi, x_hi, w_hi);
                        }
                        let v = narrow16::<true>(stage_lo.apply(acc_lo), stage_hi.apply(acc_hi));
                        if direct {
                            store16(bytes_mut(&mut y[b * ys.n + oy * ys.h + ox * ys.w + o0..][..LANES]), v);
                        } else {
                            store16(&mut out[((oy - oy0) * p.out_w + ox) * LANES..], v);
                        }
                    }
                }
                if !direct {
                    let planes: [usize; LANES] = core::array::from_fn(|j| b * ys.n + (o0 + j.min(n - 1)) * ys.c);
                    unstage(p, out, (&planes[..n], oy0, rows), y);
                }
            }
        }
    }
}

/// The channels of the lanes of the low accumulator: `VPUNPCKLWD` takes words 0-3 of each
/// 128-bit half.
const LO: [usize; 8] = [0, 1, 2, 3, 8, 9, 10, 11];
/// The channels of the lanes of the high accumulator (words 4-7 of each half).
const HI: [usize; 8] = [4, 5, 6, 7, 12, 13, 14, 15];

/// Stages padded input rows `first..first + padded_rows` (`columns` each) of the `n` output
/// channels from `o0` of image `b` into `staged` (`[row][column][channel]`): the input zero
/// point, then the input's elements, 16 contiguous channels (an NHWC input, channel multiplier
/// 1) widened by one vector per position, otherwise element by element.
#[inline(always)]
fn stage<T: QuantElem>(
    p: &Conv2d,
    x: &[T],
    (b, o0, n): (usize, usize, usize),
    (first, padded_rows, columns): (usize, usize, usize),
    staged: &mut [i16],
) {
    let xs = p.x_strides;
    staged[..padded_rows * columns * LANES].fill(p.x_zero_point as i16);
    // The input rows and columns inside the window.
    let iy0 = first.saturating_sub(p.pad_top);
    let iy1 = p.in_h.min((first + padded_rows).saturating_sub(p.pad_top));
    let cols = p.in_w.min(columns.saturating_sub(p.pad_left));
    if cols == 0 {
        return;
    }
    let at = |iy: usize, ix: usize| ((iy + p.pad_top - first) * columns + ix + p.pad_left) * LANES;
    if xs.c == 1 && p.out_channels == p.in_channels && n == LANES {
        for iy in iy0..iy1 {
            for ix in 0..cols {
                let v = widen16(bytes(&x[b * xs.n + iy * xs.h + ix * xs.w + o0..][..LANES]), T::MIN < 0);
                store_i16(&mut staged[at(iy, ix)..], v);
            }
        }
        return;
    }
    let multiplier = p.out_channels / p.in_channels;
    let plane = |j: usize| b * xs.n + (o0 + j) / multiplier * xs.c;
    let (first_element, end) = (iy0 * p.in_w, iy1 * p.in_w);
    if n == LANES && xs.w == 1 && xs.h == p.in_w && end >= first_element + LANES {
        // Contiguous planes: 16 elements of 16 channels at a time, transposed (the last block
        // overlapping the one before).
        let planes: [usize; LANES] = core::array::from_fn(plane);
        for e0 in (first_element..end).step_by(LANES) {
            let e = e0.min(end - LANES);
            let elements = transpose16(planes.map(|at| load16(bytes(&x[at + e..][..LANES]))));
            let (mut iy, mut ix) = (e / p.in_w, e % p.in_w);
            for v in elements {
                if ix < cols {
                    store_i16(&mut staged[at(iy, ix)..], widen(v, T::MIN < 0));
                }
                ix += 1;
                if ix == p.in_w {
                    (iy, ix) = (iy + 1, 0);
                }
            }
        }
        return;
    }
    for j in 0..n {
        let plane = plane(j);
        for iy in iy0..iy1 {
            let (row, dst) = (&x[plane + iy * xs.h..], staged[at(iy, 0)..][..cols * LANES].chunks_exact_mut(LANES));
            if xs.w == 1 {
                dst.zip(&row[..cols]).for_each(|(d, v)| d[j] = v.to_i32() as i16);
            } else {
                dst.zip(row.iter().step_by(xs.w)).for_each(|(d, v)| d[j] = v.to_i32() as i16);
            }
        }
    }
}

/// Stores the band's outputs `out` (`[position][channel]` bytes, `rows` output rows from `oy0`)
/// of the channels whose planes in `y` start at `planes`: for 16 channels of contiguous planes
/// 16 positions at a time (a byte transpose, the last block overlapping the one before), else
/// element by element.
#[inline(always)]
fn unstage<T: QuantElem>(p: &Conv2d, out: &[u8], (planes, oy0, rows): (&[usize], usize, usize), y: &mut [T]) {
    let ys = p.y_strides;
    let len = rows * p.out_w;
    if planes.len() == LANES && ys.w == 1 && ys.h == p.out_w && len >= LANES {
        let y = bytes_mut(y);
        for e0 in (0..len).step_by(LANES) {
            let e = e0.min(len - LANES);
            let channels = transpose16(core::array::from_fn(|k| load16(&out[(e + k) * LANES..])));
            for (&plane, v) in planes.iter().zip(channels) {
                store16(&mut y[plane + oy0 * p.out_w + e..], v);
            }
        }
        return;
    }
    for (j, &plane) in planes.iter().enumerate() {
        for (r, src) in out.chunks_exact(p.out_w * LANES).take(rows).enumerate() {
            let (row, src) = (&mut y[plane + (oy0 + r) * ys.h..], src.chunks_exact(LANES));
            if ys.w == 1 {
                row[..p.out_w].iter_mut().zip(src).for_each(|(d, s)| *d = elem(s[j]));
            } else {
                row.iter_mut().step_by(ys.w).zip(src).for_each(|(d, s)| *d = elem(s[j]));
            }
        }
    }
}

/// The weights `w[t][o] - w_zero_point` of tap `t` (none: zeros) for output channels `o0..o0 +
/// n`, as 16 `i16` lanes (zero past `n`).
#[inline(always)]
fn tap_weights(p: &Conv2d, w: &[i8], t: Option<usize>, (o0, n): (usize, usize)) -> __m256i {
    let mut lanes = [0i16; LANES];
    if let Some(t) = t {
        for (l, &v) in lanes.iter_mut().zip(&w[t * p.out_channels + o0..][..n]) {
            *l = (v as i32 - p.w_zero_point) as i16;
        }
    }
    load_i16(&lanes)
}
