//! Convolutions: QDQ Conv and QLinearConv, 1-D and 2-D, any groups; ConvInteger (the `i32`
//! accumulators).

use sramfit_runtime_min::quant as rtq;

use super::geometry::{hw, Window};
use super::weights::{bias, integer_weights, qweights};
use super::{Call, Operand, QConst, Walk};
use crate::ir::{Op, TensorId};
use crate::ops::qconv::QConv;
use crate::ops::qparams::{Convention, QParams};

/// A convolution (1-D or 2-D, any groups; depthwise when groups equal the input channels).
pub(super) fn conv(w: &mut Walk<'_>, c: &Call<'_>) -> Result<Vec<TensorId>, String> {
    let Setup { x, xq, weights, geometry, out_shape } = setup(w, c)?;
    let qw = qweights(weights, 0, geometry.out_channels)?;
    let b = bias(c.operands.get(2), xq.scale, &qw, geometry.out_channels, 1.0)?;
    check_input(w, x, &geometry)?;
    let out = c.out();
    let (op, consts) = QConv::new(geometry, (xq, &qw, out.q), &b, out.clamp, Convention::Onnx)?;
    Ok(vec![w.push_with_constants(c, Op::QConv(op), x, consts, out_shape)])
}

/// ConvInteger: the convolution's `i32` accumulators (weight zero points per output channel
/// folded into the weights).
pub(super) fn conv_integer(w: &mut Walk<'_>, c: &Call<'_>) -> Result<Vec<TensorId>, String> {
    let Setup { x, xq, weights, geometry, out_shape } = setup(w, c)?;
    let qw = integer_weights(weights, 0, geometry.out_channels)?;
    check_input(w, x, &geometry)?;
    let (op, consts) = QConv::accumulator(geometry, xq.zero_point, xq.dtype, &qw)?;
    Ok(vec![w.push_accumulator(c, Op::QConv(op), x, consts, out_shape)])
}

/// What both kinds of convolution read from the call.
struct Setup<'c> {
    x: TensorId,
    xq: QParams,
    weights: &'c QConst,
    geometry: rtq::Conv2d,
    out_shape: Vec<usize>,
}

/// The input, weights, geometry and output shape of a convolution call.
fn setup<'c>(w: &Walk<'_>, c: &'c Call<'_>) -> Result<Setup<'c>, String> {
    let (x, xq) = c.act(0)?;
    let Some(Operand::Weights(weights)) = c.operands.get(1) else {
        return Err("the weights must be quantized constants".into());
    };
    let (xs, ws) = (w.shape(x), weights.values.shape.clone());
    if !(3..=4).contains(&xs.len()) || ws.len() != xs.len() {
        return Err(format!("a convolution of {xs:?} by weights {ws:?} (1-D and 2-D are supported)"));
    }
    let a = c.attrs();
    let groups = a.int("group", 1).max(1) as usize;
    let kernel = ws[2..].to_vec();
    if a.ints("kernel_shape").is_some_and(|k| k.iter().map(|&v| v as usize).ne(kernel.iter().copied())) {
        return Err("kernel_shape disagrees with the weights".into());
    }
    if ws[1].checked_mul(groups) != Some(xs[1]) {
        return Err(format!("weights for {} input channels in {groups} groups, input of {}", ws[1], xs[1]));
    }
    let win = Window::new(&a, &xs[2..], &kernel, false)?;
    let out_channels = ws[0];
    let mut out_shape = vec![xs[0], out_channels];
    out_shape.extend(&win.out);
    let geometry = geometry(xs[0], xs[1], out_channels, groups, &xs[2..], &win);
    Ok(Setup { x, xq, weights, geometry, out_shape })
}

/// The geometry of a 1x1 convolution of `batch` images of one pixel: a matrix product of `[batch,
/// in_channels]` by `[in_channels, out_channels]`.
pub(super) fn pointwise(batch: usize, in_channels: usize, out_channels: usize) -> rtq::Conv2d {
    let win = Window {
        kernel: vec![1],
        strides: vec![1],
        dilations: vec![1],
        pads_begin: vec![0],
        pads_end: vec![0],
        out: vec![1],
    };
    geometry(batch, in_channels, out_channels, 1, &[1], &win)
}

/// The geometry of a convolution over `spatial` (1-D as height 1) with window `win`.
fn geometry(
    batch: usize,
    in_channels: usize,
    out_channels: usize,
    groups: usize,
    spatial: &[usize],
    win: &Window,
) -> rtq::Conv2d {
    let (in_h, in_w) = hw(spatial, 1);
    let (out_h, out_w) = hw(&win.out, 1);
    let (kernel_h, kernel_w) = hw(&win.kernel, 1);
    let (stride_h, stride_w) = hw(&win.strides, 1);
    let (dilation_h, dilation_w) = hw(&win.dilations, 1);
    let (pad_top, pad_left) = hw(&win.pads_begin, 0);
    let unset = rtq::ImageStrides { n: 0, c: 0, h: 0, w: 0 };
    rtq::Conv2d {
        batch,
        in_channels,
        in_h,
        in_w,
        out_channels,
        out_h,
        out_w,
        kernel_h,
        kernel_w,
        stride_h,
        stride_w,
        dilation_h,
        dilation_w,
        pad_top,
        pad_left,
        groups,
        x_strides: unset,
        y_strides: unset,
        x_zero_point: 0,
        w_zero_point: 0,
        y_zero_point: 0,
        act_min: 0,
        act_max: 0,
    }
}

/// Checks that the input tensor holds the elements the geometry reads.
fn check_input(w: &Walk<'_>, x: TensorId, g: &rtq::Conv2d) -> Result<(), String> {
    let xs = w.shape(x);
    if g.in_h * g.in_w * g.in_channels * g.batch != xs.iter().product::<usize>() {
        return Err(format!("input {xs:?} does not match the geometry"));
    }
    Ok(())
}
