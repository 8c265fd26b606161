//! Shared test helpers: a tiny deterministic PRNG and tolerance checks.
#![allow(dead_code)]

/// xorshift64* PRNG.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [-1, 1).
    pub fn f(&mut self) -> f32 {
        ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (self.f() + 1.0) * 0.5 * (hi - lo)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    pub fn vec(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.f()).collect()
    }
    pub fn vec_in(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| self.uniform(lo, hi)).collect()
    }
}

/// `|got - want| <= 1e-6 + 1e-5 * max(|want|, mag)` for every element,
/// where `mag` (if given) is the sum of the magnitudes of the terms that
/// produced `want` (condition-aware relative tolerance for long sums).
pub fn assert_close_mag(got: &[f32], want: &[f64], mag: Option<&[f64]>, ctx: &str) {
    assert_eq!(got.len(), want.len(), "{ctx}: length mismatch");
    for i in 0..got.len() {
        let (g, w) = (got[i] as f64, want[i]);
        let m = mag.map_or(0.0, |m| m[i]).max(w.abs());
        let ok = if w.is_nan() {
            g.is_nan()
        } else if w.is_infinite() {
            g == w
        } else {
            (g - w).abs() <= 1e-6 + 1e-5 * m
        };
        assert!(ok, "{ctx}: element {i}: got {g}, want {w} (mag {m})");
    }
}

pub fn assert_close(got: &[f32], want: &[f64], ctx: &str) {
    assert_close_mag(got, want, None, ctx);
}

/// Row-major contiguous strides.
pub fn strides_of(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![0; shape.len()];
    let mut acc = 1;
    for d in (0..shape.len()).rev() {
        s[d] = acc;
        acc *= shape[d];
    }
    s
}

/// Every multi-index of `shape` in row-major order.
pub fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let total: usize = shape.iter().product();
    let mut out = Vec::with_capacity(total);
    for mut flat in 0..total {
        let mut idx = vec![0; shape.len()];
        for d in (0..shape.len()).rev() {
            idx[d] = flat % shape[d];
            flat /= shape[d];
        }
        out.push(idx);
    }
    out
}

/// Reference activation in f64.
pub fn act_ref(a: sramfit_runtime_min::Activation, v: f64) -> f64 {
    use sramfit_runtime_min::Activation::*;
    match a {
        None => v,
        Relu => v.max(0.0),
        Clip { min, max } => v.max(min as f64).min(max as f64),
        LeakyRelu { alpha } => {
            if v < 0.0 {
                alpha as f64 * v
            } else {
                v
            }
        }
        HardSwish => v * (v / 6.0 + 0.5).clamp(0.0, 1.0),
        Sigmoid => 1.0 / (1.0 + (-v).exp()),
        Tanh => v.tanh(),
    }
}

pub const ACTS: [sramfit_runtime_min::Activation; 7] = [
    sramfit_runtime_min::Activation::None,
    sramfit_runtime_min::Activation::Relu,
    sramfit_runtime_min::Activation::Clip { min: -0.5, max: 0.75 },
    sramfit_runtime_min::Activation::LeakyRelu { alpha: 0.1 },
    sramfit_runtime_min::Activation::HardSwish,
    sramfit_runtime_min::Activation::Sigmoid,
    sramfit_runtime_min::Activation::Tanh,
];

/// ONNX output size, with ceil_mode and its "last window must start inside
/// the input or left padding" rule.
pub fn out_len(inp: usize, k: usize, s: usize, d: usize, pb: usize, pe: usize, ceil: bool) -> usize {
    let span = inp + pb + pe - d * (k - 1) - 1;
    let mut o = if ceil { span.div_ceil(s) + 1 } else { span / s + 1 };
    if ceil && (o - 1) * s >= inp + pb {
        o -= 1;
    }
    o
}

/// ONNX MaxPool / AveragePool parameters for 2-D (or, with `in_h = kernel_h = 1`, 1-D) pooling.
#[allow(clippy::too_many_arguments)]
pub fn pool_params(
    (batch, channels): (usize, usize),
    (in_h, in_w): (usize, usize),
    (kh, kw): (usize, usize),
    (sh, sw): (usize, usize),
    (dh, dw): (usize, usize),
    (pt, pl, pb, pr): (usize, usize, usize, usize),
    ceil: bool,
    count_include_pad: bool,
) -> sramfit_runtime_min::Pool2d {
    sramfit_runtime_min::Pool2d {
        batch,
        channels,
        in_d: 1,
        out_d: 1,
        kernel_d: 1,
        stride_d: 1,
        dilation_d: 1,
        pad_front: 0,
        pad_back: 0,
        in_h,
        in_w,
        out_h: out_len(in_h, kh, sh, dh, pt, pb, ceil),
        out_w: out_len(in_w, kw, sw, dw, pl, pr, ceil),
        kernel_h: kh,
        kernel_w: kw,
        stride_h: sh,
        stride_w: sw,
        dilation_h: dh,
        dilation_w: dw,
        pad_top: pt,
        pad_left: pl,
        pad_bottom: pb,
        pad_right: pr,
        count_include_pad,
    }
}

