//! Channel-blocked activations: a tensor of shape `[batch, channels, h, w]` stored as
//! `[batch][channels / 16][h * w][16]`, the 16 channels of a block at one position side by side
//! ([`CHANNEL_BLOCK`]; channel `c` at position `q` of image `n` is element
//! [`blocked_index`]`(channels, h * w, n, c, q)`). The same bytes as NCHW, in another order.
//!
//! Between two convolutions this is the layout their vectors want: a pointwise convolution's
//! vectors of output channels are stored as they are (in NCHW they are transposed into rows of
//! positions, or, with positions as the vector lanes, the last vector of a row is masked), and a
//! depthwise convolution's vectors are 16 channels at one position, one whole-vector load per
//! tap and output wherever it lies in the plane (in NCHW a tap's positions are shifted loads
//! masked at the plane's edges). onnxruntime runs its convolutions on this layout (its
//! `NchwcTransformer`, 16 channels a block on AVX-512). One layer each against `conv2d` on
//! NCHW, in one process (p10, AVX-512, Zen 4): KWS's pointwise layer 0.84-0.86 of its time, its
//! depthwise layer 0.75-0.85. The compiler chooses it for chains of such convolutions on
//! x86-64 targets (`sramfit-planner-core`'s `optimize::blocked`).
//!
//! [`conv2d_blocked`] computes the convolutions [`conv2d_blocked_applies`] to (pointwise; dense:
//! one group, any kernel, stride 1 or 2; and 3x3 depthwise at stride 1 or 2) from a blocked
//! input into a blocked output, with the bits of [`crate::conv2d`] on the NCHW tensors on the
//! same kernel path: on the x86-64 FMA paths the same chains of fused multiply-adds over
//! `(input channel, kernel row, kernel column)` ascending (pointwise and dense, the taps outside
//! the input skipped, which adds what their `w * 0` would), or of rounded products added in tap
//! order from the bias (depthwise, the taps outside the input adding `w * 0`); on the portable
//! path the portable convolution's sums. The dense kernel against `conv2d` on NCHW, one layer
//! each in one process (p50, AVX-512, Zen 4): ResNet-8's 3x3 layers 0.75-0.89 of its time, its
//! first layer 0.79-0.81, MNIST's first and second layers 0.72-0.81 and 0.92-0.94; with the
//! weights in panels ([`ConvWeights::Panels`]), ResNet-18's 0.78-0.88 down to 8x8 maps, 0.49-0.82
//! on its 4x4 and 2x2 ones, 0.58-0.71 with the weights coming from memory, as they do from one
//! inference to the next.
//! [`crate::max_pool2d_blocked`] pools blocked tensors; [`to_blocked`] and [`from_blocked`]
//! convert.

use crate::arch::x86_64_facts::DEPTHWISE_BLOCKED_STAGE;
use crate::arch::Kernels;
use crate::conv::conv_is_pointwise;
use crate::conv_shape::{Conv2d, ConvInput, ConvWeights};

/// Channels per block of the channel-blocked layout.
pub const CHANNEL_BLOCK: usize = 16;

/// Where channel `c` at position `q` of image `n` lies in a channel-blocked tensor of `channels`
/// channels (a multiple of [`CHANNEL_BLOCK`]) and `plane` positions per channel.
#[inline(always)]
pub const fn blocked_index(channels: usize, plane: usize, n: usize, c: usize, q: usize) -> usize {
    (n * channels + c - c % CHANNEL_BLOCK) * plane + q * CHANNEL_BLOCK + c % CHANNEL_BLOCK
}

/// The NCHW tensor `x` (`batch` images of `channels` planes of `plane` values; `channels` a
/// multiple of [`CHANNEL_BLOCK`]) into the channel-blocked `y`. In either layout a block of 16
/// channels is `16 * plane` consecutive values, so this transposes each block from 16 rows of
/// `plane` values into `plane` rows of 16 (on the x86-64 FMA paths through vector transposes).
pub fn to_blocked(batch: usize, channels: usize, plane: usize, x: &[f32], y: &mut [f32]) {
    reorder(Reorder::ToBlocked, batch, channels, plane, x, y)
}

/// The channel-blocked tensor `x` into the NCHW `y` (the inverse of [`to_blocked`]).
pub fn from_blocked(batch: usize, channels: usize, plane: usize, x: &[f32], y: &mut [f32]) {
    reorder(Reorder::FromBlocked, batch, channels, plane, x, y)
}

/// Which way [`reorder`] converts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reorder {
    /// NCHW into channel-blocked ([`to_blocked`]).
    ToBlocked,
    /// Channel-blocked into NCHW ([`from_blocked`]).
    FromBlocked,
}

