//! Overlapping input and output (vMCU-style): a kernel that reads its input and writes its output
//! in a known order may write its output over the part of its input it has already consumed, so
//! the planner may place the two in one buffer with the output starting before the input.
//!
//! The contract is stated per kernel family by a fact the planner reads ([`conv2d_plane_order`])
//! and is what every kernel path of the family really does (checked by reading each one):
//!
//! - **f32 depthwise convolution, NCHW, channel multiplier 1, batch 1** ([`crate::conv2d`] with
//!   `groups == in_channels == out_channels`): output plane `q` (channel `q`, all rows and columns)
//!   reads input plane `q` only, and the planes are computed in ascending order, each written only
//!   after the previous one. The portable direct convolution (`conv.rs`, `conv_direct`: one output
//!   channel at a time, row by row, reading only that channel's input plane) and the x86-64 3x3
//!   depthwise kernels on the AVX2 and AVX-512 paths (`arch/x86_64/depthwise.rs`, `depthwise_3x3`:
//!   one output plane at a time, its input plane copied into a padded stack plane first, or read
//!   row by row) both do so; Arm builds run the portable f32 kernels. So when output plane `q` is
//!   written, the input planes `q..` are still to be read, and the planes `..q` may be destroyed.
//!
//! - **int8 / uint8 depthwise convolution, NCHW planes, channel multiplier 1, batch 1**
//!   ([`crate::quant::depthwise_conv2d`], [`quant_depthwise_plane_order`]): the same statement.
//!   Every path computes output plane `q` from input plane `q` only (its integer sums do not
//!   depend on which channels are computed together); the x86-64 kernels stage a band of rows
//!   of one plane, or of 16 planes, before writing them, which the chunks below make harmless.
//!
//! - **int8 / uint8 convolution of NHWC images, batch 1, any kind** ([`crate::quant::conv2d`],
//!   [`crate::quant::depthwise_conv2d`], [`quant_conv2d_row_order`]): a plane is a row of pixels
//!   (every column and channel, one run in NHWC), and output row `q` reads only the input rows its
//!   windows cover. That holds for any convolution whatever the order a kernel computes in; the
//!   chunks below run each chunk of output rows as its own call, so the order inside a call does
//!   not matter.
//!
//! - **pooling of NCHW planes, batch 1** ([`crate::max_pool2d`], [`crate::avg_pool2d`] and their
//!   int8 / uint8 / int16 twins in [`crate::quant`]; [`pool2d_plane_order`],
//!   [`quant_pool2d_plane_order`]): output plane `q` reads input plane `q` only. The chunks keep
//!   every window's geometry (padding, ceil mode, counted padding) and change only the number of
//!   channels. The quantized ones of NHWC images go row by row, like the convolutions.
//!
//! [`conv2d_overlapped`], [`quant_depthwise_conv2d_overlapped`],
//! [`quant_conv2d_rows_overlapped`], [`pool2d_overlapped`] and [`quant_pool2d_overlapped`] are
//! the entry points on one `&mut` region holding both
//! tensors (a `&[T]` of the input and a `&mut [T]` of the output over the same bytes would be
//! undefined behaviour): they run the layer in chunks of consecutive output planes whose
//! outputs lie wholly below the first input plane the chunk reads, splitting the
//! region there, so no two live slices ever overlap. Each chunk is an ordinary call of the
//! kernel on separate slices, so its bytes are the same as with separate buffers, whatever order
//! the kernel works in inside the chunk.

use crate::arch::Kernels;
use crate::conv::conv2d;
use crate::conv_shape::{Conv2d, ConvInput, SharedRegion};
use crate::epilogue::Bias;
use crate::pool::Pool2d;
use crate::quant::{self, ChannelQuant, ImageStrides, QuantElem, QuantInt};

/// Weights one call of [`quant_depthwise_conv2d_overlapped`] gathers on the stack: a chunk holds
/// at most this many (`taps` per plane), so a layer with more taps has no plane order.
pub const QUANT_OVERLAP_WEIGHTS: usize = 256;

