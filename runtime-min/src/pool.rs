//! 3-D, 2-D and 1-D max and average pooling, NC(D)HW.

use crate::arch::{self, KernelCall, Kernels};
use crate::util::{gather_strided, valid_range};

/// Parameters of [`max_pool2d`] / [`avg_pool2d`] (ONNX MaxPool /
/// AveragePool on `[batch, channels, in_d, in_h, in_w]` data).
///
/// Output `(od, oh, ow)` covers input rows `oh * stride_h - pad_top + kh *
/// dilation_h` for `kh < kernel_h` (depth and columns likewise). Windows may
/// extend past `in_h + pad_bottom` (ONNX `ceil_mode`). 2-D pooling: `in_d =
/// out_d = kernel_d = stride_d = dilation_d = 1` with zero depth pads; 1-D
/// pooling: additionally `in_h = out_h = kernel_h = 1` with zero vertical
/// pads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pool2d {
    /// N.
    pub batch: usize,
    /// C.
    pub channels: usize,
    /// Input depth (1 for 2-D and 1-D pooling).
    pub in_d: usize,
    /// Output depth.
    pub out_d: usize,
    /// Window depth.
    pub kernel_d: usize,
    /// Depth stride (>= 1).
    pub stride_d: usize,
    /// Depth dilation (>= 1).
    pub dilation_d: usize,
    /// Padding planes in front of the input.
    pub pad_front: usize,
    /// Padding planes behind the input (only used by `count_include_pad`).
    pub pad_back: usize,
    /// Input height.
    pub in_h: usize,
    /// Input width.
    pub in_w: usize,
    /// Output height.
    pub out_h: usize,
    /// Output width.
    pub out_w: usize,
    /// Window height.
    pub kernel_h: usize,
    /// Window width.
    pub kernel_w: usize,
    /// Vertical stride (>= 1).
    pub stride_h: usize,
    /// Horizontal stride (>= 1).
    pub stride_w: usize,
    /// Vertical dilation (>= 1).
    pub dilation_h: usize,
    /// Horizontal dilation (>= 1).
    pub dilation_w: usize,
    /// Padding rows above the input.
    pub pad_top: usize,
    /// Padding columns left of the input.
    pub pad_left: usize,
    /// Padding rows below the input (only used by `count_include_pad`).
    pub pad_bottom: usize,
    /// Padding columns right of the input (only used by `count_include_pad`).
    pub pad_right: usize,
    /// Average pooling only: divide by the number of window positions inside
    /// the padded extent instead of inside the input.
    pub count_include_pad: bool,
}

/// The fast paths for windows that tile the input without padding, dilation or overlap, in 2-D
/// (or 3-D with a depth window of 1): each output combines its window's values in the generic
/// driver's order (row-major from `init`), so results are bit-identical to [`pool_rows`].
/// Returns `false` (and leaves `y` alone) for any other pooling.
///
/// - **Global** (one output per plane, window = plane): [`global_fold`], several planes at a time;
///   an average's sums first on the kernel path's vectors where it has them (`sums`:
///   [`Kernels::plane_sums`], the same additions in the same order).
/// - **Non-overlapping k x k, stride k** (k = 2 or 3, e.g. a 2x2 stride-2 max pool): whole output
///   rows at a time with the window columns as fixed-size chunks ([`tile_rows`]).
#[inline(always)]
fn pool_tiles(
    p: &Pool2d,
    x: &[f32],
    y: &mut [f32],
    init: f32,
    comb: impl Fn(&mut f32, f32) + Copy,
    sums: Option<Kernels>,
) -> bool {
    let flat_depth = p.kernel_d == 1 && p.stride_d == 1 && p.pad_front == 0 && p.in_d == p.out_d;
    let plain = flat_depth
        && p.pad_top == 0
        && p.pad_left == 0
        && p.dilation_h == 1
        && p.dilation_w == 1
        && p.kernel_h > 0
        && p.in_h * p.in_w > 0;
    if !plain {
        return false;
    }
    let planes = p.batch * p.channels * p.in_d;
    let (x, y) = (&x[..planes * p.in_h * p.in_w], &mut y[..planes * p.out_h * p.out_w]);
    let global = p.out_h == 1 && p.out_w == 1 && p.kernel_h == p.in_h && p.kernel_w == p.in_w;
    let tiled = p.stride_h == p.kernel_h
        && p.stride_w == p.kernel_w
        && p.out_h * p.kernel_h <= p.in_h
        && p.out_w * p.kernel_w <= p.in_w
        && !y.is_empty();
    match p.kernel_w {
        _ if global => {
            let done = sums.map_or(0, |k| k.plane_sums(x, y));
            global_fold(&x[done * p.in_h * p.in_w..], &mut y[done..], init, comb)
        }
        2 if tiled => tile_rows::<2>(p, x, y, init, comb),
        3 if tiled => tile_rows::<3>(p, x, y, init, comb),
        _ => return false,
    }
    true
}