/// [`to_blocked`] or [`from_blocked`]: each block of `16 * plane` values transposed, on this
/// CPU's vectors where it has them.
fn reorder(way: Reorder, batch: usize, channels: usize, plane: usize, x: &[f32], y: &mut [f32]) {
    assert!(channels.is_multiple_of(CHANNEL_BLOCK), "{channels} channels are not whole blocks");
    let len = batch * channels * plane;
    let (x, y) = (&x[..len], &mut y[..len]);
    if len == 0 || Kernels::current().reorder_blocked(way, plane, x, y) {
        return;
    }
    let block = CHANNEL_BLOCK * plane;
    for (xb, yb) in x.chunks_exact(block).zip(y.chunks_exact_mut(block)) {
        reorder_block(way, plane, xb, yb);
    }
}

/// One block of [`reorder`], value by value (the portable path, and the x86-64 kernels' planes
/// of fewer positions than a vector has lanes).
pub(crate) fn reorder_block(way: Reorder, plane: usize, x: &[f32], y: &mut [f32]) {
    for c in 0..CHANNEL_BLOCK {
        for q in 0..plane {
            let (nchw, blocked) = (c * plane + q, q * CHANNEL_BLOCK + c);
            match way {
                Reorder::ToBlocked => y[blocked] = x[nchw],
                Reorder::FromBlocked => y[nchw] = x[blocked],
            }
        }
    }
}

/// Whether [`conv2d_blocked`] computes convolution `p`: output channels whole blocks, an
/// NCHW-shaped input, no dilation, and either
/// - a pointwise convolution (1x1, stride 1, no padding, one group, weights stored k-major:
///   [`ConvWeights::KMajor`]) of whole blocks of input channels;
/// - a dense one (one group, any kernel, stride 1 or 2 in each direction, weights k-major or in
///   panels: [`ConvWeights::Panels`]) of whole blocks of input channels or of fewer than 16 (a
///   first layer: [`reads_nchw`]) at more than 16 output positions (where [`crate::conv2d`] sums
///   it as a GEMM on the x86-64 FMA paths);
/// - or a 3x3 depthwise one (weights not in panels; one input and one output channel per group,
///   stride 1 or 2 in both directions, padding at most 2 before each axis, output rows whose
///   zero-padded input rows, 16 channels wide, fit the stage three at a time: at most 170
///   columns, padding included).
pub fn conv2d_blocked_applies(p: &Conv2d) -> bool {
    let whole = |channels: usize| channels.is_multiple_of(CHANNEL_BLOCK);
    let plain = p.input == ConvInput::Nchw
        && p.in_channels > 0
        && p.dilation_h == 1
        && p.dilation_w == 1
        && whole(p.out_channels);
    let stage_rows = p.out_w == 0 || p.rows_read(1) * p.cols_read() * CHANNEL_BLOCK <= DEPTHWISE_BLOCKED_STAGE;
    let first = reads_nchw(p) && p.out_h * p.out_w > 16;
    let dense = p.groups == 1
        && matches!(p.weights, ConvWeights::KMajor | ConvWeights::Panels)
        && (1..=2).contains(&p.stride_h)
        && (1..=2).contains(&p.stride_w)
        && (whole(p.in_channels) || first);
    let depthwise = p.kernel_h == 3
        && p.kernel_w == 3
        && p.groups == p.in_channels
        && p.out_channels == p.in_channels
        && p.stride_h == p.stride_w
        && (p.stride_h == 1 || p.stride_h == 2)
        && p.pad_top <= 2
        && p.pad_left <= 2
        && p.weights != ConvWeights::Panels
        && stage_rows;
    plain && ((is_pointwise(p) && whole(p.in_channels)) || dense || depthwise)
}

/// Whether [`conv2d_blocked`] computes `p` (k-major weights) on its dense kernel, which reads
/// weights in panels as well ([`ConvWeights::Panels`]), and faster: one group, not pointwise.
/// The compiler packs such a convolution's weights in panels.
pub fn takes_panels(p: &Conv2d) -> bool {
    conv2d_blocked_applies(p) && p.groups == 1 && !is_pointwise(p)
}

/// Whether [`conv2d_blocked`] reads the input of `p` as NCHW: fewer than 16 input channels (not a
/// whole block, so not a blocked tensor; a network's first layer), its output blocked.
pub fn reads_nchw(p: &Conv2d) -> bool {
    p.in_channels < CHANNEL_BLOCK
}

/// Whether `p` is a pointwise convolution of one group with k-major weights between whole blocks
/// of channels: 1x1, stride 1, no padding (its plane is one run of positions, in and out). (A
/// pointwise first layer, which [`reads_nchw`], is a dense one.)
pub(crate) fn is_pointwise(p: &Conv2d) -> bool {
    conv_is_pointwise(p) && p.groups == 1 && p.weights == ConvWeights::KMajor && !reads_nchw(p)
}

