//! Operators that move values without changing them: views (Reshape, Flatten, Squeeze,
//! Unsqueeze, Identity), Transpose, Concat, Split, Slice and constant Pad (any mode on raw
//! integers). Each keeps its input's
//! quantization; a requantization follows where the output's differs (a concatenation of inputs
//! quantized differently requantizes each into its part instead).

use sramfit_runtime_min as rt;
use tract_onnx::pb;

use super::onnx::{Attrs, Konst};
use super::reduce::axis;
use super::{Call, Operand, Value, Walk};
use crate::ir::{Op, TensorId, TensorKind};
use crate::ops::copy::{self, Copies, StridedCopy};
use crate::ops::pad::PadOp;
use crate::ops::qconcat::QConcat;
use crate::ops::qpad::QPad;
use crate::ops::qparams::Convention;
use crate::ops::view::View;
use crate::tensor::strides_of;

/// Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout: the input's bytes under another shape.
pub(super) fn view(w: &mut Walk<'_>, c: &Call<'_>) -> Result<Vec<TensorId>, String> {
    let (x, xq) = c.act(0)?;
    let xs = w.shape(x);
    let a = c.attrs();
    let axes = || -> Result<Option<Vec<i64>>, String> {
        Ok(match (a.ints("axes"), c.konst(1)) {
            (Some(v), _) => Some(v),
            (None, Some(k)) => Some(k.ints()?.to_vec()),
            (None, None) => None,
        })
    };
    let out: Vec<usize> = match c.op {
        "Reshape" => {
            let k = c.konst(1).ok_or("Reshape needs a constant shape")?;
            reshape(&xs, k.ints()?, a.int("allowzero", 0) != 0)?
        }
        "Flatten" => {
            let at = a.int("axis", 1);
            let at = if at < 0 { at + xs.len() as i64 } else { at } as usize;
            vec![xs[..at.min(xs.len())].iter().product(), xs[at.min(xs.len())..].iter().product()]
        }
        "Squeeze" => match axes()? {
            None => xs.iter().copied().filter(|&d| d != 1).collect(),
            Some(v) => {
                let v = v.iter().map(|&a| axis(a, xs.len())).collect::<Result<Vec<_>, _>>()?;
                (0..xs.len()).filter(|i| !v.contains(i)).map(|i| xs[i]).collect()
            }
        },
        "Unsqueeze" => {
            let v = axes()?.ok_or("Unsqueeze without axes")?;
            let rank = xs.len() + v.len();
            let v = v.iter().map(|&a| axis(a, rank)).collect::<Result<Vec<_>, _>>()?;
            let mut rest = xs.iter();
            (0..rank).map(|i| if v.contains(&i) { 1 } else { rest.next().copied().unwrap_or(1) }).collect()
        }
        _ => xs.clone(),
    };
    if elements(&out) != elements(&xs) {
        return Err(format!("a view of {xs:?} as {out:?}"));
    }
    w.keeping(c, 0, xq, out, |w, y| w.push(c.node, Op::View(View), vec![x], y))
}

/// ONNX Reshape's target shape: 0 copies the input's extent (unless `allowzero`), -1 is inferred.
fn reshape(input: &[usize], target: &[i64], allowzero: bool) -> Result<Vec<usize>, String> {
    let total = elements(input).ok_or("an input of more elements than an address space holds")?;
    let mut out: Vec<usize> = (target.iter().enumerate())
        .map(|(i, &d)| match d {
            0 if !allowzero => {
                input.get(i).copied().ok_or_else(|| format!("0 at axis {i} of a rank-{} input", input.len()))
            }
            -1 => Ok(1),
            d if d >= 0 => Ok(d as usize),
            d => Err(format!("extent {d}")),
        })
        .collect::<Result<_, _>>()?;
    if let Some(i) = target.iter().position(|&d| d == -1) {
        let known = elements(&out).unwrap_or(0);
        if known == 0 || !total.is_multiple_of(known) {
            return Err(format!("cannot infer -1 reshaping {input:?} to {target:?}"));
        }
        out[i] = total / known;
    }
    Ok(out)
}

