//! Quantized 2-D convolution (standard, grouped, pointwise, 1-D as `in_h = 1`): TFLite CONV_2D,
//! ONNX QLinearConv / ConvInteger / QDQ Conv.

use super::{ChannelQuant, ImageStrides, QuantElem};

/// Parameters of [`conv2d`] (and of [`depthwise_conv2d`](super::depthwise_conv2d), with
/// `groups == in_channels`).
///
/// Input element `(b, c, y, x)` is `x[b * x_strides.n + c * x_strides.c + y * x_strides.h + x *
/// x_strides.w]`, likewise the output: one kernel serves NHWC and NCHW (and views in between).
/// The window of output `(oy, ox)` starts at input row `oy * stride_h - pad_top` and column
/// `ox * stride_w - pad_left`; positions outside the input read `x_zero_point`, so the bottom /
/// right padding is implied by `out_h` / `out_w`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv2d {
    /// N.
    pub batch: usize,
    /// C of the input.
    pub in_channels: usize,
    /// Input height (1 for a 1-D convolution).
    pub in_h: usize,
    /// Input width.
    pub in_w: usize,
    /// C of the output.
    pub out_channels: usize,
    /// Output height.
    pub out_h: usize,
    /// Output width.
    pub out_w: usize,
    /// Kernel height.
    pub kernel_h: usize,
    /// Kernel width.
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
    /// Number of groups; divides both channel counts.
    pub groups: usize,
    /// Strides of the input.
    pub x_strides: ImageStrides,
    /// Strides of the output.
    pub y_strides: ImageStrides,
    /// Input zero point (the value of the padding).
    pub x_zero_point: i32,
    /// Weight zero point (0 for TFLite and symmetric ONNX weights; the general path otherwise).
    pub w_zero_point: i32,
    /// Output zero point.
    pub y_zero_point: i32,
    /// Lower output clamp (fused activation; `T::MIN` for none).
    pub act_min: i32,
    /// Upper output clamp (fused activation; `T::MAX` for none).
    pub act_max: i32,
}

impl Conv2d {
    /// Input channels per group.
    pub const fn group_in_channels(&self) -> usize {
        self.in_channels / self.groups
    }

    /// Weights per output channel: `kernel_h * kernel_w * in_channels / groups`.
    pub const fn taps(&self) -> usize {
        self.kernel_h * self.kernel_w * self.group_in_channels()
    }

    /// A pointwise convolution whose window never leaves the input: [`conv2d`] reads each window
    /// in place (a contiguous run of channels in NHWC, a strided one in NCHW), without scratch.
    pub(crate) const fn reads_input_in_place(&self) -> bool {
        self.kernel_h == 1
            && self.kernel_w == 1
            && self.pad_top == 0
            && self.pad_left == 0
            && (self.out_h == 0 || (self.out_h - 1) * self.stride_h < self.in_h)
            && (self.out_w == 0 || (self.out_w - 1) * self.stride_w < self.in_w)
    }

    /// Input row of kernel row `ky` for output row `oy`, if inside the input.
    #[inline(always)]
    pub(crate) fn input_row(&self, oy: usize, ky: usize) -> Option<usize> {
        (oy * self.stride_h + ky * self.dilation_h).checked_sub(self.pad_top).filter(|&iy| iy < self.in_h)
    }

    /// Input column of kernel column `kx` for output column `ox`, if inside the input.
    #[inline(always)]
    pub(crate) fn input_col(&self, ox: usize, kx: usize) -> Option<usize> {
        (ox * self.stride_w + kx * self.dilation_w).checked_sub(self.pad_left).filter(|&ix| ix < self.in_w)
    }
}

impl Conv2d {
    /// Channels contiguous (NHWC, TFLite's layout): every `(ky, kx)` run of a window is read in
    /// place, the padding's share added as `x_zero_point` times its weights, without scratch.
    const fn reads_runs_in_place(&self) -> bool {
        self.x_strides.c == 1 && !self.reads_input_in_place()
    }
}

/// Scratch elements (of the activation type) [`conv2d`] needs: one window
/// ([`Conv2d::taps`]), or 0 for a pointwise convolution whose windows stay inside the input (any
/// layout: the planner's NCHW tensors need no more arena than TFLite's NHWC ones) and for any
/// convolution over contiguous channels (NHWC: no more arena than TFLite Micro's).
pub const fn conv2d_scratch_len(p: &Conv2d) -> usize {
    if p.reads_input_in_place() || p.reads_runs_in_place() {
        0
    } else {
        p.taps()
    }
}

