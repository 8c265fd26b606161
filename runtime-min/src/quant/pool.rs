//! Quantized max and average pooling (incl. global pooling as a window of the whole input):
//! TFLite MAX_POOL_2D / AVERAGE_POOL_2D (`reference_integer_ops::MaxPool` / `AveragePool`), ONNX
//! MaxPool on quantized tensors, QLinearAveragePool / QLinearGlobalAveragePool with equal input
//! and output quantization.

use core::ops::Range;

use super::{ImageStrides, QuantInt};

/// Parameters of [`max_pool2d`] and [`avg_pool2d`]: the input and output share one scale and
/// zero point (TFLite's requirement), addressed by strides as [`Conv2d`](super::Conv2d).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pool2d {
    /// N.
    pub batch: usize,
    /// C.
    pub channels: usize,
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
    /// Vertical dilation (>= 1; ONNX MaxPool only).
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
    /// Average pooling only: padding positions inside `pad_*` count, with the value
    /// `zero_point` (ONNX `count_include_pad = 1`); TFLite excludes them (`false`).
    pub count_include_pad: bool,
    /// Strides of the input.
    pub x_strides: ImageStrides,
    /// Strides of the output.
    pub y_strides: ImageStrides,
    /// The zero point of input and output: the value of an empty window and of counted padding.
    pub zero_point: i32,
    /// Lower output clamp (fused activation).
    pub act_min: i32,
    /// Upper output clamp (fused activation).
    pub act_max: i32,
}

/// Along one axis, for output `o`: the window positions whose input coordinate is inside the
/// input (a range, as the coordinate grows with the position), and how many lie inside the padded
/// extent (`pad_before + len + pad_after`).
fn window_axis(
    o: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
    pads: (usize, usize),
    len: usize,
) -> (Range<usize>, usize) {
    let (before, after) = pads;
    let (mut lo, mut hi, mut extent) = (kernel, 0, 0);
    for k in 0..kernel {
        let i = o * stride + k * dilation;
        if (before..before + len).contains(&i) {
            lo = lo.min(k);
            hi = k + 1;
        }
        extent += (i < before + len + after) as usize;
    }
    (lo..hi.max(lo), extent)
}

impl Pool2d {
    /// For every output value: folds `step` over the window's input values from `init`, then
    /// `finish(acc, inputs, padding)` (`padding`: the window positions in the padded extent but
    /// outside the input), clamped and stored.
    #[inline(always)]
    fn pool<T: QuantInt>(
        &self,
        x: &[T],
        y: &mut [T],
        init: i32,
        step: impl Fn(i32, i32) -> i32,
        finish: impl Fn(i32, usize, usize) -> i32,
    ) {
        let (xs, ys) = (self.x_strides, self.y_strides);
        for oy in 0..self.out_h {
            let pads = (self.pad_top, self.pad_bottom);
            let (ry, ey) = window_axis(oy, self.kernel_h, self.stride_h, self.dilation_h, pads, self.in_h);
            for ox in 0..self.out_w {
                let pads = (self.pad_left, self.pad_right);
                let (rx, ex) = window_axis(ox, self.kernel_w, self.stride_w, self.dilation_w, pads, self.in_w);
                let inputs = ry.len() * rx.len();
                let padding = ey * ex - inputs;
                let iy0 = (oy * self.stride_h).wrapping_sub(self.pad_top);
                let ix0 = (ox * self.stride_w).wrapping_sub(self.pad_left);
                for b in 0..self.batch {
                    for c in 0..self.channels {
                        let base = b * xs.n + c * xs.c;
                        let mut acc = init;
                        for ky in ry.clone() {
                            let row = base + iy0.wrapping_add(ky * self.dilation_h) * xs.h;
                            for kx in rx.clone() {
                                acc = step(acc, x[row + ix0.wrapping_add(kx * self.dilation_w) * xs.w].to_i32());
                            }
                        }
                        let v = finish(acc, inputs, padding);
                        y[b * ys.n + c * ys.c + oy * ys.h + ox * ys.w] =
                            T::saturate(v.max(self.act_min).min(self.act_max));
                    }
                }
            }
        }
    }
}

