//! AVERAGE_POOL_2D, MAX_POOL_2D, MEAN and SOFTMAX.

use sramfit_runtime_min::quant as rtq;

use super::conv::{nhwc, PoolWindow};
use super::{fused, OpCall, Walk};
use crate::ir::Op;
use crate::ops::pool::PoolKind;
use crate::ops::qmean::QMean;
use crate::ops::qparams::{Convention, QParams};
use crate::ops::qpool::QPool;
use crate::ops::qsoftmax::QSoftmax;
use crate::tensor::DType;

/// AVERAGE_POOL_2D and MAX_POOL_2D over NHWC: input and output quantized alike (TFLite's rule);
/// padding positions do not count (TFLite's average rounds to nearest, ties away from zero).
pub(super) fn pool(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let x = w.act(c, 0)?;
    let xq = QParams::of(&w.graph.tensors[x])?;
    let yq = w.out_q(c, 0)?;
    if !xq.same_as(&yq) {
        return Err("input and output quantized differently (TFLite requires them equal)".into());
    }
    let (batch, in_h, in_w, channels) = nhwc(&w.graph.tensors[x].shape)?;
    let win = PoolWindow::of(c, (in_h, in_w))?;
    let ((kernel_h, kernel_w), (stride_h, stride_w)) = (win.kernel, win.stride);
    let ((out_h, out_w), (pad_top, pad_left)) = (win.out, win.pad);
    let unset = rtq::ImageStrides { n: 0, c: 0, h: 0, w: 0 };
    let geometry = rtq::Pool2d {
        batch,
        channels,
        in_h,
        in_w,
        out_h,
        out_w,
        kernel_h,
        kernel_w,
        stride_h,
        stride_w,
        dilation_h: 1,
        dilation_w: 1,
        pad_top,
        pad_left,
        pad_bottom: 0,
        pad_right: 0,
        count_include_pad: false,
        x_strides: unset,
        y_strides: unset,
        zero_point: 0,
        act_min: 0,
        act_max: 0,
    };
    let kind = if c.op == "MAX_POOL_2D" { PoolKind::Max } else { PoolKind::Avg };
    let op = QPool::new(kind, geometry, xq, fused(win.activation)?, Convention::Tflite);
    let y = w.output(c, 0, vec![batch, out_h, out_w, channels], Some(yq))?;
    w.push(c, Op::QPool(op), vec![x], y);
    Ok(())
}

/// MEAN over adjacent axes (TFLite's `QuantizedMeanOrSum`: the sum rescaled once, `1 / count`
/// folded into the multiplier).
pub(super) fn mean(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let x = w.act(c, 0)?;
    let xq = QParams::of(&w.graph.tensors[x])?;
    let xs = w.graph.tensors[x].shape.clone();
    let axes_t = c.input(1).ok_or("no axes")?;
    let mut axes = (w.ints(axes_t)?.iter())
        .map(|&a| {
            let a = if a < 0 { a + xs.len() as i64 } else { a };
            usize::try_from(a)
                .ok()
                .filter(|&a| a < xs.len())
                .ok_or_else(|| format!("axis {a} of a rank-{} input", xs.len()))
        })
        .collect::<Result<Vec<usize>, _>>()?;
    axes.sort_unstable();
    axes.dedup();
    let (&first, &last) = (axes.first().ok_or("a mean over no axes")?, axes.last().expect("not empty"));
    if last - first + 1 != axes.len() {
        return Err(format!("a mean over the axes {axes:?} (adjacent axes are supported)"));
    }
    let (outer, reduce, inner) =
        (xs[..first].iter().product(), xs[first..=last].iter().product(), xs[last + 1..].iter().product::<usize>());
    let yq = w.out_q(c, 0)?;
    let op = QMean::new((outer, reduce, inner), xq, yq, Convention::Tflite)?;
    let y = w.output(c, 0, vec![outer, inner], Some(yq))?;
    w.push(c, Op::QMean(op), vec![x], y);
    Ok(())
}

/// SOFTMAX along the last axis, into TFLite's fixed output quantization (scale 1/256, zero point
/// the type's minimum; int16: scale 1/32768, zero point 0).
pub(super) fn softmax(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let x = w.act(c, 0)?;
    let xq = QParams::of(&w.graph.tensors[x])?;
    let xs = w.graph.tensors[x].shape.clone();
    let beta = c.table.builtin_options_as_softmax_options().map_or(1.0, |o| o.beta());
    let yq = w.out_q(c, 0)?;
    if yq.zero_point != QSoftmax::output(yq.dtype, yq.scale).zero_point || yq.dtype != xq.dtype {
        return Err(format!(
            "a softmax output quantized with zero point {} (TFLite's is the type's minimum)",
            yq.zero_point
        ));
    }
    let len = *xs.last().ok_or("a softmax of a scalar")?;
    let rows = xs.iter().product::<usize>() / len.max(1);
    if xq.dtype == DType::I16 {
        // TFLite Micro requires an output scale of 1/32768 (within 0.1%).
        if (yq.scale - 1.0 / 32768.0).abs() > 0.001 / 32768.0 {
            return Err(format!("an int16 softmax output of scale {} (TFLite's is 1/32768)", yq.scale));
        }
        let (op, tables) = QSoftmax::new_s16(rows, len, beta, xq)?;
        let tables = w.graph.add_const(format!("{}.tables", c.name), vec![tables.len()], tables);
        let y = w.output(c, 0, xs, Some(yq))?;
        w.push(c, Op::QSoftmax(op), vec![x, tables], y);
        return Ok(());
    }
    let op = QSoftmax::new((rows, len, 1), beta, (xq, yq), Convention::Tflite);
    let y = w.output(c, 0, xs, Some(yq))?;
    w.push(c, Op::QSoftmax(op), vec![x], y);
    Ok(())
}
