//! Normalisation kernels.

use crate::util::fold_contig;

/// Per-channel affine map on `[outer, channels, inner]` data:
/// `y[o, c, i] = x[o, c, i] * scale[c] + shift[c]` (inference
/// BatchNormalization with mean, variance and epsilon folded into
/// `scale = gamma / sqrt(var + eps)` and `shift = beta - mean * scale`).
pub fn channel_affine(
    x: &[f32],
    y: &mut [f32],
    scale: &[f32],
    shift: &[f32],
    outer: usize,
    channels: usize,
    inner: usize,
) {
    let block = channels * inner;
    if block == 0 {
        return;
    }
    for (xb, yb) in x[..outer * block].chunks_exact(block).zip(y[..outer * block].chunks_exact_mut(block)) {
        let rows = xb.chunks_exact(inner).zip(yb.chunks_exact_mut(inner));
        for ((xr, yr), (&a, &b)) in rows.zip(scale[..channels].iter().zip(&shift[..channels])) {
            for (yv, &xv) in yr.iter_mut().zip(xr) {
                *yv = xv * a + b;
            }
        }
    }
}

/// In place [`channel_affine`]: `xy[o, c, i] = xy[o, c, i] * scale[c] + shift[c]`.
pub fn channel_affine_in_place(
    xy: &mut [f32],
    scale: &[f32],
    shift: &[f32],
    outer: usize,
    channels: usize,
    inner: usize,
) {
    let block = channels * inner;
    if block == 0 {
        return;
    }
    for xb in xy[..outer * block].chunks_exact_mut(block) {
        let rows = xb.chunks_exact_mut(inner);
        for (r, (&a, &b)) in rows.zip(scale[..channels].iter().zip(&shift[..channels])) {
            for v in r.iter_mut() {
                *v = *v * a + b;
            }
        }
    }
}

/// Mean and biased (population) variance of a contiguous run, two-pass.
#[inline(always)]
fn mean_var(xs: &[f32]) -> (f32, f32) {
    let n = xs.len() as f32;
    let mean = fold_contig(0.0, xs, 0.0, |v| v, |a, b| a + b) / n;
    let var = fold_contig(0.0, xs, 0.0, |v| (v - mean) * (v - mean), |a, b| a + b) / n;
    (mean, var)
}

/// Writes `y = (x - mean) * inv_std * g + b` for one run, with optional
/// per-element `g` / `b` vectors or per-run scalars.
#[inline(always)]
fn normalize_run(xr: &[f32], yr: &mut [f32], epsilon: f32, affine: impl Fn(usize, f32) -> f32) {
    let (mean, var) = mean_var(xr);
    let inv = 1.0 / libm::sqrtf(var + epsilon);
    for (i, (yv, &xv)) in yr.iter_mut().zip(xr).enumerate() {
        *yv = affine(i, (xv - mean) * inv);
    }
}

/// ONNX InstanceNormalization on `[batch, channels, inner]` data: every
/// `(n, c)` run of `inner` values is normalised with its own mean and
/// biased variance, `y = scale[c] * (x - mean) / sqrt(var + epsilon) +
/// bias[c]`.
#[allow(clippy::too_many_arguments)]
pub fn instance_norm(
    x: &[f32],
    y: &mut [f32],
    scale: &[f32],
    bias: &[f32],
    batch: usize,
    channels: usize,
    inner: usize,
    epsilon: f32,
) {
    if inner == 0 {
        return;
    }
    let total = batch * channels * inner;
    let runs = x[..total].chunks_exact(inner).zip(y[..total].chunks_exact_mut(inner));
    for (r, (xr, yr)) in runs.enumerate() {
        let c = r % channels;
        let (s, b) = (scale[c], bias[c]);
        normalize_run(xr, yr, epsilon, |_, v| v * s + b);
    }
}