/// A kernel's plane order, the fact [`conv2d_plane_order`] and its siblings state: the output is
/// `planes` consecutive planes, written in ascending order, each after every earlier one, and
/// output plane `q` reads only input planes [`first_read`](Self::first_read)`(q)` to
/// [`last_read`](Self::last_read)`(q)`, which never decrease with `q`. A plane is an NCHW
/// channel's image (a depthwise convolution: output plane `q` reads input plane `q`) or an NHWC
/// row of pixels, every column and channel (a convolution in row order: output row `q` reads the
/// input rows of its windows). Sizes in elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlaneOrder {
    /// Number of output planes.
    pub planes: usize,
    /// Elements of one input plane.
    pub in_plane: usize,
    /// Elements of one output plane.
    pub out_plane: usize,
    /// Number of input planes.
    pub in_planes: usize,
    /// Output plane `q` reads from input plane `q * stride - before` (at least 0) ...
    pub stride: usize,
    /// ... (see `stride`) ...
    pub before: usize,
    /// ... to `reach` planes further (at most the last).
    pub reach: usize,
    /// The planes are NHWC rows: a layer split into as many kernel calls as the chunks of rows
    /// its displacement allows (one row each at the smallest), each re-reading its windows'
    /// rows, which costs time on small cores (the planner's `overlap_rows` switch).
    pub rows: bool,
}

impl PlaneOrder {
    /// Output plane `q` reads input plane `q` only (a depthwise convolution of NCHW planes).
    pub const fn one_to_one(planes: usize, in_plane: usize, out_plane: usize) -> Self {
        PlaneOrder { planes, in_plane, out_plane, in_planes: planes, stride: 1, before: 0, reach: 0, rows: false }
    }

    /// The first input plane output plane `q` reads.
    pub const fn first_read(&self, q: usize) -> usize {
        (q * self.stride).saturating_sub(self.before)
    }

    /// The last input plane output plane `q` reads.
    pub const fn last_read(&self, q: usize) -> usize {
        let last = (q * self.stride + self.reach).saturating_sub(self.before);
        if last < self.in_planes {
            last
        } else {
            self.in_planes - 1
        }
    }
}

/// The plane order of [`crate::conv2d`] for convolution `p`, when it has one the module's contract
/// states: an NCHW depthwise convolution with channel multiplier 1 and batch 1 (what
/// [`conv2d_overlapped`] runs). `None` for every other convolution.
pub const fn conv2d_plane_order(p: &Conv2d) -> Option<PlaneOrder> {
    let depthwise = p.groups > 0 && p.in_channels == p.groups && p.out_channels == p.groups;
    let nonempty = p.in_h * p.in_w > 0 && p.out_h * p.out_w > 0;
    if !depthwise || !nonempty || p.batch != 1 || !matches!(p.input, ConvInput::Nchw) {
        return None;
    }
    Some(PlaneOrder::one_to_one(p.groups, p.in_h * p.in_w, p.out_h * p.out_w))
}

/// The plane order of [`quant::depthwise_conv2d`] for `p`, when it has one: a depthwise
/// convolution with channel multiplier 1 and batch 1 whose input and output are whole NCHW planes
/// (`ImageStrides::nchw`), of at most [`QUANT_OVERLAP_WEIGHTS`] taps (what
/// [`quant_depthwise_conv2d_overlapped`] runs). `None` for every other convolution.
pub fn quant_depthwise_plane_order(p: &quant::Conv2d) -> Option<PlaneOrder> {
    let c = p.groups;
    let depthwise = c > 0 && p.in_channels == c && p.out_channels == c;
    let nonempty = p.in_h * p.in_w > 0 && p.out_h * p.out_w > 0;
    let planes =
        p.x_strides == ImageStrides::nchw(c, p.in_h, p.in_w) && p.y_strides == ImageStrides::nchw(c, p.out_h, p.out_w);
    let taps = p.kernel_h * p.kernel_w;
    if !depthwise || !nonempty || p.batch != 1 || !planes || taps == 0 || taps > QUANT_OVERLAP_WEIGHTS {
        return None;
    }
    Some(PlaneOrder::one_to_one(c, p.in_h * p.in_w, p.out_h * p.out_w))
}