#[allow(clippy::too_many_arguments)]
/// A convolution of `batch` images of `ic` channels into `oc` channels, with the output size
/// ONNX gives for these pads (top, left, bottom, right), OIHW weights.
pub fn conv_params(
    batch: usize,
    ic: usize,
    oc: usize,
    (in_h, in_w): (usize, usize),
    (kh, kw): (usize, usize),
    (sh, sw): (usize, usize),
    (dh, dw): (usize, usize),
    (pt, pl, pb, pr): (usize, usize, usize, usize),
    groups: usize,
    act: sramfit_runtime_min::Activation,
) -> sramfit_runtime_min::Conv2d {
    let out_h = (in_h + pt + pb - dh * (kh - 1) - 1) / sh + 1;
    let out_w = (in_w + pl + pr - dw * (kw - 1) - 1) / sw + 1;
    sramfit_runtime_min::Conv2d {
        batch,
        in_channels: ic,
        in_h,
        in_w,
        out_channels: oc,
        out_h,
        out_w,
        kernel_h: kh,
        kernel_w: kw,
        stride_h: sh,
        stride_w: sw,
        dilation_h: dh,
        dilation_w: dw,
        pad_top: pt,
        pad_left: pl,
        groups,
        act,
        weights: sramfit_runtime_min::ConvWeights::Oihw,
        input: sramfit_runtime_min::ConvInput::Nchw,
    }
}

/// Runs `f` with each kernel path this CPU supports in force (holding `paths`, the lock of the
/// calling test file: the path in force is process-wide), then restores the detected path;
/// returns each path's result, the portable path's first.
pub fn on_each_path<T>(paths: &std::sync::Mutex<()>, f: impl Fn() -> T) -> Vec<(sramfit_runtime_min::KernelPath, T)> {
    use sramfit_runtime_min::{detected_kernel_path, force_kernel_path, kernel_path, KernelPath};
    let _guard = paths.lock().unwrap_or_else(|e| e.into_inner());
    let results = KernelPath::ALL
        .into_iter()
        .filter(|p| p.is_supported())
        .map(|p| {
            force_kernel_path(p).unwrap();
            assert_eq!(kernel_path(), p);
            (p, f())
        })
        .collect();
    force_kernel_path(detected_kernel_path()).unwrap();
    results
}

/// An NCHW tensor `x` of `[n, c, h, w]` in NHWC order.
pub fn nchw_to_nhwc(x: &[f32], (n, c, h, w): (usize, usize, usize, usize)) -> Vec<f32> {
    let mut out = vec![0.0; x.len()];
    for b in 0..n {
        for ch in 0..c {
            for i in 0..h * w {
                out[(b * h * w + i) * c + ch] = x[(b * c + ch) * h * w + i];
            }
        }
    }
    out
}

/// Direct ONNX Conv in f64; returns (value, magnitude).
pub fn conv_ref(p: &sramfit_runtime_min::Conv2d, x: &[f32], w: &[f32], bias: Option<&[f32]>) -> (Vec<f64>, Vec<f64>) {
    let icg = p.in_channels / p.groups;
    let ocg = p.out_channels / p.groups;
    let mut out = vec![];
    let mut mag = vec![];
    for n in 0..p.batch {
        for oc in 0..p.out_channels {
            let g = oc / ocg;
            for oh in 0..p.out_h {
                for ow in 0..p.out_w {
                    let b = bias.map_or(0.0, |b| b[oc] as f64);
                    let (mut s, mut m) = (b, b.abs());
                    for ic in 0..icg {
                        for kh in 0..p.kernel_h {
                            for kw in 0..p.kernel_w {
                                let ih = (oh * p.stride_h + kh * p.dilation_h) as isize - p.pad_top as isize;
                                let iw = (ow * p.stride_w + kw * p.dilation_w) as isize - p.pad_left as isize;
                                if ih < 0 || iw < 0 || ih >= p.in_h as isize || iw >= p.in_w as isize {
                                    continue;
                                }
                                let xv = x
                                    [((n * p.in_channels + g * icg + ic) * p.in_h + ih as usize) * p.in_w + iw as usize]
                                    as f64;
                                let wv = w[((oc * icg + ic) * p.kernel_h + kh) * p.kernel_w + kw] as f64;
                                s += xv * wv;
                                m += (xv * wv).abs();
                            }
                        }
                    }
                    out.push(act_ref(p.act, s));
                    mag.push(m);
                }
            }
        }
    }
    (out, mag)
}

/// OIHW weights in the `ConvWeights::KMajor` layout, followed by `slack` zeros.
pub fn k_major(p: &sramfit_runtime_min::Conv2d, w: &[f32], slack: usize) -> Vec<f32> {
    let ocg = p.out_channels / p.groups;
    let kk = p.in_channels / p.groups * p.kernel_h * p.kernel_w;
    let mut out = vec![0.0; w.len() + slack];
    for g in 0..p.groups {
        for oc in 0..ocg {
            for k in 0..kk {
                out[(g * kk + k) * ocg + oc] = w[(g * ocg + oc) * kk + k];
            }
        }
    }
    out
}
