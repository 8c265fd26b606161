//! The operands of the depthwise kernels ([`super::depthwise`], [`super::depthwise_blocked`]),
//! whose input and output planes are either two slices (an ordinary call) or one region both
//! live in (an in-place layer, [`crate::conv2d_overlapped`]: output plane `q` ends at or before
//! input plane `q` starts, which the caller has checked). The kernels read a plane, or a block
//! of planes, completely before they write its outputs, so one call serves the whole region.

use crate::conv_shape::SharedRegion;
use crate::epilogue::Bias;

/// The weights, bias and planes of one depthwise kernel call.
pub(super) struct DepthwiseOperands<'a> {
    /// Output channels per input channel.
    pub ocg: usize,
    /// `[out_channels, 1, kernel_h, kernel_w]`, laid out as `Conv2d::weights` says.
    pub w: &'a [f32],
    /// One value per output channel, or none.
    pub bias: Bias<'a>,
    /// Where the planes are.
    pub planes: Planes<'a>,
}

impl DepthwiseOperands<'_> {
    /// The same operands, borrowed again (for one of several kernels sharing a call).
    #[inline(always)]
    pub fn reborrow(&mut self) -> DepthwiseOperands<'_> {
        let DepthwiseOperands { ocg, w, bias, ref mut planes } = *self;
        DepthwiseOperands { ocg, w, bias, planes: planes.reborrow() }
    }
}

/// Where a depthwise convolution's NCHW input and output planes are.
pub(super) enum Planes<'a> {
    /// Input `x` and output `y`, separate.
    Split { x: &'a [f32], y: &'a mut [f32] },
    /// Input and output in one region, output plane `q` ending at or before input plane `q`'s
    /// start.
    Shared(SharedRegion<'a>),
}

impl Planes<'_> {
    /// Whether input and output share one region (a kernel then has to read all the input of a
    /// block of planes before writing any of its outputs).
    #[inline(always)]
    pub fn shared(&self) -> bool {
        matches!(self, Planes::Shared(_))
    }

    /// The input, from its first element.
    #[inline(always)]
    pub fn x(&self) -> &[f32] {
        match self {
            Planes::Split { x, .. } => x,
            Planes::Shared(s) => &s.region[s.x_at..],
        }
    }

    /// The output, from its first element.
    #[inline(always)]
    pub fn y(&mut self) -> &mut [f32] {
        match self {
            Planes::Split { y, .. } => y,
            Planes::Shared(s) => &mut s.region[s.y_at..],
        }
    }

    /// Input elements `x.0..x.0 + x.1` and output elements `y.0..y.0 + y.1` at once (in a shared
    /// region the output range must end at or before the input range starts, as one output
    /// plane and its input plane do; otherwise this panics).
    #[inline(always)]
    pub fn plane(&mut self, x: (usize, usize), y: (usize, usize)) -> (&[f32], &mut [f32]) {
        match self {
            Planes::Split { x: xs, y: ys } => (&xs[x.0..][..x.1], &mut ys[y.0..][..y.1]),
            Planes::Shared(s) => {
                let (below, from_x) = s.region.split_at_mut(s.x_at + x.0);
                (&from_x[..x.1], &mut below[s.y_at + y.0..][..y.1])
            }
        }
    }

    /// The same planes, borrowed again.
    #[inline(always)]
    pub fn reborrow(&mut self) -> Planes<'_> {
        match self {
            Planes::Split { x, y } => Planes::Split { x, y },
            Planes::Shared(s) => Planes::Shared(SharedRegion { region: s.region, x_at: s.x_at, y_at: s.y_at }),
        }
    }
}