/// Quantized max pooling: the largest input value of each window (padding ignored; the zero
/// point for a window without input), clamped to `[act_min, act_max]`. On x86-64, 8-bit 2x2
/// windows at stride 2 without padding run a SIMD kernel (same bits).
pub fn max_pool2d<T: QuantInt>(p: &Pool2d, x: &[T], y: &mut [T]) {
    if crate::arch::quant_max_pool2d(p, x, y) {
        return;
    }
    p.pool(x, y, i32::MIN, i32::max, |acc, inputs, _| if inputs == 0 { p.zero_point } else { acc });
}

/// Quantized average pooling: TFLite's `sum > 0 ? (sum + n / 2) / n : (sum - n / 2) / n` (to
/// nearest, ties away from zero) over the `n` input values of each window, plus with
/// `count_include_pad` the padding positions as `zero_point`; the zero point for an empty
/// window. Clamped to `[act_min, act_max]`. ONNX's rounding is [`avg_pool2d_half_even`].
pub fn avg_pool2d<T: QuantInt>(p: &Pool2d, x: &[T], y: &mut [T]) {
    p.pool(x, y, 0, i32::wrapping_add, |sum, inputs, padding| {
        let padding = if p.count_include_pad { padding } else { 0 };
        let n = (inputs + padding) as i32;
        let sum = sum.wrapping_add(padding as i32 * p.zero_point);
        match n {
            0 => p.zero_point,
            _ if sum > 0 => (sum + n / 2) / n,
            _ => (sum - n / 2) / n,
        }
    });
}

/// Quantized average pooling rounded as ONNX rounds (QuantizeLinear's ties to even), for ONNX
/// models: `zero_point + round(sum (x - zero_point) / n)`, the exact quotient rounded to
/// nearest, ties to even, in integer arithmetic only. `n` counts the window's input values, and
/// with `count_include_pad` its padding positions (which add 0 to the sum); the zero point for
/// an empty window. Clamped to `[act_min, act_max]`.
///
/// onnxruntime (QLinearAveragePool, and QDQ AveragePool, which it fuses into it) averages in
/// `f32`: `nearbyint(sum(scale * (x - zero_point)) / n / scale + zero_point)`. Away from a tie
/// both give the same integer; at an exact tie of the quotient (a sum of 2 or 4 values ending in
/// a half) the `f32` rounding errors decide onnxruntime's side, which no integer rule
/// reproduces: measured on random 2x2 and 3x3 windows (`scripts/ort_avgpool_ties.py`), this rule
/// agrees with it on 53-63% of the ties, TFLite's rounding of [`avg_pool2d`] on 48-52%. The
/// evidence is not one-sided: on the six average pools of `tests/quant_ops.rs` (3x3 windows
/// with padding, and 2x2 ones into another scale) it leaves 92.6-93.4% / 54.7-56.3% of the
/// outputs equal where TFLite's rule left 94.9-96.5% / 57.8%, all within one step either way;
/// on lenet_qdq_s8 (`tests/quant_models.rs`) it brings the model from 3 steps to 1.
pub fn avg_pool2d_half_even<T: QuantInt>(p: &Pool2d, x: &[T], y: &mut [T]) {
    p.pool(x, y, 0, i32::wrapping_add, |sum, inputs, padding| {
        let padding = if p.count_include_pad { padding } else { 0 };
        let n = (inputs + padding) as i32;
        if n == 0 {
            return p.zero_point;
        }
        let centered = sum.wrapping_sub(inputs as i32 * p.zero_point);
        let (q, r) = (centered.div_euclid(n), centered.rem_euclid(n));
        let up = match (2 * r).cmp(&n) {
            core::cmp::Ordering::Greater => 1,
            core::cmp::Ordering::Equal => q & 1,
            core::cmp::Ordering::Less => 0,
        };
        (q + up).wrapping_add(p.zero_point)
    });
}
