//! The parameters of a 2-D convolution ([`Conv2d`]) and the layouts of its weights
//! ([`ConvWeights`]): read by the portable convolution and by the architecture kernels alike.

use crate::epilogue::Bias;
use crate::Activation;

/// Parameters of [`conv2d`](crate::conv2d): ONNX Conv on NCHW data (or an NHWC input, [`ConvInput`]), with the weights in ONNX's OIHW order
/// (`[out_channels, in_channels / groups, kernel_h, kernel_w]`) or packed at build time for the
/// GEMM kernels ([`ConvWeights`]).
///
/// ```text
/// y[n, oc, oh, ow] = act(bias[oc] + sum_{ic, kh, kw} x[n, g * icg + ic, ih, iw] * w[oc, ic, kh, kw])
/// ```
/// with `g = oc / (out_channels / groups)`,
/// `icg = in_channels / groups`, `ih = oh * stride_h + kh * dilation_h - pad_top`,
/// `iw = ow * stride_w + kw * dilation_w - pad_left`; input positions outside
/// `[0, in_h) x [0, in_w)` contribute zero (so bottom/right padding is implied
/// by `out_h`/`out_w`). 1-D convolution: `in_h = out_h = kernel_h = 1`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Conv2d {
    /// N.
    pub batch: usize,
    /// C of the input.
    pub in_channels: usize,
    /// Input height.
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
    /// Zero rows added above the input.
    pub pad_top: usize,
    /// Zero columns added left of the input.
    pub pad_left: usize,
    /// Number of groups; divides both channel counts (depthwise:
    /// `groups == in_channels`).
    pub groups: usize,
    /// Fused activation applied after the bias.
    pub act: Activation,
    /// Layout of the weights.
    pub weights: ConvWeights,
    /// Layout of the input.
    pub input: ConvInput,
}

impl Conv2d {
    /// The 1x1 convolution (stride 1, no padding, one group, no activation, OIHW weights) of one
    /// NCHW image of `in_channels` channels of `positions` values each into `out_channels`: a
    /// matrix product of the weights `[out_channels, in_channels]` by the feature map.
    pub const fn pointwise(in_channels: usize, out_channels: usize, positions: usize) -> Conv2d {
        Conv2d {
            batch: 1,
            in_channels,
            in_h: 1,
            in_w: positions,
            out_channels,
            out_h: 1,
            out_w: positions,
            kernel_h: 1,
            kernel_w: 1,
            stride_h: 1,
            stride_w: 1,
            dilation_h: 1,
            dilation_w: 1,
            pad_top: 0,
            pad_left: 0,
            groups: 1,
            act: Activation::None,
            weights: ConvWeights::Oihw,
            input: ConvInput::Nchw,
        }
    }
}

/// Layout of a convolution's input. The output is NCHW either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvInput {
    /// `[batch, in_channels, in_h, in_w]`, ONNX's.
    Nchw,
    /// `[batch, in_h, in_w, in_channels]`, read in place: the channels-last input of an NHWC graph
    /// (a Keras model exported by tf2onnx), whose transpose to NCHW is folded into its first
    /// convolution. Runs through im2col tiles gathered from it, with the bits of the NCHW im2col
    /// path (`conv_nhwc.rs`).
    Nhwc,
}

/// Layout of a convolution's weights. Both hold the same values; which one a model uses changes
/// no result bit (every kernel path sums the same products in the same order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvWeights {
    /// ONNX's `[out_channels, in_channels / groups, kernel_h, kernel_w]`: weight `(oc, k)` of
    /// group `g` at `(g * ocg + oc) * kk + k`, where `ocg = out_channels / groups`,
    /// `kk = in_channels / groups * kernel_h * kernel_w` and `k` runs over `(ic, kh, kw)`.
    Oihw,
    /// Packed at build time for the GEMM kernels: per group, the transpose of that group's OIHW
    /// rows, weight `(oc, k)` of group `g` at `(g * kk + k) * ocg + oc`. The output channels of one
    /// input value are contiguous, so the kernels load whole vectors of them in place: no packing
    /// and no packing buffer at run time.
    KMajor,
    /// Packed at build time for the dense convolutions of [`crate::conv2d_blocked`] (one group;
    /// no other kernel reads it): the k-major weights cut into panels of [`PANEL`] output
    /// channels (the last one narrower when the channels are not a multiple), each panel's
    /// depths one after another. Weight `(oc, k)` lies at `start * kk + k * width + oc - start`,
    /// where `start = oc - oc % PANEL` is its panel's first channel and `width = min(PANEL,
    /// out_channels - start)` its panel's. A tile of up to [`PANEL`] output channels reads its
    /// weights as one sequential stream, where k-major ones lie a row of all output channels
    /// apart: with the weights coming from memory (ResNet-18's 2.4 MB and 9.4 MB layers, which
    /// the cache does not keep from one inference to the next), one layer in one process
    /// (AVX-512, Zen 4) took 226 us in panels against 801 us k-major at 256 channels on 4x4,
    /// 575 against 2024 us at 512 channels on 2x2.
    Panels,
}

