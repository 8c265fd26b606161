//! Elementwise unary kernels. Each comes as `name(x, y)` (`y[i] = f(x[i])`,
//! `x.len() >= y.len()`, `y.len()` elements processed) and
//! `name_in_place(xy)`.

use crate::activation::{clip_f, hard_sigmoid_f, hard_swish_f, leaky_relu_f, map, map_in_place, relu_f, sigmoid_f};

#[inline(always)]
fn softplus_f(v: f32) -> f32 {
    // log(1 + exp(v)) = max(v, 0) + log1p(exp(-|v|)), stable for large |v|.
    relu_f(v) + libm::log1pf(libm::expf(-libm::fabsf(v)))
}

#[inline(always)]
fn gelu_f(v: f32) -> f32 {
    // 1 + erf(z) = erfc(-z), accurate in the negative tail.
    0.5 * v * libm::erfcf(-v * core::f32::consts::FRAC_1_SQRT_2)
}

#[inline(always)]
fn elu_f(v: f32, alpha: f32) -> f32 {
    if v < 0.0 {
        alpha * libm::expm1f(v)
    } else {
        v
    }
}

#[inline(always)]
fn selu_f(v: f32, alpha: f32, gamma: f32) -> f32 {
    if v > 0.0 {
        gamma * v
    } else {
        gamma * alpha * libm::expm1f(v)
    }
}

#[inline(always)]
fn celu_f(v: f32, alpha: f32) -> f32 {
    if v > 0.0 {
        v
    } else {
        alpha * libm::expm1f(v / alpha)
    }
}

macro_rules! unary_kernels {
    ($( $name:ident, $in_place:ident, $doc:literal, $note:literal, $f:expr; )*) => {
        $(
            #[doc = concat!("Elementwise `y = ", $doc, "`.", $note)]
            pub fn $name(x: &[f32], y: &mut [f32]) {
                map(x, y, $f);
            }
            #[doc = concat!("In place `xy = ", $doc, "` (with `x = xy`).", $note)]
            pub fn $in_place(xy: &mut [f32]) {
                map_in_place(xy, $f);
            }
        )*
        /// These kernels and their in-place variants (see [`crate::in_place_variant`]).
        pub(crate) const UNARY_IN_PLACE: &[(&str, &str)] = &[$((stringify!($name), stringify!($in_place))),*];
    };
}

unary_kernels! {
    relu, relu_in_place, "max(x, 0)", " NaN propagates.", relu_f;
    sigmoid, sigmoid_in_place, "1 / (1 + exp(-x))", " Evaluated without overflow.", sigmoid_f;
    tanh, tanh_in_place, "tanh(x)", "", libm::tanhf;
    exp, exp_in_place, "exp(x)", "", libm::expf;
    ln, ln_in_place, "ln(x)", " ONNX Log (natural logarithm).", libm::logf;
    sqrt, sqrt_in_place, "sqrt(x)", "", libm::sqrtf;
    rsqrt, rsqrt_in_place, "1 / sqrt(x)", "", |v| 1.0 / libm::sqrtf(v);
    reciprocal, reciprocal_in_place, "1 / x", "", |v| 1.0 / v;
    abs, abs_in_place, "|x|", "", libm::fabsf;
    neg, neg_in_place, "-x", "", |v: f32| -v;
    square, square_in_place, "x * x", "", |v| v * v;
    erf, erf_in_place, "erf(x)", "", libm::erff;
    floor, floor_in_place, "floor(x)", "", libm::floorf;
    ceil, ceil_in_place, "ceil(x)", "", libm::ceilf;
    round, round_in_place, "round(x)", " ONNX Round: halves round to the even neighbour.", libm::rintf;
    sin, sin_in_place, "sin(x)", "", libm::sinf;
    cos, cos_in_place, "cos(x)", "", libm::cosf;
    softplus, softplus_in_place, "ln(1 + exp(x))", " Evaluated without overflow.", softplus_f;
    softsign, softsign_in_place, "x / (1 + |x|)", "", |v: f32| v / (1.0 + libm::fabsf(v));
    hard_swish, hard_swish_in_place, "x * max(0, min(1, x / 6 + 0.5))", " ONNX HardSwish.", hard_swish_f;
    silu, silu_in_place, "x * sigmoid(x)", " ONNX / tract Silu (Swish).", |v| v * sigmoid_f(v);
    gelu, gelu_in_place, "0.5 * x * (1 + erf(x / sqrt(2)))", " ONNX Gelu, exact (erf) form.", gelu_f;
}