/// The row order of [`quant::conv2d`] and [`quant::depthwise_conv2d`] for `p`, when it has one: a
/// convolution of batch 1 whose input and output are contiguous NHWC images (the `.tflite`
/// files' layout), so that a row of pixels is one run of elements. Output row `q` reads the input
/// rows its windows cover, `q * stride_h - pad_top` to `(kernel_h - 1) * dilation_h` rows further
/// (within the image); what [`quant_conv2d_rows_overlapped`] runs. `None` for every other
/// convolution.
pub fn quant_conv2d_row_order(p: &quant::Conv2d) -> Option<PlaneOrder> {
    let rows = p.x_strides == ImageStrides::nhwc(p.in_channels, p.in_h, p.in_w)
        && p.y_strides == ImageStrides::nhwc(p.out_channels, p.out_h, p.out_w);
    let nonempty = p.in_h * p.in_w * p.in_channels > 0 && p.out_h * p.out_w * p.out_channels > 0;
    let windows = p.kernel_h > 0 && p.stride_h > 0 && p.dilation_h > 0;
    if !rows || !nonempty || !windows || p.batch != 1 {
        return None;
    }
    Some(PlaneOrder {
        planes: p.out_h,
        in_plane: p.in_w * p.in_channels,
        out_plane: p.out_w * p.out_channels,
        in_planes: p.in_h,
        stride: p.stride_h,
        before: p.pad_top,
        reach: (p.kernel_h - 1) * p.dilation_h,
        rows: true,
    })
}

/// Runs `f(q0, q1, r0, x, y)` over chunks `q0..q1` of at most `most` consecutive output planes,
/// from the first, each chunk's outputs wholly below the first input plane it reads,
/// `r0 = order.first_read(q0)`: `x` the input planes `r0..=order.last_read(q1 - 1)` and `y` the
/// chunk's output planes, disjoint slices of `region` (input at element `x_at`, output at `y_at`).
/// Later chunks read no plane before `r0` (the first plane read never decreases), so the chunk
/// writes only over input no chunk still reads.
///
/// Panics if a plane's output would reach the first input plane it reads or a later one (then it
/// would overwrite input still to be read).
fn for_each_chunk<E>(
    order: PlaneOrder,
    region: &mut [E],
    (x_at, y_at): (usize, usize),
    most: usize,
    mut f: impl FnMut(usize, usize, usize, &[E], &mut [E]),
) {
    let mut q0 = 0;
    while q0 < order.planes {
        // The chunk q0..q1: the planes whose outputs end at or before input plane r0's start.
        let r0 = order.first_read(q0);
        let x0 = x_at + r0 * order.in_plane;
        let mut q1 = q0;
        while q1 < order.planes && q1 - q0 < most && y_at + (q1 + 1) * order.out_plane <= x0 {
            q1 += 1;
        }
        assert!(q1 > q0, "overlapped kernel: output plane {q0} would overwrite input still to be read");
        let x1 = x_at + (order.last_read(q1 - 1) + 1) * order.in_plane;
        let (below, from_x0) = region.split_at_mut(x0);
        let y = &mut below[y_at + q0 * order.out_plane..y_at + q1 * order.out_plane];
        f(q0, q1, r0, &from_x0[..x1 - x0], y);
        q0 = q1;
    }
}