/// The number of elements of `shape`, unless it overflows.
fn elements(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

/// Transpose: a strided copy.
pub(super) fn transpose(w: &mut Walk<'_>, c: &Call<'_>) -> Result<Vec<TensorId>, String> {
    let (x, xq) = c.act(0)?;
    let xs = w.shape(x);
    let perm: Vec<usize> = match c.attrs().ints("perm") {
        Some(p) => p.iter().map(|&a| axis(a, xs.len())).collect::<Result<_, _>>()?,
        None => (0..xs.len()).rev().collect(),
    };
    let mut sorted = perm.clone();
    sorted.sort_unstable();
    if sorted != (0..xs.len()).collect::<Vec<_>>() {
        return Err(format!("perm {perm:?} of a rank-{} tensor", xs.len()));
    }
    let out: Vec<usize> = perm.iter().map(|&p| xs[p]).collect();
    let op = Op::Copy(copy::transpose(&perm, &xs, &out));
    w.keeping(c, 0, xq, out, |w, y| w.push(c.node, op, vec![x], y))
}

/// Concat (and QLinearConcat): copies when every input is quantized like the output (concat
/// elision can then remove the copies), else a requantization of each input into its part.
pub(super) fn concat(w: &mut Walk<'_>, c: &Call<'_>) -> Result<Vec<TensorId>, String> {
    let inputs = (0..c.operands.len()).map(|i| w.operand_tensor(c, i)).collect::<Result<Vec<_>, _>>()?;
    let shapes: Vec<Vec<usize>> = inputs.iter().map(|&(t, _)| w.shape(t)).collect();
    let first = shapes.first().ok_or("Concat of nothing")?;
    let at = axis(c.attrs().int("axis", 0), first.len())?;
    let mut out = first.clone();
    for s in &shapes[1..] {
        if s.len() != out.len() || (0..s.len()).any(|i| i != at && s[i] != out[i]) {
            return Err(format!("Concat of {first:?} and {s:?} along axis {at}"));
        }
        out[at] += s[at];
    }
    let y_q = c.out().q;
    w.unclamped(c)?;
    let op = if inputs.iter().all(|(_, q)| q.same_as(&y_q)) {
        Op::Copy(copy::concat_copies(&shapes, at, &out))
    } else {
        let qs: Vec<_> = inputs.iter().map(|&(_, q)| q).collect();
        Op::QConcat(QConcat::new(at, &shapes, (&qs, y_q), Convention::Onnx)?)
    };
    Ok(vec![w.step(c, op, inputs.iter().map(|&(t, _)| t).collect(), out)])
}

/// Split: one strided copy per output.
pub(super) fn split(w: &mut Walk<'_>, c: &Call<'_>) -> Result<Vec<TensorId>, String> {
    let (x, xq) = c.act(0)?;
    let xs = w.shape(x);
    let a = c.attrs();
    let at = axis(a.int("axis", 0), xs.len())?;
    let n = c.node.output.len();
    let extent = |s: &i64| usize::try_from(*s).map_err(|_| format!("a split of extent {s}"));
    let sizes: Vec<usize> = match (a.ints("split"), c.konst(1)) {
        (Some(v), _) => v.iter().map(extent).collect::<Result<_, _>>()?,
        (None, Some(k)) => k.ints()?.iter().map(extent).collect::<Result<_, _>>()?,
        (None, None) => {
            let each = xs[at].div_ceil(n.max(1));
            (0..n).map(|i| each.min(xs[at].saturating_sub(i * each))).collect()
        }
    };
    if sizes.len() != n || sizes.iter().try_fold(0usize, |t, &s| t.checked_add(s)) != Some(xs[at]) {
        return Err(format!("a split of {} into {sizes:?}", xs[at]));
    }
    let mut outputs = Vec::with_capacity(n);
    let mut start = 0;
    for (i, &size) in sizes.iter().enumerate() {
        let mut shape = xs.clone();
        shape[at] = size;
        let op = Op::Copy(Copies(vec![copy::slice_along(&xs, at, start, &shape)]));
        outputs.extend(w.keeping(c, i, xq, shape, |w, y| w.push(c.node, op, vec![x], y))?);
        start += size;
    }
    Ok(outputs)
}

/// Slice with constant starts, ends, axes and steps (inputs from opset 10, attributes before).
pub(super) fn slice(w: &mut Walk<'_>, c: &Call<'_>) -> Result<Vec<TensorId>, String> {
    let (x, xq) = c.act(0)?;
    let xs = w.shape(x);
    let a = c.attrs();
    let list = |i: usize, attr: &str| -> Result<Option<Vec<i64>>, String> {
        match (c.konst(i), a.ints(attr)) {
            (Some(k), _) => Ok(Some(k.ints()?.to_vec())),
            (None, Some(v)) => Ok(Some(v)),
            (None, None) if matches!(c.operands.get(i), Some(Operand::Act(..) | Operand::Weights(_))) => {
                Err(format!("input {i} of Slice must be a constant"))
            }
            (None, None) => Ok(None),
        }
    };
    let starts = list(1, "starts")?.ok_or("Slice without starts")?;
    let ends = list(2, "ends")?.ok_or("Slice without ends")?;
    let axes = list(3, "axes")?.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = list(4, "steps")?.unwrap_or_else(|| vec![1; starts.len()]);
    if ends.len() != starts.len() || axes.len() != starts.len() || steps.len() != starts.len() {
        return Err("starts, ends, axes and steps of different lengths".into());
    }
    let strides = strides_of(&xs);
    let mut out = xs.clone();
    let mut src_strides: Vec<isize> = strides.iter().map(|&s| s as isize).collect();
    let mut src_offset = 0isize;
    for k in 0..starts.len() {
        let ax = axis(axes[k], xs.len())?;
        let dim = xs[ax] as i64;
        if steps[k] == 0 {
            return Err("a zero step".into());
        }
        // A step longer than the axis takes one element, as one of the axis's length does.
        let step = steps[k].signum() * steps[k].unsigned_abs().min(dim.max(1) as u64) as i64;
        let wrap = |v: i64| if v < 0 { v.saturating_add(dim) } else { v };
        let (start, end) = if step > 0 {
            (wrap(starts[k]).clamp(0, dim), wrap(ends[k]).clamp(0, dim))
        } else {
            (wrap(starts[k]).clamp(0, (dim - 1).max(0)), wrap(ends[k]).clamp(-1, (dim - 1).max(-1)))
        };
        let count = match dim {
            0 => 0,
            _ if step > 0 => (end - start).max(0),
            _ => (start - end).max(0),
        };
        out[ax] = ((count + step.abs() - 1) / step.abs()) as usize;
        src_offset += start.max(0) as isize * strides[ax] as isize;
        src_strides[ax] *= step as isize;
    }
    let empty = out.contains(&0);
    let copy = StridedCopy {
        input: 0,
        shape: out.clone(),
        src_offset: if empty { 0 } else { src_offset as usize },
        src_strides,
        dst_offset: 0,
        dst_strides: copy::dense(&out),
    };
    let op = Op::Copy(Copies(vec![copy]));
    w.keeping(c, 0, xq, out, |w, y| w.push(c.node, op, vec![x], y))
}

/// Constant Pad (negative pads crop): the added values are the constant quantized like the input
/// (an integer constant as it is; none: the zero point, the quantized 0).
pub(super) fn pad(w: &mut Walk<'_>, c: &Call<'_>) -> Result<Vec<TensorId>, String> {
    let (x, xq) = c.act(0)?;
    let xs = w.shape(x);
    let a = c.attrs();
    let mode = a.string("mode").unwrap_or_else(|| "constant".into());
    if mode != "constant" {
        return Err(format!("Pad mode {mode} on quantized tensors (constant is supported)"));
    }
    let (begin, out) = pad_extents(c.konst(1), &a, c.konst(3), &xs)?;
    let value = match c.operands.get(2) {
        None | Some(Operand::Absent) => xq.zero_point,
        Some(Operand::Const(k)) if k.ints().is_ok() => k.ints()?.first().copied().unwrap_or(0) as i32,
        Some(Operand::Const(k)) => xq.quantize(k.scalar()?),
        Some(Operand::Weights(q)) => xq.quantize(*q.dequantized()?.first().ok_or("an empty pad value")?),
        Some(Operand::Act(..)) => return Err("a pad value computed at run time".into()),
    };
    let op = Op::QPad(QPad { in_shape: xs, pads_begin: begin, out_shape: out.clone(), value, dtype: xq.dtype });
    w.keeping(c, 0, xq, out, |w, y| w.push(c.node, op, vec![x], y))
}

/// Pad of raw integers (a tensor no quantized operator describes) in any mode, or of 16- and
/// 32-bit ones: the `f32` [`PadOp`]'s kernel on the integer type (a constant value must be an
/// integer exact in `f32`).
pub(super) fn raw_pad(w: &mut Walk<'_>, node: &pb::NodeProto, x: TensorId) -> Result<(), String> {
    let konst = |i: usize| match node.input.get(i).filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(_) => w.konst(node, i).map(Some),
    };
    let (pads, value, axes) = (konst(1)?, konst(2)?, konst(3)?);
    let xs = w.shape(x);
    let a = Attrs(&node.attribute);
    let (begin, out) = pad_extents(pads.as_deref(), &a, axes.as_deref(), &xs)?;
    let mode = match a.string("mode").as_deref().unwrap_or("constant") {
        "constant" => {
            let v = match value {
                Some(k) => *k.ints()?.first().ok_or("an empty pad value")?,
                None => a.float("value", 0.0) as i64,
            };
            if v as f32 as i64 != v {
                return Err(format!("a pad value of {v}, not exact in f32"));
            }
            rt::PadMode::Constant(v as f32)
        }
        "reflect" => rt::PadMode::Reflect,
        "edge" => rt::PadMode::Edge,
        "wrap" => rt::PadMode::Wrap,
        other => return Err(format!("Pad mode {other}")),
    };
    let name = node.output.first().cloned().unwrap_or_default();
    let y = w.graph.add_tensor(name, out, w.graph.tensors[x].dtype, TensorKind::Activation);
    w.push(node, Op::Pad(PadOp { pads_begin: begin, mode }), vec![x], y);
    w.set(node, 0, Value::Int(y));
    Ok(())
}