/// Convolution `p` ([`conv2d_blocked_applies`]) of the channel-blocked `x` (`[batch,
/// in_channels, in_h, in_w]`; NCHW where [`reads_nchw`]) into the channel-blocked `y`
/// (`[batch, out_channels, out_h, out_w]`); `w` and `bias` as [`crate::conv2d`] takes them. No
/// scratch.
pub fn conv2d_blocked(p: &Conv2d, x: &[f32], w: &[f32], bias: Option<&[f32]>, y: &mut [f32]) {
    assert!(conv2d_blocked_applies(p), "not a convolution conv2d_blocked computes");
    let x = &x[..p.batch * p.in_channels * p.in_h * p.in_w];
    let y = &mut y[..p.batch * p.out_channels * p.out_h * p.out_w];
    if p.batch == 0 || p.out_h * p.out_w == 0 || Kernels::current().conv2d_blocked(p, x, w, bias, y) {
        return;
    }
    match p.groups {
        1 => dense(p, x, w, bias, y),
        _ => depthwise(p, x, w, bias, y),
    }
}

/// The portable convolution of one group (pointwise or dense): each output the sum, in
/// ascending `(input channel, kernel row, kernel column)` order from 0.0, of the rounded products
/// of the taps inside the input, then the bias and the activation (the portable im2col GEMM's
/// sums, whose padding taps add `w * 0`, and its epilogue); for one input channel, from the bias,
/// then the activation (the portable direct convolution's sums, `conv2d`'s path for one input
/// channel per group).
fn dense(p: &Conv2d, x: &[f32], w: &[f32], bias: Option<&[f32]>, y: &mut [f32]) {
    let (k, m, taps) = (p.in_channels, p.out_channels, p.kernel_h * p.kernel_w);
    let (in_plane, out_plane) = (p.in_h * p.in_w, p.out_h * p.out_w);
    let direct = k == 1;
    let input = |n: usize, ic: usize, at: usize| match reads_nchw(p) {
        true => x[(n * k + ic) * in_plane + at],
        false => x[blocked_index(k, in_plane, n, ic, at)],
    };
    for n in 0..p.batch {
        for oc in 0..m {
            let (w0, depth) = p.weights.column(m, k * taps, oc);
            for q in 0..out_plane {
                let (oh, ow) = (q / p.out_w, q % p.out_w);
                let mut v = match (direct, bias) {
                    (true, Some(b)) => b[oc],
                    _ => 0.0f32,
                };
                for ic in 0..k {
                    for t in 0..taps {
                        let ih = (oh * p.stride_h + t / p.kernel_w) as isize - p.pad_top as isize;
                        let iw = (ow * p.stride_w + t % p.kernel_w) as isize - p.pad_left as isize;
                        if (0..p.in_h as isize).contains(&ih) && (0..p.in_w as isize).contains(&iw) {
                            v += w[w0 + (ic * taps + t) * depth] * input(n, ic, ih as usize * p.in_w + iw as usize);
                        }
                    }
                }
                let bias = if direct { None } else { bias };
                y[blocked_index(m, out_plane, n, oc, q)] = finish(p, bias, oc, v);
            }
        }
    }
}

/// The portable depthwise convolution: each output the bias plus the rounded products of the taps
/// inside the input, in row-major tap order, then the activation (the portable direct
/// convolution's sums).
fn depthwise(p: &Conv2d, x: &[f32], w: &[f32], bias: Option<&[f32]>, y: &mut [f32]) {
    let c = p.out_channels;
    let (in_plane, out_plane) = (p.in_h * p.in_w, p.out_h * p.out_w);
    for n in 0..p.batch {
        for ch in 0..c {
            let (w0, _, ws) = p.weights.gemm_operand(ch, 1, 9);
            for q in 0..out_plane {
                let (oh, ow) = (q / p.out_w, q % p.out_w);
                let mut v = bias.map_or(0.0, |b| b[ch]);
                for t in 0..9 {
                    let ih = (oh * p.stride_h + t / 3) as isize - p.pad_top as isize;
                    let iw = (ow * p.stride_w + t % 3) as isize - p.pad_left as isize;
                    if (0..p.in_h as isize).contains(&ih) && (0..p.in_w as isize).contains(&iw) {
                        let at = ih as usize * p.in_w + iw as usize;
                        v += w[w0 + t * ws] * x[blocked_index(c, in_plane, n, ch, at)];
                    }
                }
                let mut out = [v];
                p.act.apply_in_place(&mut out);
                y[blocked_index(c, out_plane, n, ch, q)] = out[0];
            }
        }
    }
}

/// A dense output's epilogue, as the portable GEMM's `finish` applies it: the bias, then
/// the activation.
fn finish(p: &Conv2d, bias: Option<&[f32]>, oc: usize, v: f32) -> f32 {
    let mut out = [bias.map_or(v, |b| v + b[oc])];
    p.act.apply_in_place(&mut out);
    out[0]
}
