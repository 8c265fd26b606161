//! Max pooling on channel-blocked activations ([`crate::blocked`]): a window's 16 channels of a
//! block at one tap are 16 consecutive values, so every output folds whole rows of 16 (the
//! compiled lanes of the kernel path in force), with no transposes. It lets a chain of blocked
//! convolutions run through the pooling after it (MNIST's 2x2 pooling between its second
//! convolution and its dense layers) and convert back the smaller pooled tensor.

use core::ops::Range;

use crate::arch::{self, KernelCall, Kernels};
use crate::blocked::CHANNEL_BLOCK;
use crate::pool::{max_fold, Pool2d};

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
