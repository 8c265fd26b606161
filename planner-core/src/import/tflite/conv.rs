//! CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED and BATCH_MATMUL: TFLite's layouts (NHWC activations, OHWI,
//! 1HWO and `[out, in]` weights) and TFLite Micro's multipliers; on int16 activations (TFLite's
//! 16x8 mode) the first three with `int64` biases.

use sramfit_runtime_min::quant as rtq;

use super::{fused, OpCall, Walk};
use crate::ir::Op;
use crate::ops::lowering::permutation;
use crate::ops::qconv::QConv;
use crate::ops::qfully_connected::QFullyConnected;
use crate::ops::qmatmul::QMatMul;
use crate::ops::qparams::{Convention, QParams, QWeights};
use crate::tensor::{DType, Quant};
use tract_tflite::tflite;

/// The window of a TFLite `Padding` along one axis: `(output extent, padding before)`, as TFLite's
/// `ComputePaddingHeightWidth` (SAME: `ceil(in / stride)` outputs, half the total padding before,
/// rounded down; VALID: no padding).
fn window(
    padding: tflite::Padding,
    input: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
) -> Result<(usize, usize), String> {
    if stride == 0 || dilation == 0 || kernel == 0 {
        return Err("a zero stride, dilation or filter extent".into());
    }
    let span = (kernel - 1) * dilation + 1;
    match padding {
        tflite::Padding::SAME => {
            let out = input.div_ceil(stride);
            let total = ((out.max(1) - 1) * stride + span).saturating_sub(input);
            Ok((out, total / 2))
        }
        tflite::Padding::VALID if input >= span => Ok(((input - span) / stride + 1, 0)),
        tflite::Padding::VALID => Err(format!("a VALID window of {span} over an extent of {input}")),
        other => Err(format!("padding {}", other.variant_name().unwrap_or("unknown"))),
    }
}

/// An NHWC shape as `(n, h, w, c)`.
pub(super) fn nhwc(shape: &[usize]) -> Result<(usize, usize, usize, usize), String> {
    match *shape {
        [n, h, w, c] => Ok((n, h, w, c)),
        _ => Err(format!("an input of shape {shape:?} (NHWC, rank 4, expected)")),
    }
}

/// A TFLite stride, dilation or window extent: positive.
fn positive(v: i32, what: &str) -> Result<usize, String> {
    usize::try_from(v).ok().filter(|&v| v > 0).ok_or_else(|| format!("a {what} of {v}"))
}

/// The geometry of a CONV_2D or DEPTHWISE_CONV_2D from its options and its filter's shape, over
/// an NHWC input: what the integer and the float lowerings share.
pub(super) struct ConvWindow {
    /// DEPTHWISE_CONV_2D (filter `[1, kh, kw, out]`) rather than CONV_2D (`[out, kh, kw, in / groups]`).
    pub depthwise: bool,
    /// Output channels.
    pub out_channels: usize,
    /// Groups (the input channels for a depthwise convolution).
    pub groups: usize,
    /// `(kernel_h, kernel_w)`.
    pub kernel: (usize, usize),
    /// `(stride_h, stride_w)`.
    pub stride: (usize, usize),
    /// `(dilation_h, dilation_w)`.
    pub dilation: (usize, usize),
    /// `(out_h, out_w)`.
    pub out: (usize, usize),
    /// `(pad_top, pad_left)`.
    pub pad: (usize, usize),
    /// The fused activation.
    pub activation: tflite::ActivationFunctionType,
}