/// [`crate::conv2d`] of a depthwise convolution whose input and output share `region`: the input
/// `[1, C, in_h, in_w]` at element `x_at`, the output `[1, C, out_h, out_w]` at element `y_at`,
/// which may overlap the input as [`conv2d_plane_order`]'s contract allows: output plane `q` must
/// end at or before input plane `q`'s start (`y_at + (q + 1) * out_plane <= x_at + q * in_plane`
/// for every `q`). The same bytes as `conv2d` on separate buffers; needs no scratch. Where the
/// architecture's depthwise kernels take the layer (x86-64 with AVX2 + FMA: they read a plane,
/// or a block of 8 planes, whole before writing its outputs), one call computes it; elsewhere
/// it runs as ordinary calls on chunks of planes, as many as the displacement allows (one plane
/// each at the smallest).
///
/// Panics (never undefined behaviour) if `p` has no plane order, or if the offsets break the
/// condition: then output plane `q` would overwrite input that is still to be read.
pub fn conv2d_overlapped(p: &Conv2d, region: &mut [f32], x_at: usize, y_at: usize, w: &[f32], bias: Option<&[f32]>) {
    let Some(order) = conv2d_plane_order(p) else {
        panic!("conv2d_overlapped: not a depthwise convolution with a plane order");
    };
    // The condition is linear in `q`: holding for the first and the last plane, it holds for all.
    let fits = |q: usize| y_at + (q + 1) * order.out_plane <= x_at + q * order.in_plane;
    assert!(
        fits(0) && fits(order.planes - 1),
        "conv2d_overlapped: an output plane would overwrite input still to be read"
    );
    let inside =
        x_at + order.planes * order.in_plane <= region.len() && y_at + order.planes * order.out_plane <= region.len();
    assert!(inside, "conv2d_overlapped: the input or the output ends past the region");
    let bias_rows = bias.map_or(Bias::None, Bias::Row);
    if Kernels::current().depthwise_shared(p, SharedRegion { region, x_at, y_at }, w, bias_rows) {
        return;
    }
    let taps = p.kernel_h * p.kernel_w;
    for_each_chunk(order, region, (x_at, y_at), usize::MAX, |q0, q1, _, x, y| {
        let n = q1 - q0;
        let chunk = Conv2d { in_channels: n, out_channels: n, groups: n, ..*p };
        // Group q's weights start at q * taps in both layouts (one output channel per group).
        conv2d(&chunk, x, &w[q0 * taps..], bias.map(|b| &b[q0..q1]), y, &mut []);
    });
}

/// [`quant::depthwise_conv2d`] of a convolution whose input and output share `region`: the input
/// `[1, C, in_h, in_w]` at element `x_at`, the output `[1, C, out_h, out_w]` at element `y_at`,
/// which may overlap the input as [`quant_depthwise_plane_order`]'s contract allows (the condition
/// of [`conv2d_overlapped`]). The same bytes as `depthwise_conv2d` on separate buffers. Each
/// chunk's weights (1HWO, so strided by `C` per tap) are gathered into a stack array of
/// [`QUANT_OVERLAP_WEIGHTS`] bytes, which bounds the planes of a chunk.
///
/// Panics (never undefined behaviour) if `p` has no plane order, or if the offsets break the
/// condition.
pub fn quant_depthwise_conv2d_overlapped<T: QuantElem>(
    p: &quant::Conv2d,
    region: &mut [T],
    (x_at, y_at): (usize, usize),
    w: &[i8],
    q: &ChannelQuant,
) {
    let Some(order) = quant_depthwise_plane_order(p) else {
        panic!("quant_depthwise_conv2d_overlapped: not a depthwise NCHW convolution with a plane order");
    };
    let (taps, c) = (p.kernel_h * p.kernel_w, order.planes);
    assert_eq!(w.len(), taps * c, "quant_depthwise_conv2d_overlapped: weight length");
    let mut gathered = [0i8; QUANT_OVERLAP_WEIGHTS];
    for_each_chunk(order, region, (x_at, y_at), QUANT_OVERLAP_WEIGHTS / taps, |q0, q1, _, x, y| {
        let n = q1 - q0;
        let chunk = quant::Conv2d {
            in_channels: n,
            out_channels: n,
            groups: n,
            x_strides: ImageStrides::nchw(n, p.in_h, p.in_w),
            y_strides: ImageStrides::nchw(n, p.out_h, p.out_w),
            ..*p
        };
        for (t, dst) in gathered.chunks_exact_mut(n).take(taps).enumerate() {
            dst.copy_from_slice(&w[t * c + q0..t * c + q1]);
        }
        // Per-tensor multipliers are shared; per-channel ones are the chunk's.
        let (multipliers, shifts) = if q.multipliers.len() == 1 {
            (q.multipliers, q.shifts)
        } else {
            (&q.multipliers[q0..q1], &q.shifts[q0..q1])
        };
        let cq = ChannelQuant { bias: &q.bias[q0..q1], multipliers, shifts, rounding: q.rounding };
        quant::depthwise_conv2d(&chunk, x, &gathered[..taps * n], &cq, y);
    });
}

