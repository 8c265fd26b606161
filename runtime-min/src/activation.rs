//! The fused activation epilogue and the scalar math shared with the
//! elementwise kernels.

/// A fused activation applied elementwise to convolution / matmul outputs
/// after the bias has been added.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Activation {
    /// Identity.
    None,
    /// `max(v, 0)` (NaN propagates).
    Relu,
    /// `min(max(v, min), max)` (ONNX Clip; NaN propagates).
    Clip {
        /// Lower bound.
        min: f32,
        /// Upper bound.
        max: f32,
    },
    /// `v` if `v >= 0`, else `alpha * v` (ONNX LeakyRelu).
    LeakyRelu {
        /// Slope for negative inputs.
        alpha: f32,
    },
    /// `v * clamp(v / 6 + 0.5, 0, 1)` (ONNX HardSwish).
    HardSwish,
    /// `1 / (1 + exp(-v))`.
    Sigmoid,
    /// `tanh(v)`.
    Tanh,
}

/// The body of [`Activation::apply_in_place`] and [`Activation::apply_in_kernel`]: the match on
/// the variant once, then the elementwise loop.
macro_rules! apply_each {
    ($act:expr, $xs:expr) => {
        match $act {
            Activation::None => {}
            Activation::Relu => map_in_place($xs, relu_f),
            Activation::Clip { min, max } => map_in_place($xs, |v| clip_f(v, min, max)),
            Activation::LeakyRelu { alpha } => map_in_place($xs, |v| leaky_relu_f(v, alpha)),
            Activation::HardSwish => map_in_place($xs, hard_swish_f),
            Activation::Sigmoid => map_in_place($xs, sigmoid_f),
            Activation::Tanh => map_in_place($xs, libm::tanhf),
        }
    };
}

impl Activation {
    /// Applies the activation to one value.
    #[inline]
    pub fn apply(self, v: f32) -> f32 {
        match self {
            Activation::None => v,
            Activation::Relu => relu_f(v),
            Activation::Clip { min, max } => clip_f(v, min, max),
            Activation::LeakyRelu { alpha } => leaky_relu_f(v, alpha),
            Activation::HardSwish => hard_swish_f(v),
            Activation::Sigmoid => sigmoid_f(v),
            Activation::Tanh => libm::tanhf(v),
        }
    }

    /// Applies the activation in place to every element of `xs` (the match
    /// on the variant happens once, outside the loop).
    #[inline]
    pub fn apply_in_place(self, xs: &mut [f32]) {
        apply_each!(self, xs)
    }

    /// [`Activation::apply_in_place`] always inlined, for x86-64 kernels: their bodies are
    /// compiled once per kernel path (`arch::run`), and an out-of-line call runs the baseline
    /// build's copy, without the path's vectors (the FMA column tiles' epilogue called it per row
    /// of a tile, the depthwise kernel per plane). Its own expansion of the body, not a call of
    /// `apply_in_place`'s: a shared always-inlined body made LLVM inline `apply_in_place`
    /// everywhere, slower in the row-vector tiles and the implicit convolution.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub(crate) fn apply_in_kernel(self, xs: &mut [f32]) {
        apply_each!(self, xs)
    }
}

#[inline(always)]
pub(crate) fn map_in_place(xs: &mut [f32], f: impl Fn(f32) -> f32) {
    for v in xs.iter_mut() {
        *v = f(*v);
    }
}

#[inline(always)]
pub(crate) fn map(x: &[f32], y: &mut [f32], f: impl Fn(f32) -> f32) {
    let x = &x[..y.len()];
    for (d, &s) in y.iter_mut().zip(x) {
        *d = f(s);
    }
}

#[inline(always)]
pub(crate) fn relu_f(v: f32) -> f32 {
    if v < 0.0 {
        0.0
    } else {
        v
    }
}

#[inline(always)]
pub(crate) fn clip_f(v: f32, min: f32, max: f32) -> f32 {
    if v < min {
        min
    } else if v > max {
        max
    } else {
        v
    }
}

#[inline(always)]
pub(crate) fn leaky_relu_f(v: f32, alpha: f32) -> f32 {
    if v < 0.0 {
        alpha * v
    } else {
        v
    }
}

#[inline(always)]
pub(crate) fn hard_sigmoid_f(v: f32, alpha: f32, beta: f32) -> f32 {
    clip_f(alpha * v + beta, 0.0, 1.0)
}

#[inline(always)]
pub(crate) fn hard_swish_f(v: f32) -> f32 {
    v * hard_sigmoid_f(v, 1.0 / 6.0, 0.5)
}

#[inline(always)]
pub(crate) fn sigmoid_f(v: f32) -> f32 {
    if v >= 0.0 {
        1.0 / (1.0 + libm::expf(-v))
    } else {
        let e = libm::expf(v);
        e / (1.0 + e)
    }
}
