//! Pooling of channel-blocked activations ([`crate::blocked`]): a window's 16 channels of a
//! block at one tap are 16 consecutive values, so every output folds whole rows of 16 (the
//! compiled lanes of the kernel path in force), with no transposes. Max pooling lets a chain of
//! blocked convolutions run through the pooling after it (MNIST's 2x2 pooling between its second
//! convolution and its dense layers) and convert back the smaller pooled tensor; global pooling
//! ends a chain with no conversion at all, its output of one value per channel laid out the same
//! blocked and NCHW.

use core::ops::Range;

use crate::arch::{self, KernelCall, Kernels};
use crate::blocked::CHANNEL_BLOCK;
use crate::pool::{max_fold, Pool2d};
use crate::reduce::reduce_sums_in_order;

/// Whether [`max_pool2d_blocked`] computes the max pooling `p`: 2-D (one input, output and
/// window plane), whole blocks of channels.
pub fn max_pool2d_blocked_applies(p: &Pool2d) -> bool {
    p.in_d == 1 && p.out_d == 1 && p.kernel_d == 1 && p.pad_front == 0 && p.channels.is_multiple_of(CHANNEL_BLOCK)
}

/// ONNX MaxPool `p` ([`max_pool2d_blocked_applies`]) of the channel-blocked `x` (`[batch,
/// channels, in_h, in_w]`) into the channel-blocked `y` (`[batch, channels, out_h, out_w]`):
/// each output the fold of [`crate::max_pool2d`] (from `-inf`, the last NaN, else the first
/// largest value) over its window's taps inside the input, rows then columns ascending, so its
/// bits on the NCHW tensors.
pub fn max_pool2d_blocked(p: &Pool2d, x: &[f32], y: &mut [f32]) {
    assert!(max_pool2d_blocked_applies(p), "not a max pooling max_pool2d_blocked computes");
    arch::run(BlockedMaxPool { p, x, y });
}

/// The arguments of one [`max_pool2d_blocked`], whose body [`arch::run`] compiles per kernel
/// path (the folds of 16 lanes vectorise).
struct BlockedMaxPool<'a> {
    p: &'a Pool2d,
    x: &'a [f32],
    y: &'a mut [f32],
}

impl KernelCall for BlockedMaxPool<'_> {
    #[inline(always)]
    fn run(self, _: Kernels) {
        let (p, b) = (self.p, CHANNEL_BLOCK);
        let (in_block, out_block) = (p.in_h * p.in_w * b, p.out_h * p.out_w * b);
        if out_block == 0 {
            return;
        }
        let blocks = p.batch * p.channels / b;
        let (x, y) = (&self.x[..blocks * in_block], &mut self.y[..blocks * out_block]);
        for blk in 0..blocks {
            let (xb, yb) = (&x[blk * in_block..][..in_block], &mut y[blk * out_block..][..out_block]);
            for (oh, y_row) in yb.chunks_exact_mut(p.out_w * b).enumerate() {
                let rows = Window::new(oh, p.stride_h, p.dilation_h, p.pad_top, p.kernel_h, p.in_h);
                for (ow, out) in y_row.chunks_exact_mut(b).enumerate() {
                    let cols = Window::new(ow, p.stride_w, p.dilation_w, p.pad_left, p.kernel_w, p.in_w);
                    let mut m = [f32::NEG_INFINITY; CHANNEL_BLOCK];
                    for kh in rows.taps.clone() {
                        let row = rows.input(kh) * p.in_w;
                        for kw in cols.taps.clone() {
                            let tap = &xb[(row + cols.input(kw)) * b..][..b];
                            for (d, &v) in m.iter_mut().zip(tap) {
                                max_fold(d, v);
                            }
                        }
                    }
                    out.copy_from_slice(&m);
                }
            }
        }
    }
}

/// The taps of one output row's (or column's) window that lie inside the input, along one axis.
struct Window {
    /// The taps `k < kernel` inside the input, ascending.
    taps: Range<usize>,
    /// Where tap 0 would read, padding counted: input index `start + k * dilation - pad`.
    start: usize,
    dilation: usize,
    pad: usize,
}

impl Window {
    /// Output index `o`'s window over an input axis of `len` values. (Without divisions: per
    /// output they took more time than the taps, 47 cycles an output of 16 channels for MNIST's
    /// 2x2 windows.)
    #[inline(always)]
    fn new(o: usize, stride: usize, dilation: usize, pad: usize, kernel: usize, len: usize) -> Self {
        let start = o * stride;
        // Tap `k` is inside where `pad <= start + k * dilation < pad + len`.
        let mut lo = 0;
        while lo < kernel && start + lo * dilation < pad {
            lo += 1;
        }
        let mut hi = kernel;
        while hi > lo && start + (hi - 1) * dilation >= pad + len {
            hi -= 1;
        }
        Window { taps: lo..hi, start, dilation, pad }
    }

    /// The input index tap `k` (one of [`Window::taps`]) reads.
    #[inline(always)]
    fn input(&self, k: usize) -> usize {
        self.start + k * self.dilation - self.pad
    }
}

/// A global pooling of channel-blocked activations ([`global_pool_blocked`]): per image and
/// channel, the sum of a plane's values, or their mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobalPool {
    /// Images.
    pub batch: usize,
    /// Channels, a whole number of blocks.
    pub channels: usize,
    /// Positions of a plane, at least one.
    pub plane: usize,
    /// Whether each sum is divided by `plane` (average pooling) or not (a sum).
    pub mean: bool,
}

