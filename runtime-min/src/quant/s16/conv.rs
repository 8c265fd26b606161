//! 16x8 convolution, depthwise convolution and fully connected layer: TFLite's
//! `reference_integer_ops::ConvPerChannel`, `DepthwiseConvPerChannel` and
//! `FullyConnected[PerChannel]` for `int16_t` inputs with `int64_t` biases. Inputs are symmetric
//! (zero point 0), so padding contributes nothing and no zero point is folded into the bias.

use super::ChannelQuantS16;
use crate::quant::{Conv2d, FullyConnected};

/// `sum w * x` over the window of output `(b, oy, ox)`, group `g`, for output channel weights
/// `w_oc` (`(ky, kx, c)` order), positions outside the input skipped.
#[inline(always)]
fn window_dot(p: &Conv2d, x: &[i16], w_oc: &[i8], at: (usize, usize, usize, usize)) -> i64 {
    let runs = w_oc.chunks_exact(p.group_in_channels()).zip(p.window_runs(at));
    let inside = runs.filter_map(|(w_run, base)| Some((w_run, base?)));
    inside
        .map(|(w_run, base)| w_run.iter().zip(x[base..].iter().step_by(p.x_strides.c)))
        .map(|products| products.map(|(&wv, &xv)| wv as i64 * xv as i64).sum::<i64>())
        .sum()
}

/// 16x8 convolution (standard or grouped; [`Conv2d`]'s geometry and strides, OHWI weights as for
/// [`conv2d`](crate::quant::conv2d)): each output is the `i64` sum of weight times input over its
/// window plus the channel's bias, requantized by [`ChannelQuantS16`], clamped to `[act_min,
/// act_max]`. `x_zero_point` and `w_zero_point` must be 0 (TFLite's 16x8 spec). No scratch.
pub fn conv2d_s16(p: &Conv2d, x: &[i16], w: &[i8], q: &ChannelQuantS16, y: &mut [i16]) {
    assert!(p.x_zero_point == 0 && p.w_zero_point == 0, "conv2d_s16: symmetric input and weights");
    assert_eq!(w.len(), p.out_channels * p.taps(), "conv2d_s16: weight length");
    q.check(p.out_channels);
    let per_group = p.out_channels / p.groups;
    let ys = p.y_strides;
    for b in 0..p.batch {
        for oy in 0..p.out_h {
            for ox in 0..p.out_w {
                for (oc, w_oc) in w.chunks_exact(p.taps()).enumerate() {
                    let acc = window_dot(p, x, w_oc, (b, oc / per_group, oy, ox));
                    y[b * ys.n + oy * ys.h + ox * ys.w + oc * ys.c] =
                        q.output(oc, acc, p.y_zero_point, p.act_min, p.act_max);
                }
            }
        }
    }
}

/// 16x8 depthwise convolution ([`Conv2d`] with `groups == in_channels`, a channel multiplier;
/// 1HWO weights as for [`depthwise_conv2d`](crate::quant::depthwise_conv2d)), with the output
/// stage of [`conv2d_s16`]. No scratch.
pub fn depthwise_conv2d_s16(p: &Conv2d, x: &[i16], w: &[i8], q: &ChannelQuantS16, y: &mut [i16]) {
    assert!(p.x_zero_point == 0 && p.w_zero_point == 0, "depthwise_conv2d_s16: symmetric input and weights");
    assert_eq!(p.groups, p.in_channels, "depthwise_conv2d_s16: groups == in_channels");
    assert_eq!(w.len(), p.kernel_h * p.kernel_w * p.out_channels, "depthwise_conv2d_s16: weight length");
    q.check(p.out_channels);
    let multiplier = p.out_channels / p.in_channels;
    let (xs, ys) = (p.x_strides, p.y_strides);
    for b in 0..p.batch {
        for oy in 0..p.out_h {
            for ox in 0..p.out_w {
                for o in 0..p.out_channels {
                    let mut acc = 0i64;
                    for ky in 0..p.kernel_h {
                        let Some(iy) = p.input_row(oy, ky) else { continue };
                        for kx in 0..p.kernel_w {
                            if let Some(ix) = p.input_col(ox, kx) {
                                let xv = x[b * xs.n + (o / multiplier) * xs.c + iy * xs.h + ix * xs.w];
                                acc += w[(ky * p.kernel_w + kx) * p.out_channels + o] as i64 * xv as i64;
                            }
                        }
                    }
                    y[b * ys.n + oy * ys.h + ox * ys.w + o * ys.c] =
                        q.output(o, acc, p.y_zero_point, p.act_min, p.act_max);
                }
            }
        }
    }
}

/// 16x8 fully connected layer: `y[b][o] = requant(sum_i w[o][i] * x[b][i] + bias[o]) +
/// y_zero_point`, clamped ([`FullyConnected`]'s geometry, weights `[out, in]`; `w_zero_point`
/// must be 0).
pub fn fully_connected_s16(p: &FullyConnected, x: &[i16], w: &[i8], q: &ChannelQuantS16, y: &mut [i16]) {
    assert_eq!(p.w_zero_point, 0, "fully_connected_s16: symmetric weights");
    assert_eq!(w.len(), p.in_features * p.out_features, "fully_connected_s16: weight length");
    q.check(p.out_features);
    for (xb, yb) in x.chunks_exact(p.in_features).zip(y.chunks_exact_mut(p.out_features)).take(p.batch) {
        for (o, (w_o, yv)) in w.chunks_exact(p.in_features).zip(yb.iter_mut()).enumerate() {
            let acc: i64 = w_o.iter().zip(xb).map(|(&wv, &xv)| wv as i64 * xv as i64).sum();
            *yv = q.output(o, acc, p.y_zero_point, p.act_min, p.act_max);
        }
    }
}
