//! Lowering of one decluttered tract node to one IR node.
//!
//! `lower` returns `Ok(Err(reason))` for an operator (or an operator configuration) the runtime does
//! not support, so that the importer can list every unsupported node at once, and `Err(_)` only for
//! a model that cannot be analysed at all.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::array::{MultiBroadcastTo, Pad, PadMode, Slice, TypedConcat};
use tract_onnx::tract_core::ops::binary::TypedBinOp;
use tract_onnx::tract_core::ops::cast::Cast;
use tract_onnx::tract_core::ops::change_axes::AxisOp;
use tract_onnx::tract_core::ops::cnn::{Conv, KernelFormat, MaxPool, PaddingSpec, PoolSpec, SumPool};
use tract_onnx::tract_core::ops::downsample::Downsample;
use tract_onnx::tract_core::ops::einsum::EinSum;
use tract_onnx::tract_core::ops::element_wise::ElementWiseOp;
use tract_onnx::tract_core::ops::nn::{DataFormat, Reduce, Reducer as TractReducer, Softmax, SoftmaxKind};

use sramfit_runtime_min::{self as rt, Activation};

use super::einsum;
use super::Lowering;
use crate::error::CompileError;
use crate::ir::{strides_of, Binary, Node, Op, Reducer, StridedCopy, TensorKind, Unary};

/// Outcome of lowering one node: `Ok(())` when supported, `Err(reason)` when not.
pub type Lowered = Result<(), String>;

/// Lowers `node`, appending its IR node to the graph.
pub fn lower(cx: &mut Lowering, node: &TypedNode) -> Result<Lowered, CompileError> {
    let out_shape = cx.shape(node.id.into())?;
    let in_shapes: Vec<Vec<usize>> = node.inputs.iter().map(|&i| cx.shape(i)).collect::<Result<_, _>>()?;
    let lowered = if let Some(op) = node.op_as::<Conv>() {
        conv(op, node.inputs.get(2).and_then(|&b| cx.konst(b)), &in_shapes, &out_shape)
    } else if let Some(op) = node.op_as::<EinSum>() {
        einsum_op(op, &in_shapes, &out_shape)
    } else if let Some(op) = node.op_as::<TypedBinOp>() {
        binary(cx, node, op.0.name(), &in_shapes, &out_shape)
    } else if let Some(op) = node.op_as::<ElementWiseOp>() {
        unary(op).map(|u| Plan::new(Op::Unary(u), vec![0]))
    } else if let Some(op) = node.op_as::<AxisOp>() {
        axis_op(op, &in_shapes[0], &out_shape)
    } else if let Some(op) = node.op_as::<MaxPool>() {
        if op.with_index_outputs.is_some() {
            Err("MaxPool with an index output".into())
        } else {
            pool_geometry(&op.pool_spec, &in_shapes[0], &out_shape, false).map(|p| Plan::new(Op::MaxPool(p), vec![0]))
        }
    } else if let Some(op) = node.op_as::<SumPool>() {
        if !op.normalize {
            Err("un-normalised sum pooling".into())
        } else {
            pool_geometry(&op.pool_spec, &in_shapes[0], &out_shape, op.count_include_pad)
                .map(|p| Plan::new(Op::AvgPool(p), vec![0]))
        }
    } else if let Some(op) = node.op_as::<Reduce>() {
        reduce(op, &in_shapes[0])
    } else if let Some(op) = node.op_as::<Softmax>() {
        softmax(op, &in_shapes[0])
    } else if let Some(op) = node.op_as::<TypedConcat>() {
        Ok(concat(op.axis, &in_shapes, &out_shape))
    } else if let Some(op) = node.op_as::<Slice>() {
        slice(op, &in_shapes[0], &out_shape)
    } else if let Some(op) = node.op_as::<Pad>() {
        pad(op)
    } else if let Some(op) = node.op_as::<Downsample>() {
        downsample(op, &in_shapes[0], &out_shape)
    } else if node.op_is::<MultiBroadcastTo>() {
        Ok(broadcast_to(&in_shapes[0], &out_shape))
    } else if let Some(op) = node.op_as::<Cast>() {
        if op.to == f32::datum_type() {
            Ok(Plan::new(Op::View, vec![0]))
        } else {
            Err(format!("Cast to {:?}", op.to))
        }
    } else {
        Err(String::new())
    };
    let plan = match lowered {
        Ok(p) => p,
        Err(reason) => return Ok(Err(reason)),
    };
    let mut inputs = Vec::with_capacity(plan.inputs.len());
    for src in plan.inputs {
        inputs.push(match src {
            Src::Input(i) => cx.data(node.inputs[i])?,
            Src::Const { name, shape, values } => cx.add_const(format!("{}.{name}", node.name), shape, values),
            Src::Permuted { input, perm } => {
                let source = cx.data(node.inputs[input])?;
                let in_shape = cx.graph.tensors[source].shape.clone();
                let shape: Vec<usize> = perm.iter().map(|&p| in_shape[p]).collect();
                let name = format!("{}.transposed{input}", node.name);
                let t = cx.graph.add_tensor(name.clone(), shape.clone(), TensorKind::Activation);
                let Plan { op, .. } = transpose(&perm, &in_shape, &shape);
                cx.graph.nodes.push(Node { name, source_op: "Transpose".into(), op, inputs: vec![source], output: t });
                t
            }
        });
    }
    let output = cx.graph.add_tensor(node.name.clone(), out_shape, TensorKind::Activation);
    cx.tensors.insert(node.id.into(), output);
    cx.graph.nodes.push(Node {
        name: node.name.clone(),
        source_op: node.op.name().to_string(),
        op: plan.op,
        inputs,
        output,
    });
    Ok(Ok(()))
}

