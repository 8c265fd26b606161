//! Quantized depthwise convolution with a channel multiplier: TFLite DEPTHWISE_CONV_2D, ONNX
//! QLinearConv / ConvInteger with `group == in_channels`.
//!
//! Output channel `o` reads input channel `o / multiplier` (`multiplier = out_channels /
//! in_channels`); the arithmetic is [`conv2d`](super::conv2d)'s with one input channel per group.

use super::{ChannelQuant, Conv2d, QuantElem};

/// Output channels accumulated together on the stack.
pub(crate) const CHANNEL_BLOCK: usize = 16;

/// `acc[j] += (w[j] - w_zero_point) * x[j]`; a whole block with constant bounds, so that it
/// vectorises.
#[inline(always)]
fn multiply_accumulate<T: QuantElem>(acc: &mut [i32], w: &[i8], x: &[T], w_zero_point: i32) {
    let step = |a: &mut i32, &wv: &i8, &xv: &T| *a = a.wrapping_add((wv as i32 - w_zero_point) * xv.to_i32());
    if let (Some(acc), Some(w), Some(x)) =
        (acc.as_mut_array::<CHANNEL_BLOCK>(), w.as_array::<CHANNEL_BLOCK>(), x.as_array::<CHANNEL_BLOCK>())
    {
        acc.iter_mut().zip(w).zip(x).for_each(|((a, wv), xv)| step(a, wv, xv));
    } else {
        acc.iter_mut().zip(w).zip(x).for_each(|((a, wv), xv)| step(a, wv, xv));
    }
}

/// Quantized depthwise convolution: [`Conv2d`] with `groups == in_channels` and `out_channels` a
/// multiple of `in_channels`.
///
/// `w` is 1HWO (TFLite's layout; [`pack_depthwise_weights`](super::pack_depthwise_weights)
/// converts ONNX's `[out_channels, 1, kh, kw]`): weight `(ky, kx, o)` at `(ky * kernel_w + kx) *
/// out_channels + o`. `q` has `out_channels` folded biases
/// ([`fold_depthwise_bias`](super::fold_depthwise_bias)) and 1 or `out_channels` multipliers.
/// No scratch. On Arm cores with the DSP extension the layers its kernel takes run there (same
/// bits).
pub fn depthwise_conv2d<T: QuantElem>(p: &Conv2d, x: &[T], w: &[i8], q: &ChannelQuant, y: &mut [T]) {
    assert_eq!(p.groups, p.in_channels, "depthwise_conv2d: groups == in_channels");
    assert_eq!(p.out_channels % p.in_channels, 0, "depthwise_conv2d: out_channels multiple of in_channels");
    assert_eq!(w.len(), p.kernel_h * p.kernel_w * p.out_channels, "depthwise_conv2d: weight length");
    q.check(p.out_channels);
    if crate::arch::quant_depthwise_conv2d(p, x, w, q, y) {
        return;
    }
    let multiplier = p.out_channels / p.in_channels;
    let (xs, ys, zw) = (p.x_strides, p.y_strides, p.w_zero_point);
    let contiguous = multiplier == 1 && xs.c == 1;
    for b in 0..p.batch {
        for oy in 0..p.out_h {
            for ox in 0..p.out_w {
                for o0 in (0..p.out_channels).step_by(CHANNEL_BLOCK) {
                    let n = CHANNEL_BLOCK.min(p.out_channels - o0);
                    // Offset of each output channel's input channel (strided inputs only).
                    let mut channel_offset = [0usize; CHANNEL_BLOCK];
                    if !contiguous {
                        let (mut ic, mut m) = (o0 / multiplier, o0 % multiplier);
                        for off in &mut channel_offset[..n] {
                            *off = ic * xs.c;
                            m += 1;
                            if m == multiplier {
                                (ic, m) = (ic + 1, 0);
                            }
                        }
                    }
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
                                        multiply_accumulate(acc, wr, &x[base + o0..][..n], zw);
                                    } else {
                                        for ((a, &wv), &off) in acc.iter_mut().zip(wr).zip(&channel_offset) {
                                            *a = a.wrapping_add((wv as i32 - zw) * x[base + off].to_i32());
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
