//! Pooling, means, softmax and layer normalization: max pooling keeps its input's quantization (a requantization after
//! it when the output's differs: the maximum commutes with it), average pooling over the whole
//! input and ReduceMean rescale in one multiplier (TFLite MEAN), other average pools average in the
//! input's quantization, softmax writes TFLite's fixed 1/256 quantization, and layer
//! normalization runs in integers straight into the output's quantization.

use sramfit_runtime_min::quant as rtq;

use super::geometry::{hw, Window};
use super::{Call, Walk};
use crate::ir::{Op, TensorId};
use crate::ops::pool::PoolKind;
use crate::ops::qlayer_norm::QLayerNorm;
use crate::ops::qmean::QMean;
use crate::ops::qparams::Convention;
use crate::ops::qpool::QPool;
use crate::ops::qsoftmax::QSoftmax;
use crate::ops::requantize::Requantize;
use crate::tensor::Data;

/// MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool (and QLinearAveragePool,
/// QLinearGlobalAveragePool) over 1 or 2 spatial axes of NCHW.
pub(super) fn pool(w: &mut Walk<'_>, c: &Call<'_>) -> Result<Vec<TensorId>, String> {
    let (x, xq) = c.act(0)?;
    let xs = w.shape(x);
    if !(3..=4).contains(&xs.len()) {
        return Err(format!("pooling of {xs:?} (1-D and 2-D NCHW are supported)"));
    }
    if c.node.output.len() > 1 {
        return Err("MaxPool's indices output is not supported".into());
    }
    let a = c.attrs();
    if a.int("channels_last", 0) != 0 {
        return Err("channels_last (NHWC) pooling is not supported".into());
    }
    let global = c.op.starts_with("Global");
    let kernel: Vec<usize> = match a.ints("kernel_shape") {
        _ if global => xs[2..].to_vec(),
        Some(k) => k.iter().map(|&v| v as usize).collect(),
        None => return Err("no kernel_shape".into()),
    };
    let win = if global {
        Window::new(&super::onnx::Attrs(&[]), &xs[2..], &kernel, false)?
    } else {
        Window::new(&a, &xs[2..], &kernel, a.int("ceil_mode", 0) != 0)?
    };
    let mut out_shape = xs[..2].to_vec();
    out_shape.extend(&win.out);
    let max = c.op.contains("MaxPool");
    let padded = win.pads_begin.iter().chain(&win.pads_end).any(|&p| p != 0);
    if !max && !padded && win.kernel == xs[2..] {
        // A mean over the whole plane: the rescaling and 1 / count in one multiplier.
        let op = QMean::new((xs[0] * xs[1], xs[2..].iter().product(), 1), xq, c.out().q, Convention::Onnx)?;
        w.unclamped(c)?;
        return Ok(vec![w.step(c, Op::QMean(op), vec![x], out_shape)]);
    }
    let (in_h, in_w) = hw(&xs[2..], 1);
    let (out_h, out_w) = hw(&win.out, 1);
    let (kernel_h, kernel_w) = hw(&win.kernel, 1);
    let (stride_h, stride_w) = hw(&win.strides, 1);
    let (dilation_h, dilation_w) = hw(&win.dilations, 1);
    let (pad_top, pad_left) = hw(&win.pads_begin, 0);
    let (pad_bottom, pad_right) = hw(&win.pads_end, 0);
    let unset = rtq::ImageStrides { n: 0, c: 0, h: 0, w: 0 };
    let geometry = rtq::Pool2d {
        batch: xs[0],
        channels: xs[1],
        in_h,
        in_w,
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
        pad_bottom,
        pad_right,
        count_include_pad: a.int("count_include_pad", 0) != 0,
        x_strides: unset,
        y_strides: unset,
        zero_point: 0,
        act_min: 0,
        act_max: 0,
    };
    let kind = if max { PoolKind::Max } else { PoolKind::Avg };
    let clamp = if c.out().q.same_as(&xq) { c.out().clamp } else { super::UNBOUNDED };
    // onnxruntime rounds averages to nearest, ties to even.
    let op = QPool::new(kind, geometry, xq, clamp, Convention::Onnx).with_half_even_rounding();
    w.keeping(c, 0, xq, out_shape, |w, y| w.push(c.node, Op::QPool(op), vec![x], y))
}

/// ReduceMean over adjacent axes (`axes` an attribute, or input 1 from opset 18).
pub(super) fn reduce_mean(w: &mut Walk<'_>, c: &Call<'_>) -> Result<Vec<TensorId>, String> {
    let (x, xq) = c.act(0)?;
    let xs = w.shape(x);
    let a = c.attrs();
    let axes: Vec<i64> = match (a.ints("axes"), c.konst(1)) {
        (Some(v), _) => v,
        (None, Some(k)) => k.ints()?.to_vec(),
        (None, None) => (0..xs.len() as i64).collect(),
    };
    let mut axes = axes.iter().map(|&v| axis(v, xs.len())).collect::<Result<Vec<_>, _>>()?;
    axes.sort_unstable();
    axes.dedup();
    let (Some(&first), Some(&last)) = (axes.first(), axes.last()) else {
        return Err(format!("a mean over no axis of {xs:?}"));
    };
    if last - first + 1 != axes.len() {
        return Err(format!("a mean over the axes {axes:?} (adjacent axes are supported)"));
    }
    let keep = a.int("keepdims", 1) != 0;
    let out_shape: Vec<usize> =
        (0..xs.len()).filter_map(|i| if axes.contains(&i) { keep.then_some(1) } else { Some(xs[i]) }).collect();
    let (outer, reduce, inner) =
        (xs[..first].iter().product(), xs[first..=last].iter().product(), xs[last + 1..].iter().product());
    let op = QMean::new((outer, reduce, inner), xq, c.out().q, Convention::Onnx)?;
    w.unclamped(c)?;
    Ok(vec![w.step(c, Op::QMean(op), vec![x], out_shape)])
}