impl Conv2d {
    /// The runs of channels of the window of output `(b, oy, ox)`, group `g`, in the weights'
    /// `(ky, kx)` order: the index of each run's first input element, or `None` for a position
    /// outside the input (the run's channels are `x_strides.c` apart).
    #[inline(always)]
    pub(crate) fn window_runs(
        &self,
        (b, g, oy, ox): (usize, usize, usize, usize),
    ) -> impl Iterator<Item = Option<usize>> + '_ {
        let xs = self.x_strides;
        let origin = b * xs.n + g * self.group_in_channels() * xs.c;
        (0..self.kernel_h).flat_map(move |ky| {
            let iy = self.input_row(oy, ky);
            (0..self.kernel_w).map(move |kx| match (iy, self.input_col(ox, kx)) {
                (Some(iy), Some(ix)) => Some(origin + iy * xs.h + ix * xs.w),
                _ => None,
            })
        })
    }
}

/// `sum_k (w[k] - w_zero_point) * window[k]` over the window of output `(b, oy, ox)`, group `g`,
/// read in place run by run (each `(ky, kx)` run of channels contiguous in NHWC, strided in NCHW),
/// positions outside the input counting as `x_zero_point`.
#[inline(always)]
pub(crate) fn window_dot<T: QuantElem>(p: &Conv2d, x: &[T], w_oc: &[i8], at: (usize, usize, usize, usize)) -> i32 {
    let cpg = p.group_in_channels();
    let runs = w_oc.chunks_exact(cpg).zip(p.window_runs(at));
    runs.fold(0i32, |acc, (w_run, base)| {
        acc.wrapping_add(match (base, p.x_strides.c) {
            (Some(base), 1) => dot(w_run, &x[base..base + cpg], p.w_zero_point),
            (Some(base), c) => dot_strided(w_run, &x[base..base + (cpg - 1) * c + 1], c, p.w_zero_point),
            (None, _) => {
                w_run.iter().fold(0i32, |s, &wv| s.wrapping_add((wv as i32 - p.w_zero_point) * p.x_zero_point))
            }
        })
    })
}

/// `sum_k (w[k] - w_zero_point) * x[k]`, wrapping like TFLite's `int32_t` accumulator.
#[inline(always)]
pub(crate) fn dot<T: QuantElem>(w: &[i8], x: &[T], w_zero_point: i32) -> i32 {
    dot_iter(w, x.iter(), w_zero_point)
}

/// [`dot`] over `x[0], x[stride], x[2 * stride], ...` (a pointwise window across NCHW channels).
#[inline(always)]
fn dot_strided<T: QuantElem>(w: &[i8], x: &[T], stride: usize, w_zero_point: i32) -> i32 {
    dot_iter(w, x.iter().step_by(stride), w_zero_point)
}

#[inline(always)]
fn dot_iter<'a, T: QuantElem + 'a>(w: &[i8], x: impl Iterator<Item = &'a T>, w_zero_point: i32) -> i32 {
    let products = w.iter().zip(x);
    if w_zero_point == 0 {
        products.fold(0i32, |acc, (&a, &b)| acc.wrapping_add(a as i32 * b.to_i32()))
    } else {
        products.fold(0i32, |acc, (&a, &b)| acc.wrapping_add((a as i32 - w_zero_point) * b.to_i32()))
    }
}

/// Copies the window of output `(b, oy, ox)`, group `g`, into `patch` in the weights' `(ky, kx,
/// c)` order, with the input zero point where the window leaves the input.
fn gather_window<T: QuantElem>(p: &Conv2d, x: &[T], (b, g, oy, ox): (usize, usize, usize, usize), patch: &mut [T]) {
    let cpg = p.group_in_channels();
    let xs = p.x_strides;
    let pad = T::saturate(p.x_zero_point);
    let mut runs = patch.chunks_exact_mut(cpg);
    for ky in 0..p.kernel_h {
        let iy = p.input_row(oy, ky);
        for kx in 0..p.kernel_w {
            let run = runs.next().expect("patch holds kernel_h * kernel_w runs");
            match (iy, p.input_col(ox, kx)) {
                (Some(iy), Some(ix)) => {
                    let base = b * xs.n + g * cpg * xs.c + iy * xs.h + ix * xs.w;
                    if xs.c == 1 {
                        run.copy_from_slice(&x[base..base + cpg]);
                    } else {
                        for (c, v) in run.iter_mut().enumerate() {
                            *v = x[base + c * xs.c];
                        }
                    }
                }
                _ => run.fill(pad),
            }
        }
    }
}