/// `y[c] = fold(init, comb, x[c, ..])` for every plane `c` of `x` (`y.len()` equal planes), each
/// folded in order; [`GLOBAL_PLANES`] planes at a time as independent chains.
#[inline(always)]
fn global_fold(x: &[f32], y: &mut [f32], init: f32, comb: impl Fn(&mut f32, f32) + Copy) {
    if y.is_empty() {
        return;
    }
    let plane = x.len() / y.len();
    let mut ys = y.chunks_exact_mut(GLOBAL_PLANES);
    let mut xs = x.chunks_exact(GLOBAL_PLANES * plane);
    for (yc, xc) in (&mut ys).zip(&mut xs) {
        let rows: [&[f32]; GLOBAL_PLANES] = core::array::from_fn(|c| &xc[c * plane..][..plane]);
        let mut acc = [init; GLOBAL_PLANES];
        for i in 0..plane {
            for (a, row) in acc.iter_mut().zip(&rows) {
                comb(a, row[i]);
            }
        }
        yc.copy_from_slice(&acc);
    }
    for (v, xc) in ys.into_remainder().iter_mut().zip(xs.remainder().chunks_exact(plane)) {
        *v = init;
        for &xv in xc {
            comb(v, xv);
        }
    }
}

/// Planes folded together by [`global_fold`].
pub(crate) const GLOBAL_PLANES: usize = 8;

/// The non-overlapping `kernel_h x K`, stride `(kernel_h, K)` pooling of every plane: each output
/// row is initialised to `init`, then combined with its `kernel_h` input rows, `K` columns per
/// output (row-major window order). Square 2 x 2 windows instead fold each output's window in
/// one pass, in the same order ([`square2_row`]).
#[inline(always)]
fn tile_rows<const K: usize>(p: &Pool2d, x: &[f32], y: &mut [f32], init: f32, comb: impl Fn(&mut f32, f32) + Copy) {
    let (in_plane, out_plane) = (p.in_h * p.in_w, p.out_h * p.out_w);
    for (xplane, yplane) in x.chunks_exact(in_plane).zip(y.chunks_exact_mut(out_plane)) {
        for (yrow, xrows) in yplane.chunks_exact_mut(p.out_w).zip(xplane.chunks_exact(p.kernel_h * p.in_w)) {
            if K == 2 && p.kernel_h == 2 {
                let (top, bottom) = xrows.split_at(p.in_w);
                square2_row(yrow, top, bottom, init, comb);
                continue;
            }
            yrow.fill(init);
            for xrow in xrows.chunks_exact(p.in_w) {
                let (windows, _) = xrow[..p.out_w * K].as_chunks::<K>();
                for (v, window) in yrow.iter_mut().zip(windows) {
                    for &xv in window {
                        comb(v, xv);
                    }
                }
            }
        }
    }
}

/// One output row of a 2 x 2, stride-2 pooling from its input rows `top` and `bottom`: each
/// output `init` combined with its window in row-major order, in one pass over the outputs (which
/// vectorises; a pass per window row stored and reloaded the outputs, and on MNIST's 12-wide rows
/// cost 3x).
#[inline(always)]
fn square2_row(y: &mut [f32], top: &[f32], bottom: &[f32], init: f32, comb: impl Fn(&mut f32, f32) + Copy) {
    let n = y.len();
    let (top, _) = top[..2 * n].as_chunks::<2>();
    let (bottom, _) = bottom[..2 * n].as_chunks::<2>();
    for ((v, t), b) in y.iter_mut().zip(top).zip(bottom) {
        let mut acc = init;
        comb(&mut acc, t[0]);
        comb(&mut acc, t[1]);
        comb(&mut acc, b[0]);
        comb(&mut acc, b[1]);
        *v = acc;
    }
}