/// Softmax along one axis (opset 13), or over the axes from `axis` on (before opset 13, and
/// QLinearSoftmax with `opset` below 13), straight into the output's scale when its zero point is
/// the type's minimum (TFLite's 1/256, ONNX QDQ's 1/255), else in TFLite's quantization, then
/// requantized.
pub(super) fn softmax(w: &mut Walk<'_>, c: &Call<'_>) -> Result<Vec<TensorId>, String> {
    let (x, xq) = c.act(0)?;
    let xs = w.shape(x);
    let a = c.attrs();
    let opset = a.int("opset", w.opset);
    let at = axis(a.int("axis", if opset >= 13 { -1 } else { 1 }), xs.len())?;
    let (reduced_to, inner) = if opset >= 13 { (at + 1, xs[at + 1..].iter().product()) } else { (xs.len(), 1) };
    let (outer, len) = (xs[..at].iter().product(), xs[at..reduced_to].iter().product());
    let (lo, hi) = c.out().clamp;
    if lo > 0.0 || hi < 1.0 {
        return Err("a Clip after a softmax that cuts into [0, 1]".into());
    }
    let out = c.out().q;
    let direct = QSoftmax::output(out.dtype, out.scale);
    let y = if direct.zero_point == out.zero_point { direct } else { QSoftmax::output(out.dtype, 1.0 / 256.0) };
    let op = QSoftmax::new((outer, len, inner), 1.0, (xq, y), Convention::Onnx);
    w.keeping(c, 0, y, xs.clone(), |w, t| w.push(c.node, Op::QSoftmax(op), vec![x], t))
}

/// LayerNormalization over the axes from `axis` on (ONNX's default -1), with constant scale and
/// optional bias of the normalized shape, in integer arithmetic ([`QLayerNorm`]).
pub(super) fn layer_norm(w: &mut Walk<'_>, c: &Call<'_>) -> Result<Vec<TensorId>, String> {
    let (x, xq) = c.act(0)?;
    let xs = w.shape(x);
    let a = c.attrs();
    let at = axis(a.int("axis", -1), xs.len())?;
    let (rows, len) = (xs[..at].iter().product(), xs[at..].iter().product());
    if c.node.output.len() > 1 {
        return Err("a LayerNormalization whose mean or inverse deviation is read".into());
    }
    let scale = c.reals(1, len)?;
    let bias = if c.operands.len() > 2 { c.reals(2, len)? } else { vec![0.0; len] };
    w.unclamped(c)?;
    let (op, consts) = QLayerNorm::new((rows, len), (xq, c.out().q), (&scale, &bias), a.float("epsilon", 1e-5) as f64)?;
    let [gains, offsets] = <[Data; 2]>::try_from(consts).map_err(|_| "two constants")?;
    let gains = w.constant_tensor(c.node, "gains", vec![len], gains);
    let offsets = w.constant_tensor(c.node, "offsets", vec![len], offsets);
    Ok(vec![w.step(c, Op::QLayerNorm(op), vec![x, gains, offsets], xs)])
}

/// A possibly negative axis of a rank-`rank` tensor.
pub(super) fn axis(a: i64, rank: usize) -> Result<usize, String> {
    let v = if a < 0 { a + rank as i64 } else { a };
    usize::try_from(v).ok().filter(|&v| v < rank).ok_or_else(|| format!("axis {a} of a rank-{rank} tensor"))
}

impl Walk<'_> {
    /// Appends the step `op` of `call` reading `inputs` into output 0 (of `shape`).
    pub(super) fn step(&mut self, call: &Call<'_>, op: Op, inputs: Vec<TensorId>, shape: Vec<usize>) -> TensorId {
        let y = self.output(call, 0, shape);
        self.push(call.node, op, inputs, y);
        y
    }

    /// Output `i` of `call` written by `write` in the quantization `q` (the input's, for a step
    /// that moves or compares values; the kernel's own, for softmax): straight into the output
    /// when it is quantized so, else into a tensor requantized after it.
    pub(super) fn keeping(
        &mut self,
        call: &Call<'_>,
        i: usize,
        q: crate::ops::qparams::QParams,
        shape: Vec<usize>,
        write: impl FnOnce(&mut Self, TensorId),
    ) -> Result<Vec<TensorId>, String> {
        let out = call.outs[i];
        if out.q.same_as(&q) {
            let y = self.output(call, i, shape);
            write(self, y);
            return Ok(vec![y]);
        }
        self.unclamped(call)?;
        let name = format!("{}.unrequantized{i}", super::node_name(call.node));
        let t = self.activation(name, shape.clone(), q);
        write(self, t);
        let y = self.output(call, i, shape.clone());
        let len = shape.iter().product();
        self.push(call.node, Op::Requantize(Requantize::new(len, q, out.q, Convention::Onnx)?), vec![t], y);
        Ok(vec![y])
    }

    /// Refuses a fused Relu / Clip that would cut into the output's range: the step has no clamp.
    pub(super) fn unclamped(&self, call: &Call<'_>) -> Result<(), String> {
        let out = call.out();
        match out.q.clamp(out.clamp) == out.q.range() {
            true => Ok(()),
            false => Err("a Relu or Clip after this operator (it has no output clamp)".into()),
        }
    }
}
