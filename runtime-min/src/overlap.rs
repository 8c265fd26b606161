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
//! [`conv2d_overlapped`] is the entry point on one `&mut [f32]` region holding both tensors (a
//! `&[f32]` of the input and a `&mut [f32]` of the output over the same bytes would be undefined
//! behaviour): it runs the convolution in chunks of consecutive planes whose outputs lie wholly
//! below the chunk's first input plane, splitting the region there, so no two live slices ever
//! overlap. Each plane is computed by the same kernel path as in [`crate::conv2d`], so the bytes
//! are the same as with separate buffers.

use crate::conv::conv2d;
use crate::conv_shape::{Conv2d, ConvInput};

/// A kernel's plane order, the fact [`conv2d_plane_order`] states: output plane `q` reads input
/// plane `q` only, and the planes are written in ascending order, each after every earlier one.
/// Sizes in elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlaneOrder {
    /// Number of planes (output plane `q` reads input plane `q`).
    pub planes: usize,
    /// Elements of one input plane.
    pub in_plane: usize,
    /// Elements of one output plane.
    pub out_plane: usize,
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
    Some(PlaneOrder { planes: p.groups, in_plane: p.in_h * p.in_w, out_plane: p.out_h * p.out_w })
}

/// [`crate::conv2d`] of a depthwise convolution whose input and output share `region`: the input
/// `[1, C, in_h, in_w]` at element `x_at`, the output `[1, C, out_h, out_w]` at element `y_at`,
/// which may overlap the input as [`conv2d_plane_order`]'s contract allows: output plane `q` must
/// end at or before input plane `q`'s start (`y_at + (q + 1) * out_plane <= x_at + q * in_plane`
/// for every `q`). The same bytes as `conv2d` on separate buffers; needs no scratch.
///
/// Panics (never undefined behaviour) if `p` has no plane order, or if the offsets break the
/// condition: then output plane `q` would overwrite input that is still to be read.
pub fn conv2d_overlapped(p: &Conv2d, region: &mut [f32], x_at: usize, y_at: usize, w: &[f32], bias: Option<&[f32]>) {
    let Some(order) = conv2d_plane_order(p) else {
        panic!("conv2d_overlapped: not a depthwise convolution with a plane order");
    };
    let taps = p.kernel_h * p.kernel_w;
    let mut q0 = 0;
    while q0 < order.planes {
        // The chunk q0..q1: the planes whose outputs end at or before input plane q0's start.
        let x0 = x_at + q0 * order.in_plane;
        let mut q1 = q0;
        while q1 < order.planes && y_at + (q1 + 1) * order.out_plane <= x0 {
            q1 += 1;
        }
        assert!(q1 > q0, "conv2d_overlapped: output plane {q0} would overwrite input still to be read");
        let (below, from_x0) = region.split_at_mut(x0);
        let y = &mut below[y_at + q0 * order.out_plane..y_at + q1 * order.out_plane];
        let x = &from_x0[..(q1 - q0) * order.in_plane];
        let n = q1 - q0;
        let chunk = Conv2d { in_channels: n, out_channels: n, groups: n, ..*p };
        // Group q's weights start at q * taps in both layouts (one output channel per group).
        conv2d(&chunk, x, &w[q0 * taps..], bias.map(|b| &b[q0..q1]), y, &mut []);
        q0 = q1;
    }
}
