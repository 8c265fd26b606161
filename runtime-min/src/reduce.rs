//! Rank-generic reductions (ONNX Reduce*).

use crate::util::{contiguous_strides, fold_contig, fold_contig_group, Layout, LANES};

/// Description of a reduction.
///
/// `y` is contiguous with shape `out_shape`; output element `o = (o_0, ..)`
/// reduces the input elements `x[sum(o_d * out_in_strides[d]) +
/// sum(r_e * red_strides[e])]` over all `r` in `red_shape`. (`keepdims` only
/// changes the output shape, which the caller expresses by including or
/// omitting size-1 axes.) Ranks are at most `MAX_RANK`; an empty `red_shape`
/// reduces a single element. Global average / max pooling is
/// `reduce_mean` / `reduce_max` over the H and W axes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reduce<'a> {
    /// Shape of the output.
    pub out_shape: &'a [usize],
    /// Input stride (in elements) of each output axis.
    pub out_in_strides: &'a [usize],
    /// Lengths of the reduced axes.
    pub red_shape: &'a [usize],
    /// Input strides (in elements) of the reduced axes.
    pub red_strides: &'a [usize],
}

/// Shared driver. Each output is `fin(acc, count)` where `acc` folds
/// `comb(acc, map(v))` from `init` over its reduced elements (`comb`
/// associative and commutative, `init` its identity).
#[inline(always)]
fn reduce_impl(
    p: &Reduce,
    x: &[f32],
    y: &mut [f32],
    init: f32,
    map: impl Fn(f32) -> f32 + Copy,
    comb: impl Fn(f32, f32) -> f32 + Copy,
    fin: impl Fn(f32, f32) -> f32 + Copy,
) {
    let ys = contiguous_strides(p.out_shape);
    let Some(ol) = Layout::<2>::new(p.out_shape, |s, d| match s {
        0 => ys[d],
        _ => p.out_in_strides[d] as isize,
    }) else {
        return;
    };
    let count = p.red_shape.iter().product::<usize>() as f32;
    let Some(rl) = Layout::<1>::new(p.red_shape, |_, d| p.red_strides[d] as isize) else {
        let n = p.out_shape.iter().product::<usize>();
        y[..n].fill(fin(init, 0.0));
        return;
    };
    let (on, [_, os]) = ol.inner();
    let (rn, [rs]) = rl.inner();
    if rs != 1 && os == 1 && on > 1 {
        // Vectorise across a contiguous run of outputs.
        ol.for_each_outer([0; 2], |[yo, xo]| {
            let yr = &mut y[yo as usize..][..on];
            yr.fill(init);
            rl.for_each_outer([xo], |[ro]| {
                for t in 0..rn {
                    let xr = &x[(ro + t as isize * rs) as usize..][..on];
                    for (a, &v) in yr.iter_mut().zip(xr) {
                        *a = comb(*a, map(v));
                    }
                }
            });
            for a in yr.iter_mut() {
                *a = fin(*a, count);
            }
        });
    } else {
        // Each output one contiguous run of a few values: outputs folded `FEW_GROUP` at a time.
        let grouped = rl.rank == 1 && rs == 1 && rn < FEW_VALUES;
        ol.for_each_outer([0; 2], |[yo, xo]| {
            let yr = &mut y[yo as usize..][..on];
            let done = if grouped {
                let mut groups = yr.chunks_exact_mut(FEW_GROUP);
                for (g, yg) in (&mut groups).enumerate() {
                    let run = |m: usize| &x[(xo + (g * FEW_GROUP + m) as isize * os) as usize..][..rn];
                    let acc = fold_contig_group([init; FEW_GROUP], core::array::from_fn(run), init, map, comb);
                    for (yv, a) in yg.iter_mut().zip(acc) {
                        *yv = fin(a, count);
                    }
                }
                on - groups.into_remainder().len()
            } else {
                0
            };
            for (t, yv) in yr.iter_mut().enumerate().skip(done) {
                let mut acc = init;
                rl.for_each_outer([xo + t as isize * os], |[ro]| {
                    acc = fold_run(acc, x, ro as usize, rn, rs as usize, init, map, comb);
                });
                *yv = fin(acc, count);
            }
        });
    }
}

/// Reductions of fewer values than this per output, each one contiguous run, fold
/// [`FEW_GROUP`] outputs at a time (a global pooling's few positions left by the layers before).
const FEW_VALUES: usize = 2 * LANES;

/// Whether [`reduce_sum`] and [`reduce_mean`] add the `values` values of an output that are one
/// contiguous run one after another in order, from `0.0` (as [`crate::global_pool_blocked`]
/// does): runs of fewer than [`FEW_VALUES`], whose one chunk of [`LANES`], if any, goes into
/// [`fold_contig_group`]'s lanes from `0.0` and from them in order into the sum, then the rest.
/// Longer runs are summed in [`LANES`] interleaved chains.
pub(crate) fn reduce_sums_in_order(values: usize) -> bool {
    values < FEW_VALUES
}

/// Outputs folded together when each reduces fewer than [`FEW_VALUES`] values.
const FEW_GROUP: usize = 8;

