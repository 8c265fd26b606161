//! Quantized depthwise convolution with a channel multiplier: TFLite DEPTHWISE_CONV_2D, ONNX
//! QLinearConv / ConvInteger with `group == in_channels`.
//!
//! Output channel `o` reads input channel `o / multiplier` (`multiplier = out_channels /
//! in_channels`); the arithmetic is [`conv2d`](super::conv2d)'s with one input channel per group.

use super::{ChannelQuant, Conv2d, QuantElem};

/// Output channels accumulated together on the stack.
const CHANNEL_BLOCK: usize = 16;

/// Quantized depthwise convolution: [`Conv2d`] with `groups == in_channels` and `out_channels` a
/// multiple of `in_channels`.
///
/// `w` is 1HWO (TFLite's layout; [`pack_depthwise_weights`](super::pack_depthwise_weights)
/// converts ONNX's `[out_channels, 1, kh, kw]`): weight `(ky, kx, o)` at `(ky * kernel_w + kx) *
/// out_channels + o`. `q` has `out_channels` folded biases
/// ([`fold_depthwise_bias`](super::fold_depthwise_bias)) and 1 or `out_channels` multipliers.
/// No scratch.
pub fn depthwise_conv2d<T: QuantElem>(p: &Conv2d, x: &[T], w: &[i8], q: &ChannelQuant, y: &mut [T]) {
    assert_eq!(p.groups, p.in_channels, "depthwise_conv2d: groups == in_channels");
    assert_eq!(p.out_channels % p.in_channels, 0, "depthwise_conv2d: out_channels multiple of in_channels");
    assert_eq!(w.len(), p.kernel_h * p.kernel_w * p.out_channels, "depthwise_conv2d: weight length");
    q.check(p.out_channels);
    let multiplier = p.out_channels / p.in_channels;
    let (xs, ys, zw) = (p.x_strides, p.y_strides, p.w_zero_point);
    let contiguous = multiplier == 1 && xs.c == 1;
    for b in 0..p.batch {
        for oy in 0..p.out_h {
            for ox in 0..p.out_w {
                for o0 in (0..p.out_channels).step_by(CHANNEL_BLOCK) {
                    let n = CHANNEL_BLOCK.min(p.out_channels - o0);
                    let mut acc = [0i32; CHANNEL_BLOCK];
                    let acc = &mut acc[..n];
                    acc.copy_from_slice(&q.bias[o0..o0 + n]);
                    for ky in 0..p.kernel_h {
                        let iy = p.input_row(oy, ky);
                        for kx in 0..p.kernel_w {
                            let wr = &w[(ky * p.kernel_w + kx) * p.out_channels + o0..][..n];
                            match (iy, p.input_col(ox, kx)) {
                                (Some(iy), Some(ix)) => {
                                    let base = b * xs.n + iy * xs.h + ix * xs.w;
                                    if contiguous {
                                        for ((a, &wv), &xv) in acc.iter_mut().zip(wr).zip(&x[base + o0..][..n]) {
                                            *a = a.wrapping_add((wv as i32 - zw) * xv.to_i32());
                                        }
                                    } else {
                                        for (j, (a, &wv)) in acc.iter_mut().zip(wr).enumerate() {
                                            let xv = x[base + (o0 + j) / multiplier * xs.c].to_i32();
                                            *a = a.wrapping_add((wv as i32 - zw) * xv);
                                        }
                                    }
                                }
                                _ => {
                                    for (a, &wv) in acc.iter_mut().zip(wr) {
                                        *a = a.wrapping_add((wv as i32 - zw) * p.x_zero_point);
                                    }
                                }
                            }
                        }
                    }
                    let y_base = b * ys.n + oy * ys.h + ox * ys.w;
                    for (j, &a) in acc.iter().enumerate() {
                        let o = o0 + j;
                        y[y_base + o * ys.c] = q.output(o, a, p.y_zero_point, p.act_min, p.act_max);
                    }
                }
            }
        }
    }
}