/// ONNX LayerNormalization over the last axes flattened to `inner`: each
/// contiguous run of `inner` values (`outer` runs) becomes
/// `(x - mean) / sqrt(var + epsilon) * gamma[i] + beta[i]` (biased variance;
/// a missing `gamma` is 1, a missing `beta` is 0).
pub fn layer_norm(
    x: &[f32],
    y: &mut [f32],
    gamma: Option<&[f32]>,
    beta: Option<&[f32]>,
    outer: usize,
    inner: usize,
    epsilon: f32,
) {
    if inner == 0 {
        return;
    }
    let total = outer * inner;
    let runs = x[..total].chunks_exact(inner).zip(y[..total].chunks_exact_mut(inner));
    for (xr, yr) in runs {
        match (gamma, beta) {
            (Some(g), Some(b)) => {
                let (g, b) = (&g[..inner], &b[..inner]);
                normalize_run(xr, yr, epsilon, |i, v| v * g[i] + b[i]);
            }
            (Some(g), None) => {
                let g = &g[..inner];
                normalize_run(xr, yr, epsilon, |i, v| v * g[i]);
            }
            (None, Some(b)) => {
                let b = &b[..inner];
                normalize_run(xr, yr, epsilon, |i, v| v + b[i]);
            }
            (None, None) => normalize_run(xr, yr, epsilon, |_, v| v),
        }
    }
}

/// RMS normalisation over the middle axis of an `[outer, axis_len, inner]`
/// view: `y = x / sqrt(mean(x^2) + epsilon)`, the mean taken over the
/// `axis_len` values `x[o, .., i]` (tract's `RmsNorm`, which LayerNormalization
/// over the last axis becomes once the mean is subtracted).
pub fn rms_norm(x: &[f32], y: &mut [f32], outer: usize, axis_len: usize, inner: usize, epsilon: f32) {
    let block = axis_len * inner;
    if block == 0 {
        return;
    }
    let n = axis_len as f32;
    let blocks = x[..outer * block].chunks_exact(block).zip(y[..outer * block].chunks_exact_mut(block));
    for (xb, yb) in blocks {
        if inner == 1 {
            let ms = fold_contig(0.0, xb, 0.0, |v| v * v, |a, b| a + b) / n;
            let inv = 1.0 / libm::sqrtf(ms + epsilon);
            for (yv, &xv) in yb.iter_mut().zip(xb) {
                *yv = xv * inv;
            }
            continue;
        }
        // y doubles as the accumulator: its first row gathers the sums of squares.
        let (acc, _) = yb.split_at_mut(inner);
        acc.fill(0.0);
        for xr in xb.chunks_exact(inner) {
            for (a, &v) in acc.iter_mut().zip(xr) {
                *a += v * v;
            }
        }
        for a in acc.iter_mut() {
            *a = 1.0 / libm::sqrtf(*a / n + epsilon);
        }
        // Scale the rows after the first, then the first one in place.
        let (first, rest) = yb.split_at_mut(inner);
        for (yr, xr) in rest.chunks_exact_mut(inner).zip(xb[inner..].chunks_exact(inner)) {
            for ((yv, &xv), &inv) in yr.iter_mut().zip(xr).zip(first.iter()) {
                *yv = xv * inv;
            }
        }
        for (yv, &xv) in first.iter_mut().zip(&xb[..inner]) {
            *yv *= xv;
        }
    }
}

/// ONNX LRN across channels on `[batch, channels, inner]` data:
/// `y = x / (bias + alpha / size * sq)^beta`, where `sq` is the sum of
/// `x[n, c', i]^2` over `c'` in
/// `[c - floor((size - 1) / 2), c + ceil((size - 1) / 2)]` clipped to
/// `[0, channels)`. `y` doubles as the accumulator, so no scratch is needed.
#[allow(clippy::too_many_arguments)]
pub fn lrn(
    x: &[f32],
    y: &mut [f32],
    batch: usize,
    channels: usize,
    inner: usize,
    size: usize,
    alpha: f32,
    beta: f32,
    bias: f32,
) {
    let block = channels * inner;
    if block == 0 || size == 0 {
        return;
    }
    let before = (size - 1) / 2;
    let after = size - 1 - before;
    let k = alpha / size as f32;
    for (xb, yb) in x[..batch * block].chunks_exact(block).zip(y[..batch * block].chunks_exact_mut(block)) {
        for (c, yr) in yb.chunks_exact_mut(inner).enumerate() {
            yr.fill(0.0);
            let c_lo = c.saturating_sub(before);
            let c_hi = (c + after).min(channels - 1);
            for xr in xb[c_lo * inner..(c_hi + 1) * inner].chunks_exact(inner) {
                for (a, &v) in yr.iter_mut().zip(xr) {
                    *a += v * v;
                }
            }
            let xr = &xb[c * inner..][..inner];
            for (yv, &xv) in yr.iter_mut().zip(xr) {
                *yv = xv / libm::powf(bias + k * *yv, beta);
            }
        }
    }
}