/// Output channels per panel of [`ConvWeights::Panels`]: two vectors of 16 (a tile of the dense
/// blocked kernel on AVX-512), four of 8.
pub const PANEL: usize = 32;

impl ConvWeights {
    /// Where the weight of output channel `oc` at depth 0 lies in one group's weights of `ocg`
    /// output channels and `kk` depths, and how far apart its depths lie. For
    /// [`ConvWeights::Panels`] the channels of one panel at one depth are contiguous.
    pub const fn column(self, ocg: usize, kk: usize, oc: usize) -> (usize, usize) {
        match self {
            ConvWeights::Oihw => (oc * kk, 1),
            ConvWeights::KMajor => (oc, ocg),
            ConvWeights::Panels => {
                let start = oc - oc % PANEL;
                let width = if ocg - start < PANEL { ocg - start } else { PANEL };
                (start * kk + oc - start, width)
            }
        }
    }

    /// Where the weights of group `g` start, and their strides (between output channels, between
    /// `k` values), as the GEMM's A operand (not for [`ConvWeights::Panels`], which no GEMM
    /// reads).
    pub(crate) const fn gemm_operand(self, g: usize, ocg: usize, kk: usize) -> (usize, usize, usize) {
        match self {
            ConvWeights::Oihw => (g * ocg * kk, kk, 1),
            ConvWeights::KMajor => (g * ocg * kk, 1, ocg),
            ConvWeights::Panels => panic!("weights in panels are read only by conv2d_blocked's dense convolutions"),
        }
    }
}

/// The operands of a convolution (or of one of its groups) as the architecture kernels take them:
/// input `x`, weights `w` (to the end of the weights: the FMA kernels may read a whole vector past
/// a group's last output channel), bias per output channel, output `y`; `icg` input and `ocg`
/// output channels per group. (Only architecture kernels read them: none on targets other than
/// x86-64.)
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) struct ConvOperands<'a> {
    pub icg: usize,
    pub ocg: usize,
    pub x: &'a [f32],
    pub w: &'a [f32],
    pub bias: Bias<'a>,
    pub y: &'a mut [f32],
}

/// A depthwise convolution's input and output in one region: the input from element `x_at`, the
/// output from `y_at` ([`crate::conv2d_overlapped`]'s layout). Only the x86-64 kernels read it
/// (elsewhere the region is run in chunks of planes), so other targets' builds do not warn.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) struct SharedRegion<'a> {
    pub region: &'a mut [f32],
    pub x_at: usize,
    pub y_at: usize,
}

/// The extents of a band of output rows, for the x86-64 kernels that stage their input rows and
/// for [`crate::conv2d_blocked_applies`] (on every target).
impl Conv2d {
    /// Input rows (padding included) that `rows >= 1` consecutive output rows read.
    pub(crate) const fn rows_read(&self, rows: usize) -> usize {
        (rows - 1) * self.stride_h + (self.kernel_h - 1) * self.dilation_h + 1
    }

    /// Input columns (padding included) that a whole output row (`out_w >= 1`) reads.
    pub(crate) const fn cols_read(&self) -> usize {
        (self.out_w - 1) * self.stride_w + (self.kernel_w - 1) * self.dilation_w + 1
    }
}

/// How many output rows a staged band holds, for the x86-64 kernels.
#[cfg(target_arch = "x86_64")]
impl Conv2d {
    /// The most consecutive output rows whose input rows fit in `input_rows` rows (0 when not
    /// even one output row's do).
    pub(crate) const fn rows_fitting(&self, input_rows: usize) -> usize {
        let span_h = (self.kernel_h - 1) * self.dilation_h;
        match input_rows > span_h {
            true => (input_rows - span_h - 1) / self.stride_h + 1,
            false => 0,
        }
    }
}