/// Shared row-wise driver: every output row is initialised to `init`, then
/// combined (`comb(&mut y, x)`) with the strided input row segment of every
/// window tap that lands inside the input; `fin(row, od, oh)` post-processes it. On x86-64, rows
/// of windows three columns wide are folded in one pass instead ([`RowFold`], same order);
/// elsewhere the same instructions as before run on a microcontroller.
#[inline(always)]
fn pool_rows(
    p: &Pool2d,
    x: &[f32],
    y: &mut [f32],
    init: f32,
    comb: impl Fn(&mut f32, f32) + Copy,
    fin: impl Fn(&mut [f32], usize, usize),
) {
    let in_plane = p.in_h * p.in_w;
    let in_vol = p.in_d * in_plane;
    let out_plane = p.out_h * p.out_w;
    let out_vol = p.out_d * out_plane;
    if out_vol == 0 {
        return;
    }
    let planes = p.batch * p.channels;
    // Column tap `kw`: the output columns `lo..hi` it lands inside the input for, and the input
    // column of output `lo`.
    let column = |kw: usize| {
        let w_off = (kw * p.dilation_w) as isize - p.pad_left as isize;
        let (lo, hi) = valid_range(p.out_w, p.stride_w, w_off, p.in_w);
        (lo, hi, if lo < hi { ((lo * p.stride_w) as isize + w_off) as usize } else { 0 })
    };
    let x86 = cfg!(target_arch = "x86_64");
    let cached: [(usize, usize, usize); CACHED_COLUMN_TAPS] =
        core::array::from_fn(|kw| if x86 && kw < p.kernel_w { column(kw) } else { (0, 0, 0) });
    let one_pass = if x86 { RowFold::of(p, &cached) } else { None };
    for (pi, yvol) in y[..planes * out_vol].chunks_exact_mut(out_vol).enumerate() {
        let xvol = &x[pi * in_vol..][..in_vol];
        for (od, yplane) in yvol.chunks_exact_mut(out_plane).enumerate() {
            let d_off = (od * p.stride_d) as isize - p.pad_front as isize;
            let (kd_lo, kd_hi) = valid_range(p.kernel_d, p.dilation_d, d_off, p.in_d);
            for (oh, yrow) in yplane.chunks_exact_mut(p.out_w).enumerate() {
                let h_off = (oh * p.stride_h) as isize - p.pad_top as isize;
                let (kh_lo, kh_hi) = valid_range(p.kernel_h, p.dilation_h, h_off, p.in_h);
                if let Some(fold) =
                    one_pass.as_ref().filter(|_| kd_hi - kd_lo == 1 && (1..=3).contains(&(kh_hi - kh_lo)))
                {
                    let xplane = &xvol[(d_off + (kd_lo * p.dilation_d) as isize) as usize * in_plane..][..in_plane];
                    let rows = (kh_lo..kh_hi).map(|kh| (h_off + (kh * p.dilation_h) as isize) as usize * p.in_w);
                    fold.row(p, yrow, xplane, rows, init, comb);
                    fin(yrow, od, oh);
                    continue;
                }
                yrow.fill(init);
                for kd in kd_lo..kd_hi {
                    let id = (d_off + (kd * p.dilation_d) as isize) as usize;
                    let xplane = &xvol[id * in_plane..][..in_plane];
                    for kh in kh_lo..kh_hi {
                        let ih = (h_off + (kh * p.dilation_h) as isize) as usize;
                        let xrow = &xplane[ih * p.in_w..][..p.in_w];
                        for kw in 0..p.kernel_w {
                            let (lo, hi, s) = match cached.get(kw) {
                                Some(&taps) if x86 => taps,
                                _ => column(kw),
                            };
                            if lo < hi {
                                gather_strided(&mut yrow[lo..hi], &xrow[s..], p.stride_w, comb);
                            }
                        }
                    }
                }
                fin(yrow, od, oh);
            }
        }
    }
}

/// One-pass rows of a 2-D pooling with a 3-wide window at column stride 1 or 2 (ResNet's padded
/// 3x3 stride-2 max pool), for [`pool_rows`] on x86-64: each output `init` combined with the
/// window taps inside the input in the driver's order (rows, then columns), the columns whose
/// three taps are all inside without a range check (which vectorises), the others tap by tap.
/// (A pass over the output row per tap, as the driver makes, stored and reloaded the outputs
/// nine times: the pool ran at 130 us on ResNet-18's 64x32x32.)
struct RowFold {
    /// The driver's column taps: the outputs each lands inside the input for, and its input
    /// column at the first of them.
    taps: [(usize, usize, usize); 3],
    /// Outputs `lo..hi` have all three taps inside.
    lo: usize,
    hi: usize,
}