/// [`quant::conv2d`] (or [`quant::depthwise_conv2d`], for a depthwise convolution: `groups > 1`
/// and `groups == in_channels`, weights 1HWO) of a convolution whose NHWC input and output share
/// `region`: the input `[1, in_h, in_w, C_in]` at element `x_at`, the output
/// `[1, out_h, out_w, C_out]` at element `y_at`, which may overlap the input as
/// [`quant_conv2d_row_order`]'s contract allows: output row `q` must end at or before the first
/// input row it reads (`y_at + (q + 1) * out_row <= x_at + first_read(q) * in_row` for every
/// `q`). Runs in chunks of output rows, each an ordinary call on the input rows its windows
/// cover (the chunk's top padding and height set from them; integer sums, so the same bytes as
/// one call on separate buffers). `scratch` as `conv2d` takes it.
///
/// Panics (never undefined behaviour) if `p` has no row order, or if the offsets break the
/// condition.
pub fn quant_conv2d_rows_overlapped<T: QuantElem>(
    p: &quant::Conv2d,
    region: &mut [T],
    (x_at, y_at): (usize, usize),
    w: &[i8],
    q: &ChannelQuant,
    scratch: &mut [T],
) {
    let Some(order) = quant_conv2d_row_order(p) else {
        panic!("quant_conv2d_rows_overlapped: not an NHWC convolution with a row order");
    };
    let depthwise = p.groups > 1 && p.groups == p.in_channels;
    for_each_chunk(order, region, (x_at, y_at), usize::MAX, |q0, q1, r0, x, y| {
        let (in_h, out_h) = (x.len() / order.in_plane, q1 - q0);
        let chunk = quant::Conv2d {
            in_h,
            out_h,
            // Output row q0's windows start `q0 * stride_h - pad_top` rows into the image, `r0`
            // (at least that, and at least 0) into the chunk's input.
            pad_top: r0 + p.pad_top - q0 * p.stride_h,
            x_strides: ImageStrides::nhwc(p.in_channels, in_h, p.in_w),
            y_strides: ImageStrides::nhwc(p.out_channels, out_h, p.out_w),
            ..*p
        };
        match depthwise {
            true => quant::depthwise_conv2d(&chunk, x, w, q, y),
            false => quant::conv2d(&chunk, x, w, q, y, scratch),
        }
    });
}

/// The plane order of [`crate::max_pool2d`] / [`crate::avg_pool2d`] for `p`: batch 1 (NC(D)HW,
/// a plane being one channel's `in_d * in_h * in_w` values; what [`pool2d_overlapped`] runs).
/// `None` for a batch of several images or an empty one.
pub const fn pool2d_plane_order(p: &Pool2d) -> Option<PlaneOrder> {
    let (in_plane, out_plane) = (p.in_d * p.in_h * p.in_w, p.out_d * p.out_h * p.out_w);
    if p.batch != 1 || p.channels == 0 || in_plane == 0 || out_plane == 0 {
        return None;
    }
    Some(PlaneOrder::one_to_one(p.channels, in_plane, out_plane))
}

/// `kernel` ([`crate::max_pool2d`] or [`crate::avg_pool2d`]) on an input and output sharing
/// `region` (the input at element `x_at`, the output at `y_at`), as [`pool2d_plane_order`]'s
/// contract allows (the condition of [`conv2d_overlapped`]): chunks of channels, each an
/// ordinary call on separate slices, so the same bytes as `kernel` on separate buffers.
///
/// Panics (never undefined behaviour) if `p` has no plane order, or if the offsets break the
/// condition.
pub fn pool2d_overlapped(
    p: &Pool2d,
    kernel: fn(&Pool2d, &[f32], &mut [f32]),
    region: &mut [f32],
    (x_at, y_at): (usize, usize),
) {
    let Some(order) = pool2d_plane_order(p) else {
        panic!("pool2d_overlapped: not a pooling of one image's planes");
    };
    for_each_chunk(order, region, (x_at, y_at), usize::MAX, |q0, q1, _, x, y| {
        kernel(&Pool2d { channels: q1 - q0, ..*p }, x, y);
    });
}