/// Quantized convolution (see [`Conv2d`] for the geometry and layouts).
///
/// For output channel `o` of group `g` at `(b, oy, ox)`, `acc = bias[o] + sum_k (w[o][k] -
/// w_zero_point) * patch[k]` over the kernel window `k = (ky, kx, c)`, where `patch` holds the input
/// values, and the input zero point where the window leaves the input (TFLite's padding); `bias`
/// is the folded bias of [`fold_bias`](super::fold_bias) (`bias - x_zero_point * sum(w -
/// w_zero_point)`), so `acc` is TFLite's `bias + sum (w - w_zero_point) * (x - x_zero_point)` in
/// `i32` arithmetic: integer sums, equal in any order and any layout. The output is TFLite's:
/// requantized per channel, plus the output zero point, clamped to `[act_min, act_max]`.
///
/// `w` is OHWI (TFLite's layout; [`pack_conv_weights`](super::pack_conv_weights) converts
/// ONNX's OIHW): weight `(o, ky, kx, c)` at `((o * kernel_h + ky) * kernel_w + kx) * cpg + c`
/// with `cpg = in_channels / groups`. `q` has `out_channels` folded biases and 1 or
/// `out_channels` multipliers. `scratch` has [`conv2d_scratch_len`] elements, or none: each window
/// is then read in place run by run (the same sums; more reads for NCHW input). On Arm
/// cores with the DSP extension the layers its kernels take run there (same bits; the scratch is
/// then unused).
// On Arm DSP targets each call site gets its own copy with the layer's shape as constants.
#[cfg_attr(arm_dsp, inline(always))]
pub fn conv2d<T: QuantElem>(p: &Conv2d, x: &[T], w: &[i8], q: &ChannelQuant, y: &mut [T], scratch: &mut [T]) {
    q.check(p.out_channels);
    if crate::arch::quant_conv2d(p, x, w, q, y) {
        return;
    }
    convolve(p, x, w, q.bias, y, scratch, |oc, acc| q.output(oc, acc, p.y_zero_point, p.act_min, p.act_max));
}

/// [`conv2d`] without the output stage (ONNX ConvInteger): `y` receives the `i32` accumulator
/// `bias[o] + sum_k (w[o][k] - w_zero_point) * patch[k]` itself, with `bias` the folded bias
/// (`out_channels` values); `y_zero_point`, `act_min` and `act_max` are not read.
pub fn conv2d_acc<T: QuantElem>(p: &Conv2d, x: &[T], w: &[i8], bias: &[i32], y: &mut [i32], scratch: &mut [T]) {
    assert_eq!(bias.len(), p.out_channels, "one folded bias per output channel");
    convolve(p, x, w, bias, y, scratch, |_, acc| acc);
}

/// The loops of [`conv2d`] and [`conv2d_acc`]: `y[..] = out(o, bias[o] + sum)`.
#[inline(always)]
fn convolve<T: QuantElem, Y>(
    p: &Conv2d,
    x: &[T],
    w: &[i8],
    bias: &[i32],
    y: &mut [Y],
    scratch: &mut [T],
    out: impl Fn(usize, i32) -> Y,
) {
    let taps = p.taps();
    let ocg = p.out_channels / p.groups;
    assert_eq!(w.len(), p.out_channels * taps, "conv2d: weight length");
    let in_place = p.reads_input_in_place();
    // Without a window's worth of scratch (the planner gives none where it would raise the arena's
    // peak), windows are read in place run by run, as over NHWC input.
    let runs_in_place = p.reads_runs_in_place() || (!in_place && scratch.len() < taps);
    let (xs, ys) = (p.x_strides, p.y_strides);
    for b in 0..p.batch {
        for oy in 0..p.out_h {
            for ox in 0..p.out_w {
                for g in 0..p.groups {
                    let y_base = b * ys.n + oy * ys.h + ox * ys.w;
                    if runs_in_place {
                        for oc in g * ocg..(g + 1) * ocg {
                            let sum = window_dot(p, x, &w[oc * taps..][..taps], (b, g, oy, ox));
                            y[y_base + oc * ys.c] = out(oc, bias[oc].wrapping_add(sum));
                        }
                        continue;
                    }
                    // The window: in place (strided across NCHW channels), or gathered into scratch.
                    let base = b * xs.n + g * taps * xs.c + oy * p.stride_h * xs.h + ox * p.stride_w * xs.w;
                    let (patch, stride): (&[T], usize) = if in_place {
                        (&x[base..base + (taps - 1) * xs.c + 1], xs.c)
                    } else {
                        let patch = &mut scratch[..taps];
                        gather_window(p, x, (b, g, oy, ox), patch);
                        (patch, 1)
                    };
                    for oc in g * ocg..(g + 1) * ocg {
                        let w_oc = &w[oc * taps..][..taps];
                        let sum = match stride {
                            1 => dot(w_oc, patch, p.w_zero_point),
                            _ => dot_strided(w_oc, patch, stride, p.w_zero_point),
                        };
                        y[y_base + oc * ys.c] = out(oc, bias[oc].wrapping_add(sum));
                    }
                }
            }
        }
    }
}