impl RowFold {
    /// The one-pass rows of `p` with the driver's column taps, or `None` for other windows.
    #[inline(always)]
    fn of(p: &Pool2d, taps: &[(usize, usize, usize); CACHED_COLUMN_TAPS]) -> Option<Self> {
        if p.kernel_w != 3 || p.dilation_w != 1 || !(1..=2).contains(&p.stride_w) {
            return None;
        }
        let taps = [taps[0], taps[1], taps[2]];
        let lo = taps.iter().map(|t| t.0).max().unwrap_or(0).min(p.out_w);
        let hi = taps.iter().map(|t| t.1).min().unwrap_or(0).max(lo).min(p.out_w);
        Some(RowFold { taps, lo, hi })
    }

    /// One output row from the input rows at offsets `rows` of `xplane` (one to three).
    #[inline(always)]
    fn row(
        &self,
        p: &Pool2d,
        yrow: &mut [f32],
        xplane: &[f32],
        rows: impl ExactSizeIterator<Item = usize>,
        init: f32,
        comb: impl Fn(&mut f32, f32) + Copy,
    ) {
        let (lo, hi) = (self.lo, self.hi);
        let mut offsets = [0; 3];
        let n_rows = rows.len();
        for (o, r) in offsets.iter_mut().zip(rows) {
            *o = r;
        }
        // Tap `kw`'s input column at output `ow`.
        let at = |kw: usize, ow: usize| self.taps[kw].2 + (ow - self.taps[kw].0) * p.stride_w;
        // The border outputs, tap by tap.
        for ow in (0..lo).chain(hi..yrow.len()) {
            let mut acc = init;
            for &row in &offsets[..n_rows] {
                for (kw, tap) in self.taps.iter().enumerate() {
                    if (tap.0..tap.1).contains(&ow) {
                        comb(&mut acc, xplane[row + at(kw, ow)]);
                    }
                }
            }
            yrow[ow] = acc;
        }
        if lo < hi {
            let first = at(0, lo);
            let span = (hi - lo - 1) * p.stride_w + 3;
            let rows: [&[f32]; 3] = core::array::from_fn(|r| &xplane[offsets[r.min(n_rows - 1)] + first..][..span]);
            let y = &mut yrow[lo..hi];
            match (n_rows, p.stride_w) {
                (3, 1) => fold_interior::<3, 1>(y, rows, init, comb),
                (3, _) => fold_interior::<3, 2>(y, rows, init, comb),
                (2, 1) => fold_interior::<2, 1>(y, rows, init, comb),
                (2, _) => fold_interior::<2, 2>(y, rows, init, comb),
                (_, 1) => fold_interior::<1, 1>(y, rows, init, comb),
                _ => fold_interior::<1, 2>(y, rows, init, comb),
            }
        }
    }
}

/// `y[i]`: `init` combined with `rows[r][i * S + kw]` for `r < R`, `kw < 3`, in that order;
/// [`FOLD_BLOCK`] outputs at a time (fewer outputs one at a time), each block's values read with
/// one bounds check.
#[inline(always)]
fn fold_interior<const R: usize, const S: usize>(
    y: &mut [f32],
    rows: [&[f32]; 3],
    init: f32,
    comb: impl Fn(&mut f32, f32) + Copy,
) {
    let n = y.len();
    let rows: [&[f32]; R] = core::array::from_fn(|r| &rows[r][..(n - 1) * S + 3]);
    let block = |i0: usize| {
        let mut acc = [init; FOLD_BLOCK];
        for row in &rows {
            let window = &row[i0 * S..][..(FOLD_BLOCK - 1) * S + 3];
            for kw in 0..3 {
                for (j, a) in acc.iter_mut().enumerate() {
                    comb(a, window[j * S + kw]);
                }
            }
        }
        acc
    };
    if n < FOLD_BLOCK {
        for (i, v) in y.iter_mut().enumerate() {
            let mut acc = init;
            for row in &rows {
                for kw in 0..3 {
                    comb(&mut acc, row[i * S + kw]);
                }
            }
            *v = acc;
        }
        return;
    }
    // Whole blocks, the last one ending at `n` (recomputing outputs the one before wrote: the
    // same values).
    let starts = (0..n - FOLD_BLOCK).step_by(FOLD_BLOCK).chain(core::iter::once(n - FOLD_BLOCK));
    for i0 in starts {
        y[i0..][..FOLD_BLOCK].copy_from_slice(&block(i0));
    }
}

/// Outputs [`fold_interior`] folds side by side.
const FOLD_BLOCK: usize = 8;

/// Column taps whose ranges [`pool_rows`] computes once per call on x86-64 instead of once per
/// output row and input row (their divisions took a third of a 3x3 stride-2 max pool's time).
/// Elsewhere every row computes them, as before: no stack array, the same instructions on a
/// microcontroller.
pub(crate) const CACHED_COLUMN_TAPS: usize = 8;