/// The plane order of the quantized poolings ([`quant::max_pool2d`], [`quant::avg_pool2d`],
/// [`quant::avg_pool2d_half_even`]) for `p`, batch 1: whole NCHW planes (the ONNX files'; output
/// plane `q` reads input plane `q`), or contiguous NHWC images (the `.tflite` files') row by row
/// (output row `q` reads the input rows its windows cover, from `q * stride_h - pad_top`); what
/// [`quant_pool2d_overlapped`] runs. `None` otherwise.
pub fn quant_pool2d_plane_order(p: &quant::Pool2d) -> Option<PlaneOrder> {
    let c = p.channels;
    let windows = p.kernel_h > 0 && p.stride_h > 0 && p.dilation_h > 0;
    let nonempty = c > 0 && p.in_h * p.in_w > 0 && p.out_h * p.out_w > 0 && windows;
    if p.batch != 1 || !nonempty {
        return None;
    }
    if p.x_strides == ImageStrides::nchw(c, p.in_h, p.in_w) && p.y_strides == ImageStrides::nchw(c, p.out_h, p.out_w) {
        return Some(PlaneOrder::one_to_one(c, p.in_h * p.in_w, p.out_h * p.out_w));
    }
    let rows =
        p.x_strides == ImageStrides::nhwc(c, p.in_h, p.in_w) && p.y_strides == ImageStrides::nhwc(c, p.out_h, p.out_w);
    rows.then_some(PlaneOrder {
        planes: p.out_h,
        in_plane: p.in_w * c,
        out_plane: p.out_w * c,
        in_planes: p.in_h,
        stride: p.stride_h,
        before: p.pad_top,
        reach: (p.kernel_h - 1) * p.dilation_h,
        rows: true,
    })
}

/// `kernel` (one of the quantized poolings) on an input and output sharing `region`, as
/// [`quant_pool2d_plane_order`]'s contract allows: see [`pool2d_overlapped`]. NHWC chunks of
/// output rows get the input rows their windows cover, the top padding shifted as for
/// [`quant_conv2d_rows_overlapped`], and the bottom padding only where the chunk reaches the
/// input's last row (elsewhere no window of the chunk reaches past its rows), so every window
/// has the same inputs and the same padded extent (which counted-padding averages divide by).
///
/// Panics (never undefined behaviour) if `p` has no plane order, or if the offsets break the
/// condition.
pub fn quant_pool2d_overlapped<T: QuantInt>(
    p: &quant::Pool2d,
    kernel: fn(&quant::Pool2d, &[T], &mut [T]),
    region: &mut [T],
    (x_at, y_at): (usize, usize),
) {
    let Some(order) = quant_pool2d_plane_order(p) else {
        panic!("quant_pool2d_overlapped: not a pooling of one image's NCHW planes or NHWC rows");
    };
    // The layout `quant_pool2d_plane_order` found (NCHW first).
    let nchw = p.x_strides == ImageStrides::nchw(p.channels, p.in_h, p.in_w);
    for_each_chunk(order, region, (x_at, y_at), usize::MAX, |q0, q1, r0, x, y| {
        let n = q1 - q0;
        let chunk = match nchw {
            true => quant::Pool2d {
                channels: n,
                x_strides: ImageStrides::nchw(n, p.in_h, p.in_w),
                y_strides: ImageStrides::nchw(n, p.out_h, p.out_w),
                ..*p
            },
            false => {
                let in_h = x.len() / order.in_plane;
                quant::Pool2d {
                    in_h,
                    out_h: n,
                    pad_top: r0 + p.pad_top - q0 * p.stride_h,
                    pad_bottom: if r0 + in_h == p.in_h { p.pad_bottom } else { 0 },
                    x_strides: ImageStrides::nhwc(p.channels, in_h, p.in_w),
                    y_strides: ImageStrides::nhwc(p.channels, n, p.out_w),
                    ..*p
                }
            }
        };
        kernel(&chunk, x, y);
    });
}