impl ConvWindow {
    /// The window of `c` over an input of `(in_h, in_w, in_c)` with a filter of shape `ws`.
    pub fn of(c: &OpCall<'_>, (in_h, in_w, in_c): (usize, usize, usize), ws: &[usize]) -> Result<ConvWindow, String> {
        let [o, kh, kw, i] = ws[..] else { return Err(format!("a filter of shape {ws:?}")) };
        let depthwise = c.op == "DEPTHWISE_CONV_2D";
        let (padding, stride, dilation, activation) = if depthwise {
            let opt = c.table.builtin_options_as_depthwise_conv_2_doptions().ok_or("no DepthwiseConv2DOptions")?;
            let s = (opt.stride_h(), opt.stride_w());
            let d = (opt.dilation_h_factor(), opt.dilation_w_factor());
            (opt.padding(), s, d, opt.fused_activation_function())
        } else {
            let opt = c.table.builtin_options_as_conv_2_doptions().ok_or("no Conv2DOptions")?;
            let s = (opt.stride_h(), opt.stride_w());
            let d = (opt.dilation_h_factor(), opt.dilation_w_factor());
            (opt.padding(), s, d, opt.fused_activation_function())
        };
        let stride = (positive(stride.0, "stride")?, positive(stride.1, "stride")?);
        let dilation = (positive(dilation.0, "dilation")?, positive(dilation.1, "dilation")?);
        let (out_channels, groups) = if depthwise {
            if o != 1 || in_c == 0 || !i.is_multiple_of(in_c) {
                return Err(format!("a depthwise filter of shape {ws:?} for {in_c} input channels"));
            }
            (i, in_c)
        } else {
            if i == 0 || !in_c.is_multiple_of(i) || !o.is_multiple_of(in_c / i) {
                return Err(format!("a filter of shape {ws:?} for {in_c} input channels"));
            }
            (o, in_c / i)
        };
        let (out_h, pad_top) = window(padding, in_h, kh, stride.0, dilation.0)?;
        let (out_w, pad_left) = window(padding, in_w, kw, stride.1, dilation.1)?;
        Ok(ConvWindow {
            depthwise,
            out_channels,
            groups,
            kernel: (kh, kw),
            stride,
            dilation,
            out: (out_h, out_w),
            pad: (pad_top, pad_left),
            activation,
        })
    }
}

/// The geometry of an AVERAGE_POOL_2D or MAX_POOL_2D from its options, over an NHWC input.
pub(super) struct PoolWindow {
    /// `(kernel_h, kernel_w)`.
    pub kernel: (usize, usize),
    /// `(stride_h, stride_w)`.
    pub stride: (usize, usize),
    /// `(out_h, out_w)`.
    pub out: (usize, usize),
    /// `(pad_top, pad_left)`.
    pub pad: (usize, usize),
    /// The fused activation.
    pub activation: tflite::ActivationFunctionType,
}

impl PoolWindow {
    /// The window of `c` over an input of `(in_h, in_w)`.
    pub fn of(c: &OpCall<'_>, (in_h, in_w): (usize, usize)) -> Result<PoolWindow, String> {
        let opt = c.table.builtin_options_as_pool_2_doptions().ok_or("no Pool2DOptions")?;
        let kernel = (positive(opt.filter_height(), "window")?, positive(opt.filter_width(), "window")?);
        let stride = (positive(opt.stride_h(), "stride")?, positive(opt.stride_w(), "stride")?);
        let (out_h, pad_top) = window(opt.padding(), in_h, kernel.0, stride.0, 1)?;
        let (out_w, pad_left) = window(opt.padding(), in_w, kernel.1, stride.1, 1)?;
        let activation = opt.fused_activation_function();
        Ok(PoolWindow { kernel, stride, out: (out_h, out_w), pad: (pad_top, pad_left), activation })
    }
}