/// ONNX MaxPool (see [`Pool2d`]): the maximum over the window positions
/// that lie inside the input (padding never wins). An output whose window
/// contains no input position is `-inf`.
pub fn max_pool2d(p: &Pool2d, x: &[f32], y: &mut [f32]) {
    arch::run(PoolCall::<true> { p, x, y });
}

/// The arguments of one [`max_pool2d`] (`MAX`) or [`avg_pool2d`], whose body [`arch::run`]
/// compiles per kernel path (its comparisons and divisions vectorise on the wider vectors).
struct PoolCall<'a, const MAX: bool> {
    p: &'a Pool2d,
    x: &'a [f32],
    y: &'a mut [f32],
}

impl<const MAX: bool> KernelCall for PoolCall<'_, MAX> {
    #[inline(always)]
    fn run(self, kernels: Kernels) {
        match MAX {
            true => {
                if !kernels.max_pool_square2(self.p, self.x, self.y) {
                    max_pool2d_on(self.p, self.x, self.y)
                }
            }
            false => avg_pool2d_on(self.p, self.x, self.y, kernels),
        }
    }
}

/// [`max_pool2d`]'s body.
#[cfg_attr(target_arch = "x86_64", inline(always))]
fn max_pool2d_on(p: &Pool2d, x: &[f32], y: &mut [f32]) {
    if !pool_tiles(p, x, y, f32::NEG_INFINITY, max_fold, None) {
        pool_rows(p, x, y, f32::NEG_INFINITY, max_fold, |_, _, _| {});
    }
}

/// One step of max pooling's fold: `v` replaces the running `d` when larger or NaN (from
/// `-inf`: the last NaN, else the first largest value). A select, not a conditional store: it
/// vectorises.
#[inline(always)]
pub(crate) fn max_fold(d: &mut f32, v: f32) {
    *d = if v > *d || v.is_nan() { v } else { *d };
}

/// ONNX AveragePool (see [`Pool2d`]): the sum over the window positions
/// inside the input divided by their number, or with `count_include_pad` by
/// the number of window positions inside the padded extent
/// `[-pad_front, in_d + pad_back) x [-pad_top, in_h + pad_bottom) x
/// [-pad_left, in_w + pad_right)` (window
/// positions beyond that extent, from `ceil_mode`, never count). An output
/// with a zero divisor is 0.
pub fn avg_pool2d(p: &Pool2d, x: &[f32], y: &mut [f32]) {
    arch::run(PoolCall::<false> { p, x, y });
}

/// [`avg_pool2d`]'s body.
#[cfg_attr(target_arch = "x86_64", inline(always))]
fn avg_pool2d_on(p: &Pool2d, x: &[f32], y: &mut [f32], kernels: Kernels) {
    let add = |d: &mut f32, v: f32| *d += v;
    if pool_tiles(p, x, y, 0.0, add, Some(kernels)) {
        // Every window lies inside the input: the same count everywhere.
        let cnt = (p.kernel_h * p.kernel_w) as f32;
        for v in &mut y[..p.batch * p.channels * p.out_d * p.out_h * p.out_w] {
            *v /= cnt;
        }
        return;
    }
    let (lim_d, lim_h, lim_w, base_d, base_h, base_w) = if p.count_include_pad {
        (
            p.in_d + p.pad_front + p.pad_back,
            p.in_h + p.pad_top + p.pad_bottom,
            p.in_w + p.pad_left + p.pad_right,
            0,
            0,
            0,
        )
    } else {
        (p.in_d, p.in_h, p.in_w, p.pad_front, p.pad_top, p.pad_left)
    };
    pool_rows(p, x, y, 0.0, add, |row, od, oh| {
        let d_off = (od * p.stride_d) as isize - base_d as isize;
        let (a, b) = valid_range(p.kernel_d, p.dilation_d, d_off, lim_d);
        let cd = b - a;
        let h_off = (oh * p.stride_h) as isize - base_h as isize;
        let (a, b) = valid_range(p.kernel_h, p.dilation_h, h_off, lim_h);
        let ch = cd * (b - a);
        for (ow, v) in row.iter_mut().enumerate() {
            let w_off = (ow * p.stride_w) as isize - base_w as isize;
            let (a, b) = valid_range(p.kernel_w, p.dilation_w, w_off, lim_w);
            let cnt = ch * (b - a);
            *v = if cnt == 0 { 0.0 } else { *v / cnt as f32 };
        }
    });
}
