//! Lowering of one decluttered tract node to one IR node.
//!
//! `lower` returns `Ok(Err(reason))` for an operator (or an operator configuration) the runtime does
//! not support, so that the importer can list every unsupported node at once, and `Err(_)` only for
//! a model that cannot be analysed at all.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::array::{Gather, MultiBroadcastTo, Pad, PadMode, Slice, TypedConcat};
use tract_onnx::tract_core::ops::binary::TypedBinOp;
use tract_onnx::tract_core::ops::cast::Cast;
use tract_onnx::tract_core::ops::change_axes::AxisOp;
use tract_onnx::tract_core::ops::cnn::{Conv, Deconv, KernelFormat, MaxPool, PaddingSpec, PoolSpec, SumPool};
use tract_onnx::tract_core::ops::downsample::Downsample;
use tract_onnx::tract_core::ops::einsum::EinSum;
use tract_onnx::tract_core::ops::element_wise::ElementWiseOp;
use tract_onnx::tract_core::ops::logic::Iff;
use tract_onnx::tract_core::ops::nn::{
    DataFormat, NearestUpsample, Reduce, Reducer as TractReducer, Resize, RmsNorm, Softmax, SoftmaxKind,
};

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
    let arity = min_inputs(node);
    if in_shapes.len() < arity {
        return Ok(Err(format!("{} inputs where the operator needs {arity}", in_shapes.len())));
    }
    let lowered = if let Some(op) = node.op_as::<Conv>() {
        conv(op, node.inputs.get(2).and_then(|&b| cx.konst(b)), &in_shapes, &out_shape)
    } else if let Some(op) = node.op_as::<Deconv>() {
        deconv(op, node.inputs.get(2).and_then(|&b| cx.konst(b)), &in_shapes, &out_shape)
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
    } else if let Some(op) = node.op_as::<RmsNorm>() {
        rms_norm(op, &in_shapes[0])
    } else if node.op.name() == "Lrn" {
        lrn(&format!("{:?}", node.op), &in_shapes[0])
    } else if let Some(op) = node.op_as::<NearestUpsample>() {
        resize(
            &ResizeSpec::upsample(),
            &op.scales.iter().map(|&s| s as f32).collect::<Vec<_>>(),
            &in_shapes[0],
            &out_shape,
        )
    } else if let Some(op) = node.op_as::<Resize>() {
        let spec = ResizeSpec {
            coord: format!("{:?}", op.coord_transformer),
            interpolator: format!("{:?}", op.interpolator),
            nearest: format!("{:?}", op.nearest),
        };
        let scales = resize_scales(cx, node, op.optional_scales_input, &in_shapes[0], &out_shape);
        resize(&spec, &scales, &in_shapes[0], &out_shape)
    } else if node.op.name() == "Resize" {
        // tract-onnx-opl's Resize (the ONNX op with options core's Resize lacks), read from its Debug form.
        ResizeSpec::from_onnx_debug(&format!("{:?}", node.op)).and_then(|(spec, scales_input)| {
            let scales = resize_scales(cx, node, scales_input, &in_shapes[0], &out_shape);
            resize(&spec, &scales, &in_shapes[0], &out_shape)
        })
    } else if node.op_is::<Iff>() {
        select(cx, node, &out_shape)
    } else if let Some(op) = node.op_as::<Gather>() {
        gather(op.axis, cx.konst(node.inputs[1]), &in_shapes[0], &out_shape)
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
            Src::Input(i) => {
                let o = *node.inputs.get(i).ok_or_else(|| CompileError::InvalidModel {
                    path: Default::default(),
                    message: format!("node `{}` has no input {i}", node.name),
                })?;
                cx.data(o)?
            }
            Src::Outlet(o) => cx.data(o)?,
            Src::Const { name, shape, values } => cx.add_const(format!("{}.{name}", node.name), shape, values),
            Src::Permuted { input, perm } => {
                let source = cx.data(node.inputs[input])?;
                let in_shape = cx.graph.tensors[source].shape.clone();
                let shape: Vec<usize> = perm.iter().map(|&p| in_shape[p]).collect();
                let name = format!("{}.transposed{input}", node.name);
                if let TensorKind::Const(values) = &cx.graph.tensors[source].kind {
                    // Weights are permuted once, at build time: no copy and no arena bytes at run time.
                    let values = permute_values(values, &in_shape, &perm);
                    cx.add_const(name, shape, values)
                } else {
                    let t = cx.graph.add_tensor(name.clone(), shape.clone(), TensorKind::Activation);
                    let Plan { op, .. } = transpose(&perm, &in_shape, &shape);
                    cx.graph.nodes.push(Node {
                        name,
                        source_op: "Transpose".into(),
                        op,
                        inputs: vec![source],
                        output: t,
                    });
                    t
                }
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
    /// Another outlet of the model (an input of a node fused into this one).
    Outlet(OutletId),
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

/// Per-axis values of up to 3 spatial axes as (d, h, w), the missing leading axes filled with `fill`.
fn dhw(v: &[usize], fill: usize) -> Result<[usize; 3], String> {
    if v.is_empty() || v.len() > 3 {
        return Err(format!("{}-D spatial input (1-D to 3-D are supported)", v.len()));
    }
    let mut a = [fill; 3];
    a[3 - v.len()..].copy_from_slice(v);
    Ok(a)
}

/// Geometry shared by convolution and pooling, as 3-D (d, h, w): 2-D has d = 1, 1-D also h = 1.
struct Geometry {
    batch: usize,
    channels: usize,
    rank: usize,
    input: [usize; 3],
    output: [usize; 3],
    kernel: [usize; 3],
    stride: [usize; 3],
    dilation: [usize; 3],
    pad_before: [usize; 3],
    pad_after: [usize; 3],
}

fn geometry(spec: &PoolSpec, in_shape: &[usize], out_shape: &[usize]) -> Result<Geometry, String> {
    let (batch, channels, spatial) = split_shape(spec.data_format, in_shape)?;
    let (_, _, out_spatial) = split_shape(spec.data_format, out_shape)?;
    let rank = spatial.len();
    if spec.kernel_shape.len() != rank || out_spatial.len() != rank {
        return Err("kernel, input and output ranks differ".into());
    }
    let computed = spec.computed_padding(&spatial);
    let before: Vec<usize> = computed.iter().map(|c| c.pad_before).collect();
    let after: Vec<usize> = match &spec.padding {
        PaddingSpec::Explicit(_, a) | PaddingSpec::ExplicitOnnxPool(_, a, _) => a.to_vec(),
        _ => computed.iter().map(|c| c.pad_after).collect(),
    };
    Ok(Geometry {
        batch,
        channels,
        rank,
        input: dhw(&spatial, 1)?,
        output: dhw(&out_spatial, 1)?,
        kernel: dhw(&spec.kernel_shape, 1)?,
        stride: dhw(&spec.strides(), 1)?,
        dilation: dhw(&spec.dilations(), 1)?,
        pad_before: dhw(&before, 0)?,
        pad_after: dhw(&after, 0)?,
    })
}

/// The bias inputs of a (transposed) convolution: none, the per-channel tensor, or a constant made
/// from tract's scalar bias (often 0, which tract gives where the ONNX node has none).
fn conv_bias(bias: Option<Arc<Tensor>>, in_shapes: &[Vec<usize>], out_channels: usize) -> Result<Vec<Src>, String> {
    match in_shapes.get(2).map(|s| s.iter().product::<usize>()) {
        None => Ok(vec![]),
        Some(n) if n == out_channels => Ok(vec![Src::Input(2)]),
        Some(1) => {
            let b = bias.ok_or("a computed scalar bias")?.cast_to_scalar::<f32>().map_err(|e| e.to_string())?;
            if b == 0.0 {
                Ok(vec![])
            } else {
                Ok(vec![Src::Const { name: "bias", shape: vec![out_channels], values: vec![b; out_channels] }])
            }
        }
        Some(n) => Err(format!("bias of {n} values for {out_channels} channels")),
    }
}

fn conv(op: &Conv, bias: Option<Arc<Tensor>>, in_shapes: &[Vec<usize>], out_shape: &[usize]) -> Result<Plan, String> {
    if op.q_params.is_some() {
        return Err("quantized convolution".into());
    }
    if op.kernel_fmt != KernelFormat::OIHW {
        return Err(format!("kernel format {:?}", op.kernel_fmt));
    }
    let g = geometry(&op.pool_spec, &in_shapes[0], out_shape)?;
    if g.rank > 2 {
        return Err("3-D convolution (1-D and 2-D are supported)".into());
    }
    let out_channels = op.pool_spec.output_channels;
    let p = rt::Conv2d {
        batch: g.batch,
        in_channels: g.channels,
        in_h: g.input[1],
        in_w: g.input[2],
        out_channels,
        out_h: g.output[1],
        out_w: g.output[2],
        kernel_h: g.kernel[1],
        kernel_w: g.kernel[2],
        stride_h: g.stride[1],
        stride_w: g.stride[2],
        dilation_h: g.dilation[1],
        dilation_w: g.dilation[2],
        pad_top: g.pad_before[1],
        pad_left: g.pad_before[2],
        groups: op.group,
        act: Activation::None,
        weights: rt::ConvWeights::Oihw,
    };
    let mut inputs = vec![Src::Input(0), Src::Input(1)];
    inputs.extend(conv_bias(bias, in_shapes, out_channels)?);
    Ok(Plan { op: Op::Conv(p), inputs })
}

/// Transposed convolution; tract gives the kernel in OIHW order `[C_out, C_in / group, kh, kw]`.
fn deconv(
    op: &Deconv,
    bias: Option<Arc<Tensor>>,
    in_shapes: &[Vec<usize>],
    out_shape: &[usize],
) -> Result<Plan, String> {
    if op.kernel_format != KernelFormat::OIHW {
        return Err(format!("kernel format {:?}", op.kernel_format));
    }
    let spec = &op.pool_spec;
    let (batch, channels, spatial) = split_shape(spec.data_format, &in_shapes[0])?;
    let (_, out_channels, out_spatial) = split_shape(spec.data_format, out_shape)?;
    let rank = spatial.len();
    if rank > 2 {
        return Err("3-D transposed convolution (1-D and 2-D are supported)".into());
    }
    if spec.kernel_shape.len() != rank || out_spatial.len() != rank || op.adjustments.len() != rank {
        return Err("kernel, input and output ranks differ".into());
    }
    let group = op.group.max(1);
    let w = &in_shapes[1];
    if w.len() != rank + 2 || w[0] != out_channels || w[1] * group != channels || out_channels % group != 0 {
        return Err(format!("kernel shape {w:?} for {channels} -> {out_channels} channels in {group} groups"));
    }
    let pads = spec
        .padding
        .compute_for_deconv(&spatial, &spec.kernel_shape, &spec.dilations(), &spec.strides(), &op.adjustments)
        .map_err(|e| format!("{e:#}"))?;
    let before: Vec<usize> = pads.iter().map(|p| p.pad_before).collect();
    let (input, output) = (dhw(&spatial, 1)?, dhw(&out_spatial, 1)?);
    let (kernel, stride, dilation) =
        (dhw(&spec.kernel_shape, 1)?, dhw(&spec.strides(), 1)?, dhw(&spec.dilations(), 1)?);
    let pad = dhw(&before, 0)?;
    let p = rt::ConvTranspose2d {
        batch,
        in_channels: channels,
        in_h: input[1],
        in_w: input[2],
        out_channels,
        out_h: output[1],
        out_w: output[2],
        kernel_h: kernel[1],
        kernel_w: kernel[2],
        stride_h: stride[1],
        stride_w: stride[2],
        dilation_h: dilation[1],
        dilation_w: dilation[2],
        pad_top: pad[1],
        pad_left: pad[2],
        groups: group,
    };
    let mut inputs = vec![Src::Input(0), Src::Input(1)];
    inputs.extend(conv_bias(bias, in_shapes, out_channels)?);
    Ok(Plan { op: Op::ConvTranspose(p), inputs })
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

/// `values` (row-major, shape `shape`) with axes permuted: axis `i` of the result is axis `perm[i]`.
fn permute_values(values: &[f32], shape: &[usize], perm: &[usize]) -> Vec<f32> {
    let src_strides = strides_of(shape);
    let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let mut index = vec![0usize; out_shape.len()];
    let mut out = Vec::with_capacity(values.len());
    for _ in 0..values.len() {
        out.push(values[index.iter().zip(perm).map(|(&i, &p)| i * src_strides[p]).sum::<usize>()]);
        for axis in (0..index.len()).rev() {
            index[axis] += 1;
            if index[axis] < out_shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    out
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
        in_d: g.input[0],
        out_d: g.output[0],
        kernel_d: g.kernel[0],
        stride_d: g.stride[0],
        dilation_d: g.dilation[0],
        pad_front: g.pad_before[0],
        pad_back: g.pad_after[0],
        in_h: g.input[1],
        in_w: g.input[2],
        out_h: g.output[1],
        out_w: g.output[2],
        kernel_h: g.kernel[1],
        kernel_w: g.kernel[2],
        stride_h: g.stride[1],
        stride_w: g.stride[2],
        dilation_h: g.dilation[1],
        dilation_w: g.dilation[2],
        pad_top: g.pad_before[1],
        pad_left: g.pad_before[2],
        pad_bottom: g.pad_after[1],
        pad_right: g.pad_after[2],
        count_include_pad,
    })
}

fn reduce(op: &Reduce, input: &[usize]) -> Result<Plan, String> {
    let kind = match op.reducer {
        TractReducer::Sum => Reducer::Sum,
        TractReducer::Max => Reducer::Max,
        TractReducer::Min => Reducer::Min,
        TractReducer::Prod => Reducer::Prod,
        TractReducer::MeanOfSquares => Reducer::MeanSquare,
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

/// Every `stride`-th element along `axis`, starting at `modulo`; a negative stride walks the axis
/// backwards from its last element down to `modulo` (ndarray's `Slice::new(modulo, None, stride)`).
fn downsample(op: &Downsample, input: &[usize], out: &[usize]) -> Result<Plan, String> {
    if op.stride == 0 || op.axis >= input.len() {
        return Err("downsampling with a zero stride or a bad axis".into());
    }
    let s = strides_of(input);
    let mut src_strides: Vec<isize> = s.iter().map(|&x| x as isize).collect();
    src_strides[op.axis] *= op.stride;
    let first = if op.stride > 0 { op.modulo } else { input[op.axis].saturating_sub(1) };
    let copy = StridedCopy {
        input: 0,
        shape: out.to_vec(),
        src_offset: if out.iter().product::<usize>() == 0 { 0 } else { first * s[op.axis] },
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

/// The fewest inputs the lowering of `node`'s operator reads.
fn min_inputs(node: &TypedNode) -> usize {
    let two = [node.op_is::<Conv>(), node.op_is::<Deconv>(), node.op_is::<EinSum>(), node.op_is::<TypedBinOp>()];
    if two.contains(&true) || node.op_is::<Gather>() {
        2
    } else if node.op_is::<Iff>() {
        3
    } else if node.op_is::<TypedConcat>() {
        0
    } else {
        1
    }
}

fn rms_norm(op: &RmsNorm, input: &[usize]) -> Result<Plan, String> {
    if op.axis >= input.len() {
        return Err(format!("axis {} of a rank-{} tensor", op.axis, input.len()));
    }
    let eps = op.eps.cast_to_scalar::<f32>().map_err(|e| e.to_string())?;
    Ok(Plan::new(
        Op::RmsNorm {
            outer: input[..op.axis].iter().product(),
            axis_len: input[op.axis],
            inner: input[op.axis + 1..].iter().product(),
            eps,
        },
        vec![0],
    ))
}

/// tract-onnx-opl's `Lrn { alpha, beta, bias, size }`, read from its `Debug` form (the op type is
/// not reachable through `tract_onnx`).
fn lrn(debug: &str, input: &[usize]) -> Result<Plan, String> {
    let field = |name: &str| -> Result<&str, String> {
        let start = debug.find(&format!("{name}: ")).ok_or(format!("Lrn without `{name}`: {debug}"))? + name.len() + 2;
        let rest = &debug[start..];
        Ok(rest[..rest.find([',', ' ', '}']).unwrap_or(rest.len())].trim())
    };
    let float = |name: &str| -> Result<f32, String> { field(name)?.parse().map_err(|e| format!("Lrn {name}: {e}")) };
    let size: usize = field("size")?.parse().map_err(|e| format!("Lrn size: {e}"))?;
    if input.len() < 2 {
        return Err("LRN on a tensor of rank < 2".into());
    }
    Ok(Plan::new(
        Op::Lrn {
            batch: input[0],
            channels: input[1],
            inner: input[2..].iter().product(),
            size,
            alpha: float("alpha")?,
            beta: float("beta")?,
            bias: float("bias")?,
        },
        vec![0],
    ))
}

/// The comparison a `TypedBinOp` computes, if it is one.
fn comparison(node: &TypedNode) -> Option<rt::Cmp> {
    let op = node.op_as::<TypedBinOp>()?;
    Some(match op.0.name() {
        "LT" => rt::Cmp::Lt,
        "LTE" => rt::Cmp::Le,
        "GT" => rt::Cmp::Gt,
        "GTE" => rt::Cmp::Ge,
        "Eq" => rt::Cmp::Eq,
        "NE" => rt::Cmp::Ne,
        _ => return None,
    })
}

/// Whether `node` is a comparison of two `f32` tensors whose bool result only feeds the condition
/// of `Iff` nodes: it then has no tensor of its own, [`select`] evaluates it in place.
pub fn is_fused_comparison(model: &TypedModel, node: &TypedNode) -> bool {
    let f32_operands = node.inputs.len() == 2
        && node.inputs.iter().all(|&i| model.outlet_fact(i).is_ok_and(|f| f.datum_type == f32::datum_type()));
    let is_output = model.output_outlets().map_or(true, |o| o.iter().any(|o| o.node == node.id));
    let successors = node.outputs.first().map(|o| o.successors.as_slice()).unwrap_or(&[]);
    comparison(node).is_some()
        && f32_operands
        && !is_output
        && !successors.is_empty()
        && successors
            .iter()
            .all(|s| s.slot == 0 && model.nodes.get(s.node).is_some_and(|n| n.op_is::<Iff>() && n.inputs.len() == 3))
}

/// `Iff(cond, t, f)` whose condition is a fused comparison `cmp(a, b)`: one `select_cmp` over the
/// four `f32` operands.
fn select(cx: &Lowering, node: &TypedNode, out: &[usize]) -> Result<Plan, String> {
    let cond = node.inputs[0];
    let producer = cx.model.nodes.get(cond.node).ok_or("a condition without a producer")?;
    let cmp = match comparison(producer) {
        Some(c) if is_fused_comparison(cx.model, producer) => c,
        _ => return Err("Iff with a condition that is not a comparison of float tensors".into()),
    };
    let operands = [producer.inputs[0], producer.inputs[1], node.inputs[1], node.inputs[2]];
    let mut strides: [Vec<usize>; 4] = Default::default();
    for (s, &o) in strides.iter_mut().zip(&operands) {
        let shape = cx.shape(o).map_err(|e| e.to_string())?;
        if shape.len() > out.len() || shape.iter().rev().zip(out.iter().rev()).any(|(&a, &b)| a != b && a != 1) {
            return Err(format!("operand of shape {shape:?} does not broadcast to {out:?}"));
        }
        *s = broadcast_strides(&shape, out);
    }
    Ok(Plan { op: Op::Select { cmp, strides }, inputs: operands.map(Src::Outlet).into() })
}

/// Gather with constant indices: one strided copy per index.
fn gather(axis: usize, indices: Option<Arc<Tensor>>, data: &[usize], out: &[usize]) -> Result<Plan, String> {
    let indices = indices.ok_or("Gather with run-time indices")?;
    if axis >= data.len() {
        return Err(format!("axis {axis} of a rank-{} tensor", data.len()));
    }
    let idx = indices.cast_to::<i64>().map_err(|e| e.to_string())?;
    let idx = idx.to_plain_array_view::<i64>().map_err(|e| e.to_string())?.iter().copied().collect::<Vec<_>>();
    let len = data[axis] as i64;
    let (ds, os) = (strides_of(data), strides_of(out));
    let q = indices.rank();
    if out.len() != data.len() - 1 + q {
        return Err("unexpected Gather output rank".into());
    }
    // The copied block: every axis of `data` but `axis`; in the output, the axes before and after
    // the index axes.
    let shape: Vec<usize> = data.iter().enumerate().filter(|&(d, _)| d != axis).map(|(_, &n)| n).collect();
    let src_strides: Vec<isize> = (0..data.len()).filter(|&d| d != axis).map(|d| ds[d] as isize).collect();
    let dst_strides: Vec<isize> =
        (0..out.len()).filter(|&d| d < axis || d >= axis + q).map(|d| os[d] as isize).collect();
    let post: usize = data[axis + 1..].iter().product();
    let mut copies = Vec::with_capacity(idx.len());
    for (j, &i) in idx.iter().enumerate() {
        let i = if i < 0 { i + len } else { i };
        if !(0..len).contains(&i) {
            return Err(format!("Gather index {i} out of range for an axis of {len}"));
        }
        copies.push(StridedCopy {
            input: 0,
            shape: shape.clone(),
            src_offset: i as usize * ds[axis],
            src_strides: src_strides.clone(),
            dst_offset: j * post,
            dst_strides: dst_strides.clone(),
        });
    }
    Ok(Plan::new(Op::Copy(copies), vec![0]))
}

/// A resize's options by their tract names (`Debug` forms, shared by tract-core's and
/// tract-onnx-opl's Resize).
struct ResizeSpec {
    coord: String,
    interpolator: String,
    nearest: String,
}

impl ResizeSpec {
    /// tract's integer `NearestUpsample`: `out[i] = in[i / scale]`.
    fn upsample() -> ResizeSpec {
        ResizeSpec { coord: "Asymmetric".into(), interpolator: "Nearest".into(), nearest: "Floor".into() }
    }

    /// The spec and the scales input of tract-onnx-opl's `Resize` `Debug` output, when it has no
    /// option the kernels lack (axes, ROI, antialias, exclude_outside, aspect-ratio policy).
    fn from_onnx_debug(debug: &str) -> Result<(ResizeSpec, Option<usize>), String> {
        let field = |name: &str| -> Result<String, String> {
            let start = debug.find(&format!("{name}: ")).ok_or(format!("Resize without `{name}`"))? + name.len() + 2;
            let rest = &debug[start..];
            Ok(rest[..rest.find([',', '}']).unwrap_or(rest.len())].trim().to_string())
        };
        for (name, want) in [
            ("axes", "None"),
            ("antialias", "false"),
            ("exclude_outside", "false"),
            ("optional_roi_input", "None"),
            ("keep_aspect_ratio_policy", "Stretch"),
        ] {
            let got = field(name)?;
            if got != want {
                return Err(format!("Resize with {name} = {got}"));
            }
        }
        let coord = field("coord_transformer")?;
        let coord = coord.strip_prefix("Plain(").and_then(|c| c.strip_suffix(')')).ok_or(format!("Resize {coord}"))?;
        let scales = field("optional_scales_input")?;
        let scales = scales.strip_prefix("Some(").and_then(|c| c.strip_suffix(')')).and_then(|c| c.parse().ok());
        let spec =
            ResizeSpec { coord: coord.to_string(), interpolator: field("interpolator")?, nearest: field("nearest")? };
        Ok((spec, scales))
    }
}

/// The per-axis scales of a Resize: its constant `scales` input when it has one entry per axis,
/// else `out / in` (ONNX's definition when `sizes` is given).
fn resize_scales(
    cx: &Lowering,
    node: &TypedNode,
    scales_input: Option<usize>,
    input: &[usize],
    out: &[usize],
) -> Vec<f32> {
    let given = scales_input
        .and_then(|i| node.inputs.get(i))
        .and_then(|&o| cx.konst(o))
        .and_then(|k| k.cast_to::<f32>().ok()?.to_plain_array_view::<f32>().ok().map(|v| v.iter().copied().collect()))
        .filter(|v: &Vec<f32>| v.len() == input.len());
    given.unwrap_or_else(|| {
        input.iter().zip(out).map(|(&i, &o)| if i == 0 { 1.0 } else { o as f32 / i as f32 }).collect()
    })
}

/// Resize of the two innermost axes (1-D: the innermost) with `rt::resize_nearest` /
/// `rt::resize_linear`.
fn resize(spec: &ResizeSpec, scales: &[f32], input: &[usize], out: &[usize]) -> Result<Plan, String> {
    let rank = input.len();
    if rank == 0 || out.len() != rank || scales.len() != rank {
        return Err("Resize of a scalar or with mismatched ranks".into());
    }
    let lead = rank.saturating_sub(2);
    if input[..lead] != out[..lead] {
        return Err("Resize of an axis other than the two innermost".into());
    }
    let coord = match spec.coord.as_str() {
        "HalfPixel" => rt::CoordMode::HalfPixel,
        "HalfPixelSymmetric" => rt::CoordMode::HalfPixelSymmetric,
        "PytorchHalfPixel" => rt::CoordMode::PytorchHalfPixel,
        "AlignCorners" => rt::CoordMode::AlignCorners,
        "Asymmetric" => rt::CoordMode::Asymmetric,
        "TfHalfPixelForNn" => rt::CoordMode::TfHalfPixelForNn,
        c => return Err(format!("Resize coordinate mode {c}")),
    };
    let nearest = match spec.interpolator.as_str() {
        "Linear" => None,
        "Nearest" => Some(match spec.nearest.as_str() {
            "Floor" => rt::NearestMode::Floor,
            "Ceil" => rt::NearestMode::Ceil,
            "RoundPreferFloor" => rt::NearestMode::RoundPreferFloor,
            "RoundPreferCeil" => rt::NearestMode::RoundPreferCeil,
            n => return Err(format!("Resize nearest mode {n}")),
        }),
        i => return Err(format!("Resize interpolation {i}")),
    };
    let (in_h, out_h, scale_h) =
        if rank >= 2 { (input[rank - 2], out[rank - 2], scales[rank - 2]) } else { (1, 1, 1.0) };
    let params = rt::Resize {
        batch_channels: input[..lead].iter().product(),
        in_h,
        in_w: input[rank - 1],
        out_h,
        out_w: out[rank - 1],
        scale_h,
        scale_w: scales[rank - 1],
        coord,
    };
    Ok(Plan::new(Op::Resize { params, nearest }, vec![0]))
}

#[cfg(test)]
mod tests {
    use super::permute_values;

    #[test]
    fn permutes_constants_at_build_time() {
        // [2, 3] transposed to [3, 2].
        let v = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(permute_values(&v, &[2, 3], &[1, 0]), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
        // Identity permutation and a 3-D rotation.
        assert_eq!(permute_values(&v, &[2, 3], &[0, 1]), v.to_vec());
        let w: Vec<f32> = (0..24).map(|x| x as f32).collect();
        let r = permute_values(&w, &[2, 3, 4], &[2, 0, 1]);
        // r[k][i][j] = w[i][j][k]; with (i, j, k) = (1, 2, 1): r[(1*2 + 1)*3 + 2] = w[(1*3 + 2)*4 + 1].
        assert_eq!(r[11], w[21]);
    }
}