/// The 8-bit weights of tensor `t`, per-tensor or per output channel along `out_axis`.
fn weights(w: &Walk<'_>, t: i32, out_axis: usize, channels: usize) -> Result<QWeights, String> {
    let name = w.tensor_name(t);
    let values = match w.tensor(t)?.type_() {
        tflite::TensorType::INT8 => w.ints(t)?.iter().map(|&v| v as i8).collect(),
        other => return Err(format!("weights `{name}` are {} (int8 is supported)", super::type_name(other))),
    };
    let (scales, zero_point) = match w.quant(t)? {
        Some(Quant::PerTensor { scale, zero_point }) => (vec![scale], zero_point),
        Some(Quant::PerAxis { axis, scales, zero_points }) if axis == out_axis && scales.len() == channels => {
            let z = zero_points[0];
            if zero_points.iter().any(|&v| v != z) {
                return Err(format!("weights `{name}` have zero points that differ between channels"));
            }
            (scales, z)
        }
        Some(Quant::PerAxis { axis, scales, .. }) => {
            return Err(format!("weights `{name}` have {} scales along axis {axis}", scales.len()))
        }
        None => return Err(format!("weights `{name}` have no quantization parameters")),
    };
    Ok(QWeights { values, scales, zero_point })
}

/// The `int32` bias of input 2, if present (TFLite's, in units of `input scale * weight scale`).
fn bias(w: &Walk<'_>, c: &OpCall<'_>, channels: usize) -> Result<Vec<i32>, String> {
    let Some(t) = c.input(2) else { return Ok(Vec::new()) };
    if w.tensor(t)?.type_() != tflite::TensorType::INT32 {
        return Err(format!("bias `{}` is not int32", w.tensor_name(t)));
    }
    let b: Vec<i32> = w.ints(t)?.iter().map(|&v| v as i32).collect();
    match b.len() {
        n if n == channels => Ok(b),
        n => Err(format!("a bias of {n} values for {channels} channels")),
    }
}

/// The `int64` bias of input 2 of a 16x8 layer, if present. TFLite Micro also takes an `int32`
/// bias there but then accumulates in `int32` and requantizes as the 8-bit layers do: not
/// supported (the converter writes `int64`).
fn bias_s16(w: &Walk<'_>, c: &OpCall<'_>, channels: usize) -> Result<Vec<i64>, String> {
    let Some(t) = c.input(2) else { return Ok(Vec::new()) };
    if w.tensor(t)?.type_() != tflite::TensorType::INT64 {
        return Err(format!(
            "bias `{}` of a 16x8 layer is not int64 (int32 biases are not supported)",
            w.tensor_name(t)
        ));
    }
    let b = w.ints(t)?;
    match b.len() {
        n if n == channels => Ok(b),
        n => Err(format!("a bias of {n} values for {channels} channels")),
    }
}

/// CONV_2D (OHWI weights; grouped when their input channels divide the input's) and
/// DEPTHWISE_CONV_2D (1HWO weights, a channel multiplier).
pub(super) fn conv(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let x = w.act(c, 0)?;
    let xq = QParams::of(&w.graph.tensors[x])?;
    let (batch, in_h, in_w, in_c) = nhwc(&w.graph.tensors[x].shape)?;
    let wt = c.input(1).ok_or("no filter")?;
    let win = ConvWindow::of(c, (in_h, in_w, in_c), &w.shape(wt)?)?;
    let (depthwise, out_c, groups) = (win.depthwise, win.out_channels, win.groups);
    let ((kernel_h, kernel_w), (stride_h, stride_w)) = (win.kernel, win.stride);
    let ((dilation_h, dilation_w), (out_h, out_w), (pad_top, pad_left)) = (win.dilation, win.out, win.pad);
    let out_axis = if depthwise { 3 } else { 0 };
    let mut qw = weights(w, wt, out_axis, out_c)?;
    if depthwise && groups == 1 {
        // One input channel: a standard convolution, whose weights are OHWI (1HWO transposed).
        let ohwi = permutation(&[1, kernel_h, kernel_w, out_c], &[3, 1, 2, 0]);
        qw.values = ohwi.map(|k| qw.values[k]).collect();
    }
    let yq = w.out_q(c, 0)?;
    let unset = rtq::ImageStrides { n: 0, c: 0, h: 0, w: 0 };
    let geometry = rtq::Conv2d {
        batch,
        in_channels: in_c,
        in_h,
        in_w,
        out_channels: out_c,
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
    };
    let (op, consts) = match xq.dtype {
        DType::I16 => QConv::new_s16(geometry, (xq, &qw, yq), &bias_s16(w, c, out_c)?, fused(win.activation)?)?,
        _ => QConv::new(geometry, (xq, &qw, yq), &bias(w, c, out_c)?, fused(win.activation)?, Convention::Tflite)?,
    };
    let y = w.output(c, 0, vec![batch, out_h, out_w, out_c], Some(yq))?;
    w.push_with_constants(c, Op::QConv(op), x, consts, y);
    Ok(())
}