impl GlobalPool {
    /// The global pooling whose bits are [`crate::avg_pool2d`]'s for `p`, if it is one: a 2-D
    /// window over the whole plane without padding or dilation, whole blocks of channels.
    pub fn of_avg_pool2d(p: &Pool2d) -> Option<GlobalPool> {
        let flat = p.in_d == 1 && p.out_d == 1 && p.kernel_d == 1 && p.stride_d == 1 && p.pad_front + p.pad_back == 0;
        let unpadded =
            p.pad_top + p.pad_left + p.pad_bottom + p.pad_right == 0 && p.dilation_h == 1 && p.dilation_w == 1;
        let whole = p.out_h == 1 && p.out_w == 1 && p.kernel_h == p.in_h && p.kernel_w == p.in_w;
        let plane = p.in_h * p.in_w;
        let global = GlobalPool { batch: p.batch, channels: p.channels, plane, mean: true };
        (flat && unpadded && whole && global.applies()).then_some(global)
    }

    /// The global pooling whose bits are [`crate::reduce_sum`]'s (`mean` false) or
    /// [`crate::reduce_mean`]'s (true) over the two last axes of a contiguous `[batch, channels,
    /// h, w]` tensor of `plane = h * w` positions, if it is one: whole blocks of channels, and
    /// planes whose values those reductions add in position order from `0.0`
    /// ([`reduce_sums_in_order`]).
    pub fn of_reduce(batch: usize, channels: usize, plane: usize, mean: bool) -> Option<GlobalPool> {
        let global = GlobalPool { batch, channels, plane, mean };
        (reduce_sums_in_order(plane) && global.applies()).then_some(global)
    }

    /// Whether [`global_pool_blocked`] computes it: whole blocks of channels, planes of at least
    /// one position.
    pub fn applies(&self) -> bool {
        self.channels.is_multiple_of(CHANNEL_BLOCK) && self.plane > 0
    }
}

/// The global pooling `p` ([`GlobalPool::applies`]) of the channel-blocked `x` (`[batch,
/// channels, plane]`) into `y` (`[batch, channels]`, NCHW; the same bytes blocked): each output
/// `0.0 + x[c, 0] + x[c, 1] + ...` in position order, then divided by `plane` for a mean. Those
/// are the additions of [`crate::avg_pool2d`]'s global windows and, for planes of fewer than 16
/// values, of [`crate::reduce_sum`] and [`crate::reduce_mean`], so their bits on the NCHW tensor
/// ([`GlobalPool::of_avg_pool2d`], [`GlobalPool::of_reduce`]). [`GROUP`] blocks at a time, as
/// independent chains.
pub fn global_pool_blocked(p: &GlobalPool, x: &[f32], y: &mut [f32]) {
    assert!(p.applies(), "not a global pooling global_pool_blocked computes");
    arch::run(BlockedGlobalPool { p, x, y });
}

/// Blocks [`global_pool_blocked`] sums at once: a block's sum is one chain of dependent additions,
/// which several blocks in flight overlap.
pub(crate) const GROUP: usize = 4;

/// The arguments of one [`global_pool_blocked`], whose body [`arch::run`] compiles per kernel path
/// (the sums of 16 lanes vectorise).
struct BlockedGlobalPool<'a> {
    p: &'a GlobalPool,
    x: &'a [f32],
    y: &'a mut [f32],
}

impl KernelCall for BlockedGlobalPool<'_> {
    #[inline(always)]
    fn run(self, _: Kernels) {
        let (p, b) = (self.p, CHANNEL_BLOCK);
        let blocks = p.batch * p.channels / b;
        let (x, y) = (&self.x[..blocks * p.plane * b], &mut self.y[..blocks * b]);
        let mut xs = x.chunks_exact(GROUP * p.plane * b);
        let mut ys = y.chunks_exact_mut(GROUP * b);
        for (xg, yg) in (&mut xs).zip(&mut ys) {
            plane_sums::<GROUP>(p, xg, yg);
        }
        for (xb, yb) in xs.remainder().chunks_exact(p.plane * b).zip(ys.into_remainder().chunks_exact_mut(b)) {
            plane_sums::<1>(p, xb, yb);
        }
    }
}

/// [`global_pool_blocked`] of `G` blocks: `x` their `G * plane * 16` values, `y` their `G * 16`
/// outputs.
#[inline(always)]
fn plane_sums<const G: usize>(p: &GlobalPool, x: &[f32], y: &mut [f32]) {
    let (b, plane) = (CHANNEL_BLOCK, p.plane);
    let x = &x[..G * plane * b];
    let mut acc = [[0.0f32; CHANNEL_BLOCK]; G];
    for q in 0..plane {
        for (g, sums) in acc.iter_mut().enumerate() {
            let position = &x[(g * plane + q) * b..][..b];
            for (s, &v) in sums.iter_mut().zip(position) {
                *s += v;
            }
        }
    }
    let count = plane as f32;
    for (sums, out) in acc.iter().zip(y.chunks_exact_mut(b)) {
        for (o, &s) in out.iter_mut().zip(sums) {
            *o = if p.mean { s / count } else { s };
        }
    }
}