/// The leading pads and the output shape of a Pad of `xs`: pads from input 1 (`pads_input`) or
/// the attribute, over the axes of input 3 (`axes_input`) or all of them; negative pads crop.
fn pad_extents(
    pads_input: Option<&Konst>,
    a: &Attrs<'_>,
    axes_input: Option<&Konst>,
    xs: &[usize],
) -> Result<(Vec<isize>, Vec<usize>), String> {
    let pads: Vec<i64> = match (pads_input, a.ints("pads")) {
        (Some(k), _) => k.ints()?.to_vec(),
        (None, Some(v)) => v,
        (None, None) => return Err("Pad needs constant pads".into()),
    };
    let axes: Vec<usize> = match axes_input {
        Some(k) => k.ints()?.iter().map(|&v| axis(v, xs.len())).collect::<Result<_, _>>()?,
        None => (0..xs.len()).collect(),
    };
    if pads.len() != 2 * axes.len() {
        return Err(format!("{} pads for {} axes", pads.len(), axes.len()));
    }
    let mut begin = vec![0isize; xs.len()];
    let mut out = xs.to_vec();
    for (k, &ax) in axes.iter().enumerate() {
        let (b, e) = (pads[k] as isize, pads[k + axes.len()] as isize);
        begin[ax] = b;
        let extent = (xs[ax] as isize).checked_add(b).and_then(|v| v.checked_add(e));
        let extent = extent.ok_or_else(|| format!("pads {b} and {e} larger than any input"))?;
        out[ax] = usize::try_from(extent).map_err(|_| "pads crop more than the input")?;
    }
    Ok((begin, out))
}