/// Elementwise `y = min(max(x, min), max)` (ONNX Clip; NaN propagates).
pub fn clip(x: &[f32], y: &mut [f32], min: f32, max: f32) {
    map(x, y, |v| clip_f(v, min, max));
}

/// In place [`clip`].
pub fn clip_in_place(xy: &mut [f32], min: f32, max: f32) {
    map_in_place(xy, |v| clip_f(v, min, max));
}

/// Elementwise ONNX LeakyRelu: `y = x` if `x >= 0`, else `alpha * x`.
pub fn leaky_relu(x: &[f32], y: &mut [f32], alpha: f32) {
    map(x, y, |v| leaky_relu_f(v, alpha));
}

/// In place [`leaky_relu`].
pub fn leaky_relu_in_place(xy: &mut [f32], alpha: f32) {
    map_in_place(xy, |v| leaky_relu_f(v, alpha));
}

/// Elementwise ONNX Elu: `y = x` if `x >= 0`, else `alpha * (exp(x) - 1)`.
pub fn elu(x: &[f32], y: &mut [f32], alpha: f32) {
    map(x, y, |v| elu_f(v, alpha));
}

/// In place [`elu`].
pub fn elu_in_place(xy: &mut [f32], alpha: f32) {
    map_in_place(xy, |v| elu_f(v, alpha));
}

/// Elementwise ONNX Selu: `y = gamma * x` if `x > 0`, else
/// `gamma * alpha * (exp(x) - 1)`.
pub fn selu(x: &[f32], y: &mut [f32], alpha: f32, gamma: f32) {
    map(x, y, |v| selu_f(v, alpha, gamma));
}

/// In place [`selu`].
pub fn selu_in_place(xy: &mut [f32], alpha: f32, gamma: f32) {
    map_in_place(xy, |v| selu_f(v, alpha, gamma));
}

/// Elementwise ONNX HardSigmoid: `y = max(0, min(1, alpha * x + beta))`.
pub fn hard_sigmoid(x: &[f32], y: &mut [f32], alpha: f32, beta: f32) {
    map(x, y, |v| hard_sigmoid_f(v, alpha, beta));
}

/// In place [`hard_sigmoid`].
pub fn hard_sigmoid_in_place(xy: &mut [f32], alpha: f32, beta: f32) {
    map_in_place(xy, |v| hard_sigmoid_f(v, alpha, beta));
}

/// Elementwise ONNX Celu: `y = max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`.
pub fn celu(x: &[f32], y: &mut [f32], alpha: f32) {
    map(x, y, |v| celu_f(v, alpha));
}

/// In place [`celu`].
pub fn celu_in_place(xy: &mut [f32], alpha: f32) {
    map_in_place(xy, |v| celu_f(v, alpha));
}

/// Elementwise `y = x ^ e` for a constant exponent (ONNX Pow with a scalar
/// exponent), with exact fast paths for `e = 1` (copy), `e = 2` (`x * x`)
/// and `e = 0.5` (`sqrt(x)`; note `powf(-0.0, 0.5) = +0` while
/// `sqrt(-0.0) = -0`); other exponents use `powf`.
pub fn pow_scalar(x: &[f32], y: &mut [f32], e: f32) {
    if e == 1.0 {
        let n = y.len();
        y.copy_from_slice(&x[..n]);
    } else if e == 2.0 {
        map(x, y, |v| v * v);
    } else if e == 0.5 {
        map(x, y, libm::sqrtf);
    } else {
        map(x, y, |v| libm::powf(v, e));
    }
}

/// In place [`pow_scalar`].
pub fn pow_scalar_in_place(xy: &mut [f32], e: f32) {
    if e == 2.0 {
        map_in_place(xy, |v| v * v);
    } else if e == 0.5 {
        map_in_place(xy, libm::sqrtf);
    } else if e != 1.0 {
        map_in_place(xy, |v| libm::powf(v, e));
    }
}

/// `y = x` (copies `y.len()` elements).
pub fn copy(x: &[f32], y: &mut [f32]) {
    let n = y.len();
    y.copy_from_slice(&x[..n]);
}

/// Sets every element of `y` to `value`.
pub fn fill(y: &mut [f32], value: f32) {
    y.fill(value);
}