/// FULLY_CONNECTED: `[.., in]` by weights `[out, in]` (DEFAULT format), every leading row one batch.
pub(super) fn fully_connected(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let x = w.act(c, 0)?;
    let xq = QParams::of(&w.graph.tensors[x])?;
    let len = w.graph.tensors[x].len();
    let opt = c.table.builtin_options_as_fully_connected_options().ok_or("no FullyConnectedOptions")?;
    if opt.weights_format() != tflite::FullyConnectedOptionsWeightsFormat::DEFAULT {
        return Err("shuffled FULLY_CONNECTED weights are not supported".into());
    }
    let wt = c.input(1).ok_or("no weights")?;
    let ws = w.shape(wt)?;
    let [out_features, in_features] = ws[..] else { return Err(format!("weights of shape {ws:?}")) };
    if in_features == 0 || !len.is_multiple_of(in_features) {
        return Err(format!("an input of {len} elements for weights {ws:?}"));
    }
    let batch = len / in_features;
    let qw = weights(w, wt, 0, out_features)?;
    let yq = w.out_q(c, 0)?;
    let geometry = rtq::FullyConnected {
        batch,
        in_features,
        out_features,
        w_zero_point: 0,
        y_zero_point: 0,
        act_min: 0,
        act_max: 0,
    };
    let clamp = fused(opt.fused_activation_function())?;
    let (op, consts) = match xq.dtype {
        DType::I16 => QFullyConnected::new_s16(geometry, (xq, &qw, yq), &bias_s16(w, c, out_features)?, clamp)?,
        _ => QFullyConnected::new(geometry, (xq, &qw, yq), &bias(w, c, out_features)?, clamp, Convention::Tflite)?,
    };
    let y = w.output(c, 0, vec![batch, out_features], Some(yq))?;
    w.push_with_constants(c, Op::QFullyConnected(op), x, consts, y);
    Ok(())
}

/// BATCH_MATMUL of two 8-bit tensors (`adj_x` / `adj_y` read an operand transposed, by strides).
pub(super) fn batch_matmul(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let ((a, aq), (b, bq)) = (w.operand(c, 0)?, w.operand(c, 1)?);
    let opt = c.table.builtin_options_as_batch_mat_mul_options().ok_or("no BatchMatMulOptions")?;
    let (adj_x, adj_y) = (opt.adj_x(), opt.adj_y());
    let (mut sa, mut sb) = (w.graph.tensors[a].shape.clone(), w.graph.tensors[b].shape.clone());
    if sa.len() < 2 || sb.len() < 2 {
        return Err(format!("a batch matmul of {sa:?} by {sb:?}"));
    }
    // The product of the operands as stored, read through transposing strides.
    let (ra, rb) = (sa.len(), sb.len());
    if adj_x {
        sa.swap(ra - 2, ra - 1);
    }
    if adj_y {
        sb.swap(rb - 2, rb - 1);
    }
    let yq = w.out_q(c, 0)?;
    let (mut op, shape) =
        QMatMul::new((&sa, &sb), (aq, bq, yq), (f32::NEG_INFINITY, f32::INFINITY), Convention::Tflite)?;
    let p = &mut op.0;
    if adj_x {
        (p.a_row_stride, p.a_col_stride) = (1, p.m);
    }
    if adj_y {
        (p.b_row_stride, p.b_col_stride) = (1, p.k);
    }
    let y = w.output(c, 0, shape, Some(yq))?;
    w.push(c, Op::QMatMul(op), vec![a, b], y);
    Ok(())
}
