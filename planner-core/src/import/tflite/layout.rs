//! Operators that move values: RESHAPE, SQUEEZE, EXPAND_DIMS (views), CONCATENATION, PAD /
//! PADV2, TRANSPOSE, STRIDED_SLICE.

use super::{OpCall, Walk};
use crate::ir::Op;
use crate::ops::copy::{self, Copies, StridedCopy};
use crate::ops::qconcat::QConcat;
use crate::ops::qpad::QPad;
use crate::ops::qparams::{Convention, QParams};
use crate::ops::view::View;
use crate::tensor::{strides_of, DType};

/// The input's bytes under the output's declared shape and quantization (TFLite reinterprets
/// them; the converter writes the input's).
pub(super) fn view(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let x = w.act(c, 0)?;
    let shape = w.out_shape(c, 0)?;
    let q = match w.graph.tensors[x].dtype {
        DType::I8 | DType::U8 | DType::I16 => Some(w.out_q(c, 0).or_else(|_| QParams::of(&w.graph.tensors[x]))?),
        other => return Err(format!("a view of a {} tensor", other.rust_name())),
    };
    let y = w.output(c, 0, shape, q)?;
    w.push(c, Op::View(View), vec![x], y);
    Ok(())
}

/// A possibly negative axis of a rank-`rank` tensor.
fn axis(a: i64, rank: usize) -> Result<usize, String> {
    let v = if a < 0 { a + rank as i64 } else { a };
    usize::try_from(v).ok().filter(|&v| v < rank).ok_or_else(|| format!("axis {a} of a rank-{rank} tensor"))
}

/// CONCATENATION: copies (which concat elision can remove) when every input is quantized like
/// the output, else TFLite's concatenation with rescaling of each input into its part.
pub(super) fn concat(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let opt = c.table.builtin_options_as_concatenation_options().ok_or("no ConcatenationOptions")?;
    if opt.fused_activation_function() != tract_tflite::tflite::ActivationFunctionType::NONE {
        return Err("a fused activation after a concatenation".into());
    }
    let inputs = (0..c.inputs.len()).map(|i| w.operand(c, i)).collect::<Result<Vec<_>, _>>()?;
    let shapes: Vec<Vec<usize>> = inputs.iter().map(|&(t, _)| w.graph.tensors[t].shape.clone()).collect();
    let first = shapes.first().ok_or("a concatenation of nothing")?;
    let at = axis(opt.axis() as i64, first.len())?;
    let mut out = first.clone();
    for s in &shapes[1..] {
        if s.len() != out.len() || (0..s.len()).any(|i| i != at && s[i] != out[i]) {
            return Err(format!("a concatenation of {first:?} and {s:?} along axis {at}"));
        }
        out[at] += s[at];
    }
    let yq = w.out_q(c, 0)?;
    let op = if inputs.iter().all(|(_, q)| q.same_as(&yq)) {
        Op::Copy(copy::concat_copies(&shapes, at, &out))
    } else {
        let qs: Vec<QParams> = inputs.iter().map(|&(_, q)| q).collect();
        Op::QConcat(QConcat::new(at, &shapes, (&qs, yq), Convention::Tflite)?)
    };
    let y = w.output(c, 0, out, Some(yq))?;
    w.push(c, op, inputs.iter().map(|&(t, _)| t).collect(), y);
    Ok(())
}

/// PAD (with the output's zero point, TFLite's padding value) and PADV2 (with its constant).
pub(super) fn pad(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let x = w.act(c, 0)?;
    let xq = QParams::of(&w.graph.tensors[x])?;
    let xs = w.graph.tensors[x].shape.clone();
    let yq = w.out_q(c, 0)?;
    if !xq.same_as(&yq) {
        return Err("input and output quantized differently (TFLite requires them equal)".into());
    }
    let pads = w.ints(c.input(1).ok_or("no paddings")?)?;
    if pads.len() != 2 * xs.len() {
        return Err(format!("{} paddings for a rank-{} input", pads.len(), xs.len()));
    }
    let mut begin = Vec::with_capacity(xs.len());
    let mut out = Vec::with_capacity(xs.len());
    for (i, &d) in xs.iter().enumerate() {
        let (b, e) = (pads[2 * i], pads[2 * i + 1]);
        if b < 0 || e < 0 {
            return Err("negative paddings".into());
        }
        begin.push(b as isize);
        out.push(d + (b + e) as usize);
    }
    let value = match c.input(2) {
        Some(t) => *w.ints(t)?.first().ok_or("an empty pad value")? as i32,
        None => yq.zero_point,
    };
    let op = Op::QPad(QPad { in_shape: xs, pads_begin: begin, out_shape: out.clone(), value, dtype: xq.dtype });
    let y = w.output(c, 0, out, Some(yq))?;
    w.push(c, op, vec![x], y);
    Ok(())
}