/// Folds `n` elements of `x` starting at `start` with stride `step`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn fold_run(
    acc: f32,
    x: &[f32],
    start: usize,
    n: usize,
    step: usize,
    init: f32,
    map: impl Fn(f32) -> f32,
    comb: impl Fn(f32, f32) -> f32,
) -> f32 {
    if step == 1 {
        fold_contig(acc, &x[start..][..n], init, map, comb)
    } else {
        let mut acc = acc;
        for t in 0..n {
            acc = comb(acc, map(x[start + t * step]));
        }
        acc
    }
}

#[inline(always)]
fn fmax(a: f32, b: f32) -> f32 {
    if b > a || b.is_nan() {
        b
    } else {
        a
    }
}

#[inline(always)]
fn fmin(a: f32, b: f32) -> f32 {
    if b < a || b.is_nan() {
        b
    } else {
        a
    }
}

/// ONNX ReduceSum: sum of the reduced elements (0 for an empty reduction).
pub fn reduce_sum(p: &Reduce, x: &[f32], y: &mut [f32]) {
    reduce_impl(p, x, y, 0.0, |v| v, |a, b| a + b, |a, _| a);
}

/// ONNX ReduceMean: sum divided by the number of reduced elements (NaN for
/// an empty reduction).
pub fn reduce_mean(p: &Reduce, x: &[f32], y: &mut [f32]) {
    reduce_impl(p, x, y, 0.0, |v| v, |a, b| a + b, |a, n| a / n);
}

/// ONNX ReduceMax: maximum (NaN propagates; `-inf` for an empty reduction).
pub fn reduce_max(p: &Reduce, x: &[f32], y: &mut [f32]) {
    reduce_impl(p, x, y, f32::NEG_INFINITY, |v| v, fmax, |a, _| a);
}

/// ONNX ReduceMin: minimum (NaN propagates; `+inf` for an empty reduction).
pub fn reduce_min(p: &Reduce, x: &[f32], y: &mut [f32]) {
    reduce_impl(p, x, y, f32::INFINITY, |v| v, fmin, |a, _| a);
}

/// ONNX ReduceProd: product (1 for an empty reduction).
pub fn reduce_prod(p: &Reduce, x: &[f32], y: &mut [f32]) {
    reduce_impl(p, x, y, 1.0, |v| v, |a, b| a * b, |a, _| a);
}

/// ONNX ReduceSumSquare: sum of squares.
pub fn reduce_sum_square(p: &Reduce, x: &[f32], y: &mut [f32]) {
    reduce_impl(p, x, y, 0.0, |v| v * v, |a, b| a + b, |a, _| a);
}

/// Mean of the squares (tract's `MeanOfSquares`, the variance step of
/// LayerNormalization and InstanceNormalization): sum of squares divided by
/// the number of reduced elements (NaN for an empty reduction).
pub fn reduce_mean_square(p: &Reduce, x: &[f32], y: &mut [f32]) {
    reduce_impl(p, x, y, 0.0, |v| v * v, |a, b| a + b, |a, n| a / n);
}

/// ONNX ReduceL1: sum of absolute values.
pub fn reduce_l1(p: &Reduce, x: &[f32], y: &mut [f32]) {
    reduce_impl(p, x, y, 0.0, libm::fabsf, |a, b| a + b, |a, _| a);
}

/// ONNX ReduceL2: square root of the sum of squares.
pub fn reduce_l2(p: &Reduce, x: &[f32], y: &mut [f32]) {
    reduce_impl(p, x, y, 0.0, |v| v * v, |a, b| a + b, |a, _| libm::sqrtf(a));
}

/// ONNX ReduceLogSumExp: `ln(sum(exp(v)))`, evaluated stably as
/// `m + ln(sum(exp(v - m)))` with `m` the maximum (`-inf` for an empty
/// reduction or when every element is `-inf`; `+inf` if any is `+inf`).
pub fn reduce_log_sum_exp(p: &Reduce, x: &[f32], y: &mut [f32]) {
    let ys = contiguous_strides(p.out_shape);
    let Some(ol) = Layout::<2>::new(p.out_shape, |s, d| match s {
        0 => ys[d],
        _ => p.out_in_strides[d] as isize,
    }) else {
        return;
    };
    let Some(rl) = Layout::<1>::new(p.red_shape, |_, d| p.red_strides[d] as isize) else {
        let n = p.out_shape.iter().product::<usize>();
        y[..n].fill(f32::NEG_INFINITY);
        return;
    };
    let (on, [_, os]) = ol.inner();
    let (rn, [rs]) = rl.inner();
    let (rn, rs) = (rn, rs as usize);
    ol.for_each_outer([0; 2], |[yo, xo]| {
        let yr = &mut y[yo as usize..][..on];
        for (t, yv) in yr.iter_mut().enumerate() {
            let base = xo + t as isize * os;
            let mut m = f32::NEG_INFINITY;
            rl.for_each_outer([base], |[ro]| {
                m = fold_run(m, x, ro as usize, rn, rs, f32::NEG_INFINITY, |v| v, fmax);
            });
            *yv = if m.is_infinite() {
                m
            } else {
                let mut s = 0.0;
                rl.for_each_outer([base], |[ro]| {
                    let e = |v: f32| libm::expf(v - m);
                    s = fold_run(s, x, ro as usize, rn, rs, 0.0, e, |a, b| a + b);
                });
                m + libm::logf(s)
            };
        }
    });
}