/// Where one input of the IR node comes from.
enum Src {
    /// Input `i` of the tract node.
    Input(usize),
    /// A constant made at build time.
    Const { name: &'static str, shape: Vec<usize>, values: Vec<f32> },
    /// Input `input` of the tract node, copied with its axes permuted (axis `i` of the copy is axis
    /// `perm[i]` of the input) by an extra step scheduled just before this node.
    Permuted { input: usize, perm: Vec<usize> },
}

/// An IR op and its inputs.
struct Plan {
    op: Op,
    inputs: Vec<Src>,
}

impl Plan {
    fn new(op: Op, inputs: Vec<usize>) -> Plan {
        Plan { op, inputs: inputs.into_iter().map(Src::Input).collect() }
    }
}

/// Batch, channels and up-to-2-D spatial extents of an activation in `format`.
fn split_shape(format: DataFormat, shape: &[usize]) -> Result<(usize, usize, Vec<usize>), String> {
    match format {
        DataFormat::NCHW if shape.len() >= 2 => Ok((shape[0], shape[1], shape[2..].to_vec())),
        DataFormat::CHW if !shape.is_empty() => Ok((1, shape[0], shape[1..].to_vec())),
        f => Err(format!("data format {f:?} is not supported (NCHW only)")),
    }
}

/// Spatial extents as (h, w): 1-D becomes (1, w).
fn hw(spatial: &[usize]) -> Result<(usize, usize), String> {
    match spatial {
        [w] => Ok((1, *w)),
        [h, w] => Ok((*h, *w)),
        s => Err(format!("{}-D spatial input (1-D and 2-D are supported)", s.len())),
    }
}

/// Geometry shared by convolution and pooling, as 2-D (1-D has h = 1).
struct Geometry {
    batch: usize,
    channels: usize,
    in_hw: (usize, usize),
    out_hw: (usize, usize),
    kernel: (usize, usize),
    stride: (usize, usize),
    dilation: (usize, usize),
    pad_before: (usize, usize),
    pad_after: (usize, usize),
}

fn geometry(spec: &PoolSpec, in_shape: &[usize], out_shape: &[usize]) -> Result<Geometry, String> {
    let (batch, channels, spatial) = split_shape(spec.data_format, in_shape)?;
    let (_, _, out_spatial) = split_shape(spec.data_format, out_shape)?;
    let pair = |v: &[usize]| -> (usize, usize) {
        if v.len() == 1 {
            (1, v[0])
        } else {
            (v[0], v[1])
        }
    };
    let computed = spec.computed_padding(&spatial);
    let before: Vec<usize> = computed.iter().map(|c| c.pad_before).collect();
    let after: Vec<usize> = match &spec.padding {
        PaddingSpec::Explicit(_, a) | PaddingSpec::ExplicitOnnxPool(_, a, _) => a.to_vec(),
        _ => computed.iter().map(|c| c.pad_after).collect(),
    };
    let pad = |v: &[usize]| if v.len() == 1 { (0, v[0]) } else { (v[0], v[1]) };
    Ok(Geometry {
        batch,
        channels,
        in_hw: hw(&spatial)?,
        out_hw: hw(&out_spatial)?,
        kernel: pair(&spec.kernel_shape),
        stride: pair(&spec.strides()),
        dilation: pair(&spec.dilations()),
        pad_before: pad(&before),
        pad_after: pad(&after),
    })
}

fn conv(op: &Conv, bias: Option<Arc<Tensor>>, in_shapes: &[Vec<usize>], out_shape: &[usize]) -> Result<Plan, String> {
    if op.q_params.is_some() {
        return Err("quantized convolution".into());
    }
    if op.kernel_fmt != KernelFormat::OIHW {
        return Err(format!("kernel format {:?}", op.kernel_fmt));
    }
    let g = geometry(&op.pool_spec, &in_shapes[0], out_shape)?;
    let out_channels = op.pool_spec.output_channels;
    let p = rt::Conv2d {
        batch: g.batch,
        in_channels: g.channels,
        in_h: g.in_hw.0,
        in_w: g.in_hw.1,
        out_channels,
        out_h: g.out_hw.0,
        out_w: g.out_hw.1,
        kernel_h: g.kernel.0,
        kernel_w: g.kernel.1,
        stride_h: g.stride.0,
        stride_w: g.stride.1,
        dilation_h: g.dilation.0,
        dilation_w: g.dilation.1,
        pad_top: g.pad_before.0,
        pad_left: g.pad_before.1,
        groups: op.group,
        act: Activation::None,
    };
    let mut inputs = vec![Src::Input(0), Src::Input(1)];
    match in_shapes.get(2).map(|s| s.iter().product::<usize>()) {
        None => {}
        Some(n) if n == out_channels => inputs.push(Src::Input(2)),
        // tract gives a scalar bias (often 0) where the ONNX node has none; the kernel wants one per
        // output channel, or none at all.
        Some(1) => {
            let b = bias.ok_or("a computed scalar bias")?.cast_to_scalar::<f32>().map_err(|e| e.to_string())?;
            if b != 0.0 {
                inputs.push(Src::Const { name: "bias", shape: vec![out_channels], values: vec![b; out_channels] });
            }
        }
        Some(n) => return Err(format!("bias of {n} values for {out_channels} channels")),
    }
    Ok(Plan { op: Op::Conv(p), inputs })
}

fn einsum_op(op: &EinSum, in_shapes: &[Vec<usize>], out_shape: &[usize]) -> Result<Plan, String> {
    if op.q_params.is_some() || op.operating_dt != f32::datum_type() || in_shapes.len() != 2 {
        return Err("quantized or non-float32 einsum".into());
    }
    let mut positions = Vec::new();
    for axis in op.axes.iter_all_axes() {
        let one = |v: &[usize]| -> Result<Option<usize>, String> {
            match v {
                [] => Ok(None),
                [p] => Ok(Some(*p)),
                _ => Err("an axis repeated within one tensor (diagonal)".into()),
            }
        };
        positions.push((one(&axis.inputs[0])?, one(&axis.inputs[1])?, one(&axis.outputs[0])?));
    }
    let axes = einsum::axes_from_positions(&positions, &in_shapes[0], &in_shapes[1], out_shape);
    if let Ok((p, swapped)) = einsum::lower(&axes) {
        return Ok(Plan::new(Op::MatMul(p), if swapped { vec![1, 0] } else { vec![0, 1] }));
    }
    // The operands' layouts do not let the axes of one class merge: copy both operands into the
    // canonical layouts A[batch.., m.., k..] and B[batch.., k.., n..] first.
    let (perm_a, perm_b) = einsum::canonical_permutations(&positions, in_shapes[0].len(), in_shapes[1].len());
    let permute = |shape: &[usize], perm: &[usize]| perm.iter().map(|&p| shape[p]).collect::<Vec<_>>();
    let inverse = |perm: &[usize], pos: Option<usize>| pos.map(|p| perm.iter().position(|&q| q == p).unwrap_or(p));
    let canonical: Vec<_> = positions.iter().map(|&(a, b, c)| (inverse(&perm_a, a), inverse(&perm_b, b), c)).collect();
    let axes = einsum::axes_from_positions(
        &canonical,
        &permute(&in_shapes[0], &perm_a),
        &permute(&in_shapes[1], &perm_b),
        out_shape,
    );
    let (p, swapped) = einsum::lower(&axes)?;
    let (a, b) = (Src::Permuted { input: 0, perm: perm_a }, Src::Permuted { input: 1, perm: perm_b });
    Ok(Plan { op: Op::MatMul(p), inputs: if swapped { vec![b, a] } else { vec![a, b] } })
}

/// Strides of an input of shape `shape` over the broadcast output shape `out` (0 where broadcast).
fn broadcast_strides(shape: &[usize], out: &[usize]) -> Vec<usize> {
    let strides = strides_of(shape);
    let offset = out.len() - shape.len();
    (0..out.len()).map(|i| if i < offset || shape[i - offset] == 1 { 0 } else { strides[i - offset] }).collect()
}

fn binary(
    cx: &Lowering,
    node: &TypedNode,
    name: &str,
    in_shapes: &[Vec<usize>],
    out: &[usize],
) -> Result<Plan, String> {
    let kind = match name {
        "Add" => Binary::Add,
        "Sub" => Binary::Sub,
        "Mul" => Binary::Mul,
        "Div" => Binary::Div,
        "Max" => Binary::Max,
        "Min" => Binary::Min,
        "Pow" => Binary::Pow,
        other => return Err(format!("binary operator {other}")),
    };
    // Max/Min/Pow against a scalar constant are unary kernels (Relu, Clip, x^e).
    if let Some(k) = cx.konst(node.inputs[1]).filter(|k| k.len() == 1 && k.datum_type() == f32::datum_type()) {
        let c = k.cast_to_scalar::<f32>().map_err(|e| e.to_string())?;
        if in_shapes[0].as_slice() == out {
            let unary = match kind {
                Binary::Max if c == 0.0 => Some(Unary::Relu),
                Binary::Max => Some(Unary::Clip { min: c, max: f32::INFINITY }),
                Binary::Min => Some(Unary::Clip { min: f32::NEG_INFINITY, max: c }),
                Binary::Pow => Some(Unary::PowScalar { exponent: c }),
                _ => None,
            };
            if let Some(u) = unary {
                return Ok(Plan::new(Op::Unary(u), vec![0]));
            }
        }
    }
    let (a_strides, b_strides) = (broadcast_strides(&in_shapes[0], out), broadcast_strides(&in_shapes[1], out));
    Ok(Plan::new(Op::Binary { kind, a_strides, b_strides }, vec![0, 1]))
}

fn unary(op: &ElementWiseOp) -> Result<Unary, String> {
    use tract_onnx::tract_core::ops::nn::LeakyRelu;
    let mini = &op.0;
    if let Some(l) = mini.downcast_ref::<LeakyRelu>() {
        return Ok(Unary::LeakyRelu { alpha: l.alpha });
    }
    if let Some(p) = mini.downcast_ref::<tract_onnx::tract_core::ops::math::PowConst>() {
        return Ok(Unary::PowScalar { exponent: p.exponent });
    }
    Ok(match mini.name().as_str() {
        "Sigmoid" => Unary::Sigmoid,
        "Tanh" => Unary::Tanh,
        "Exp" => Unary::Exp,
        "Ln" => Unary::Ln,
        "Sqrt" => Unary::Sqrt,
        "Rsqrt" => Unary::Rsqrt,
        "Recip" => Unary::Reciprocal,
        "Abs" => Unary::Abs,
        "Neg" => Unary::Neg,
        "Square" => Unary::Square,
        "Erf" => Unary::Erf,
        "Floor" => Unary::Floor,
        "Ceil" => Unary::Ceil,
        "RoundHalfToEven" => Unary::Round,
        "Sin" => Unary::Sin,
        "Cos" => Unary::Cos,
        "HardSwish" => Unary::HardSwish,
        "Silu" => Unary::Silu,
        "GeluExact" => Unary::Gelu,
        other => return Err(format!("elementwise {other}")),
    })
}

fn axis_op(op: &AxisOp, input: &[usize], out: &[usize]) -> Result<Plan, String> {
    match op {
        AxisOp::Move(from, to) => {
            // A move is a view when only extent-1 axes change relative order.
            let mut perm: Vec<usize> = (0..input.len()).collect();
            let a = perm.remove(*from);
            perm.insert(*to, a);
            let non_unit: Vec<usize> = perm.iter().copied().filter(|&i| input[i] != 1).collect();
            if non_unit.windows(2).all(|w| w[0] < w[1]) {
                return Ok(Plan::new(Op::View, vec![0]));
            }
            Ok(transpose(&perm, input, out))
        }
        _ => Ok(Plan::new(Op::View, vec![0])),
    }
}

/// A copy of input 0 permuted by `perm` (output axis `i` is input axis `perm[i]`).
fn transpose(perm: &[usize], input: &[usize], out: &[usize]) -> Plan {
    let s = strides_of(input);
    let copy = StridedCopy {
        input: 0,
        shape: out.to_vec(),
        src_offset: 0,
        src_strides: perm.iter().map(|&p| s[p] as isize).collect(),
        dst_offset: 0,
        dst_strides: strides_of(out).into_iter().map(|x| x as isize).collect(),
    };
    Plan::new(Op::Copy(vec![copy]), vec![0])
}

fn pool_geometry(
    spec: &PoolSpec,
    input: &[usize],
    out: &[usize],
    count_include_pad: bool,
) -> Result<rt::Pool2d, String> {
    let g = geometry(spec, input, out)?;
    Ok(rt::Pool2d {
        batch: g.batch,
        channels: g.channels,
        in_h: g.in_hw.0,
        in_w: g.in_hw.1,
        out_h: g.out_hw.0,
        out_w: g.out_hw.1,
        kernel_h: g.kernel.0,
        kernel_w: g.kernel.1,
        stride_h: g.stride.0,
        stride_w: g.stride.1,
        dilation_h: g.dilation.0,
        dilation_w: g.dilation.1,
        pad_top: g.pad_before.0,
        pad_left: g.pad_before.1,
        pad_bottom: g.pad_after.0,
        pad_right: g.pad_after.1,
        count_include_pad,
    })
}

fn reduce(op: &Reduce, input: &[usize]) -> Result<Plan, String> {
    let kind = match op.reducer {
        TractReducer::Sum => Reducer::Sum,
        TractReducer::Max => Reducer::Max,
        TractReducer::Min => Reducer::Min,
        TractReducer::Prod => Reducer::Prod,
        r => return Err(format!("reducer {r:?}")),
    };
    let s = strides_of(input);
    let reduced = |i: &usize| op.axes.contains(i);
    let red: Vec<usize> = (0..input.len()).filter(reduced).collect();
    Ok(Plan::new(
        Op::Reduce {
            kind,
            out_in_strides: (0..input.len()).map(|i| if reduced(&i) { 0 } else { s[i] }).collect(),
            red_shape: red.iter().map(|&i| input[i]).collect(),
            red_strides: red.iter().map(|&i| s[i]).collect(),
        },
        vec![0],
    ))
}

fn softmax(op: &Softmax, input: &[usize]) -> Result<Plan, String> {
    if op.quant_output_dt.is_some() {
        return Err("quantized softmax".into());
    }
    let mut axes = op.axes.to_vec();
    axes.sort_unstable();
    if axes.is_empty() || axes.windows(2).any(|w| w[1] != w[0] + 1) {
        return Err("softmax over non-contiguous axes".into());
    }
    let (first, last) = (axes[0], axes[axes.len() - 1]);
    Ok(Plan::new(
        Op::Softmax {
            log: op.kind == SoftmaxKind::LogSoftmax,
            outer: input[..first].iter().product(),
            axis_len: input[first..=last].iter().product(),
            inner: input[last + 1..].iter().product(),
        },
        vec![0],
    ))
}

fn concat(axis: usize, in_shapes: &[Vec<usize>], out: &[usize]) -> Plan {
    let out_strides = strides_of(out);
    let mut offset = 0;
    let copies = in_shapes
        .iter()
        .enumerate()
        .map(|(i, shape)| {
            let c = StridedCopy {
                input: i,
                shape: shape.clone(),
                src_offset: 0,
                src_strides: strides_of(shape).into_iter().map(|x| x as isize).collect(),
                dst_offset: offset * out_strides[axis],
                dst_strides: out_strides.iter().map(|&x| x as isize).collect(),
            };
            offset += shape[axis];
            c
        })
        .collect();
    Plan::new(Op::Copy(copies), (0..in_shapes.len()).collect())
}

fn slice(op: &Slice, input: &[usize], out: &[usize]) -> Result<Plan, String> {
    let start = op.start.to_i64().map_err(|_| "slice with a symbolic start".to_string())?;
    let s = strides_of(input);
    let copy = StridedCopy {
        input: 0,
        shape: out.to_vec(),
        src_offset: start as usize * s[op.axis],
        src_strides: s.iter().map(|&x| x as isize).collect(),
        dst_offset: 0,
        dst_strides: strides_of(out).into_iter().map(|x| x as isize).collect(),
    };
    Ok(Plan::new(Op::Copy(vec![copy]), vec![0]))
}

/// Every `stride`-th element along `axis`, starting at `modulo`.
fn downsample(op: &Downsample, input: &[usize], out: &[usize]) -> Result<Plan, String> {
    if op.stride <= 0 {
        return Err("downsampling with a negative stride".into());
    }
    let s = strides_of(input);
    let mut src_strides: Vec<isize> = s.iter().map(|&x| x as isize).collect();
    src_strides[op.axis] *= op.stride;
    let copy = StridedCopy {
        input: 0,
        shape: out.to_vec(),
        src_offset: op.modulo * s[op.axis],
        src_strides,
        dst_offset: 0,
        dst_strides: strides_of(out).into_iter().map(|x| x as isize).collect(),
    };
    Ok(Plan::new(Op::Copy(vec![copy]), vec![0]))
}

fn pad(op: &Pad) -> Result<Plan, String> {
    let mode = match &op.mode {
        PadMode::Constant(v) => rt::PadMode::Constant(v.cast_to_scalar::<f32>().map_err(|e| e.to_string())?),
        PadMode::Reflect => rt::PadMode::Reflect,
        PadMode::Edge => rt::PadMode::Edge,
    };
    Ok(Plan::new(Op::Pad { pads_begin: op.pads.iter().map(|p| p.0 as isize).collect(), mode }, vec![0]))
}

fn broadcast_to(input: &[usize], out: &[usize]) -> Plan {
    let copy = StridedCopy {
        input: 0,
        shape: out.to_vec(),
        src_offset: 0,
        src_strides: broadcast_strides(input, out).into_iter().map(|x| x as isize).collect(),
        dst_offset: 0,
        dst_strides: strides_of(out).into_iter().map(|x| x as isize).collect(),
    };
    Plan::new(Op::Copy(vec![copy]), vec![0])
}