/// TRANSPOSE by a constant permutation: a strided copy.
pub(super) fn transpose(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let x = w.act(c, 0)?;
    let xq = QParams::of(&w.graph.tensors[x])?;
    let (copy, out) = transpose_copy(w, c, &w.graph.tensors[x].shape.clone())?;
    let y = w.output(c, 0, out, Some(xq))?;
    w.push(c, Op::Copy(copy), vec![x], y);
    Ok(())
}

/// The strided copy of a TRANSPOSE of an input of TFLite shape `xs` (negative axes count from the
/// end, as TFLite's), and its output shape.
pub(super) fn transpose_copy(w: &Walk<'_>, c: &OpCall<'_>, xs: &[usize]) -> Result<(Copies, Vec<usize>), String> {
    let perm = (w.ints(c.input(1).ok_or("no permutation")?)?.iter())
        .map(|&a| axis(a, xs.len()))
        .collect::<Result<Vec<usize>, _>>()?;
    let mut sorted = perm.clone();
    sorted.sort_unstable();
    if sorted != (0..xs.len()).collect::<Vec<_>>() {
        return Err(format!("permutation {perm:?} of a rank-{} tensor", xs.len()));
    }
    let out: Vec<usize> = perm.iter().map(|&p| xs[p]).collect();
    Ok((copy::transpose(&perm, xs, &out), out))
}

/// STRIDED_SLICE with constant begin, end and strides (masks as TFLite's `StridedSlice`;
/// `ellipsis_mask` and `new_axis_mask` are not supported): a strided copy.
pub(super) fn strided_slice(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let x = w.act(c, 0)?;
    let xq = QParams::of(&w.graph.tensors[x])?;
    let copy = strided_slice_copy(w, c, &w.graph.tensors[x].shape.clone())?;
    // shrink_axis_mask only drops extent-1 axes: the declared output shape is a view of `shape`.
    let y = w.output(c, 0, copy.shape.clone(), Some(xq))?;
    w.push(c, Op::Copy(Copies(vec![copy])), vec![x], y);
    Ok(())
}

/// The strided copy of a STRIDED_SLICE of an input of TFLite shape `xs`.
pub(super) fn strided_slice_copy(w: &Walk<'_>, c: &OpCall<'_>, xs: &[usize]) -> Result<StridedCopy, String> {
    let opt = c.table.builtin_options_as_strided_slice_options().ok_or("no StridedSliceOptions")?;
    if opt.ellipsis_mask() != 0 || opt.new_axis_mask() != 0 {
        return Err("STRIDED_SLICE with an ellipsis or new-axis mask".into());
    }
    let list = |i: usize| -> Result<Vec<i64>, String> { w.ints(c.input(i).ok_or("missing begin, end or strides")?) };
    let (begin, end, steps) = (list(1)?, list(2)?, list(3)?);
    if begin.len() != xs.len() || end.len() != xs.len() || steps.len() != xs.len() {
        return Err(format!("begin, end and strides for a rank-{} input", xs.len()));
    }
    let (begin_mask, end_mask) = (opt.begin_mask(), opt.end_mask());
    let strides = strides_of(xs);
    let mut shape = Vec::with_capacity(xs.len());
    let mut src_strides = Vec::with_capacity(xs.len());
    let mut src_offset = 0isize;
    for k in 0..xs.len() {
        let (dim, step) = (xs[k] as i64, steps[k]);
        if step == 0 {
            return Err("a zero stride".into());
        }
        let wrap = |v: i64| if v < 0 { v + dim } else { v };
        let (lo, hi) = if step > 0 { (0, dim) } else { (-1, dim - 1) };
        let start = if begin_mask & (1 << k) != 0 {
            if step > 0 {
                0
            } else {
                dim - 1
            }
        } else {
            wrap(begin[k]).clamp(lo, hi)
        };
        let stop = if end_mask & (1 << k) != 0 {
            if step > 0 {
                dim
            } else {
                -1
            }
        } else {
            wrap(end[k]).clamp(lo, hi)
        };
        let count = if step > 0 { (stop - start).max(0) } else { (start - stop).max(0) };
        shape.push(((count + step.abs() - 1) / step.abs()) as usize);
        src_offset += start.max(0) as isize * strides[k] as isize;
        src_strides.push(strides[k] as isize * step as isize);
    }
    let empty = shape.contains(&0);
    Ok(StridedCopy {
        input: 0,
        shape: shape.clone(),
        src_offset: if empty { 0 } else { src_offset as usize },
        src_strides,
        dst_offset: 0,
        dst_strides: copy::dense(&shape),
    })
}
