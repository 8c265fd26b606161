//! float32 TFLite models, lowered to the float kernels of `runtime-min`.
//!
//! Those kernels take NCHW feature maps (ONNX's layout), so every rank-4 tensor of a float model
//! is stored NCHW in the IR ("internal" shape below) while the model's ports keep TFLite's NHWC
//! shapes: weights are permuted at build time (OHWI and 1HWO to OIHW, a flatten's fully connected
//! columns follow the flatten's order), and a step converts between the two layouts only where
//! the bytes differ: an NHWC input with more than one channel and more than one position, a
//! RESHAPE of such a tensor, an NHWC output. Where one of the two extents is 1 the layouts hold
//! the same bytes and the conversion is a view.

use sramfit_runtime_min::{self as rt, Activation};

use super::conv::{nhwc, ConvWindow, PoolWindow};
use super::{OpCall, Walk};
use crate::ir::{Op, TensorId, TensorKind};
use crate::ops::binary::{Binary, BinaryOp};
use crate::ops::copy;
use crate::ops::lowering::{broadcast_strides, permutation};
use crate::ops::pad::PadOp;
use crate::ops::pool::{Pool, PoolKind};
use crate::ops::qhybrid_conv::QHybridConv;
use crate::ops::reduce::{ReduceOp, Reducer};
use crate::ops::softmax::SoftmaxOp;
use crate::ops::unary::Unary;
use crate::ops::view::View;
use crate::tensor::{strides_of, DType, Data, Quant};
use sramfit_runtime_min::quant as rtq;
use tract_tflite::tflite;

/// The IR (NCHW) shape of a TFLite shape: rank 4 is permuted, other ranks kept.
pub(super) fn internal(shape: &[usize]) -> Vec<usize> {
    match *shape {
        [n, h, w, c] => vec![n, c, h, w],
        _ => shape.to_vec(),
    }
}

/// Whether NHWC and NCHW hold the same bytes for this TFLite shape.
fn same_bytes(shape: &[usize]) -> bool {
    match *shape {
        [_, h, w, c] => c == 1 || h * w == 1,
        _ => true,
    }
}

/// The fused activation of a float operator.
fn activation(f: tflite::ActivationFunctionType) -> Result<Activation, String> {
    Ok(match f {
        tflite::ActivationFunctionType::NONE => Activation::None,
        tflite::ActivationFunctionType::RELU => Activation::Relu,
        tflite::ActivationFunctionType::RELU6 => Activation::Clip { min: 0.0, max: 6.0 },
        tflite::ActivationFunctionType::RELU_N1_TO_1 => Activation::Clip { min: -1.0, max: 1.0 },
        other => return Err(format!("fused activation {}", other.variant_name().unwrap_or("unknown"))),
    })
}

impl Walk<'_> {
    /// The float constant of tensor `t`.
    fn floats(&self, t: i32) -> Result<Vec<f32>, String> {
        let bytes = self.data(t)?.ok_or_else(|| format!("`{}` must be a constant", self.tensor_name(t)))?;
        if self.tensor(t)?.type_() != tflite::TensorType::FLOAT32 {
            return Err(format!(
                "`{}` is not float32 (of hybrid operators, with int8 weights, sramfit has CONV_2D with per-tensor weights)",
                self.tensor_name(t)
            ));
        }
        let n: usize = self.shape(t)?.iter().product();
        if bytes.len() != 4 * n {
            return Err(format!("`{}` holds {} bytes for {n} floats", self.tensor_name(t), bytes.len()));
        }
        Ok(bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
    }

    /// A float input port: its tensor in TFLite's shape, and the internal tensor the model reads
    /// (the same bytes viewed, or transposed from NHWC).
    pub(super) fn float_input(&mut self, name: String, shape: Vec<usize>, index: usize) -> TensorId {
        let port = self.graph.add_tensor(name.clone(), shape.clone(), DType::F32, TensorKind::Input(index));
        self.graph.inputs.push(port);
        if shape.len() != 4 {
            return port;
        }
        let y = self.graph.add_tensor(format!("{name}.nchw"), internal(&shape), DType::F32, TensorKind::Activation);
        let op = match same_bytes(&shape) {
            true => Op::View(View),
            false => Op::Copy(copy::transpose(&[0, 3, 1, 2], &shape, &internal(&shape))),
        };
        self.graph.nodes.push(crate::ir::Node {
            name: format!("{name}.nchw"),
            source_op: "input".into(),
            op,
            inputs: vec![port],
            output: y,
        });
        y
    }

    /// The tensor of graph output `id` in TFLite's shape (`declared`): itself, or a view or
    /// transpose of its internal NCHW tensor.
    pub(super) fn float_output(&mut self, id: TensorId, declared: &[usize]) -> TensorId {
        if declared.len() != 4 {
            return id;
        }
        let name = std::mem::take(&mut self.graph.tensors[id].name);
        self.graph.tensors[id].name = format!("{name}.nchw");
        let y = self.graph.add_tensor(name.clone(), declared.to_vec(), DType::F32, TensorKind::Activation);
        let op = match same_bytes(declared) {
            true => Op::View(View),
            false => Op::Copy(copy::transpose(&[0, 2, 3, 1], &internal(declared), declared)),
        };
        self.graph.nodes.push(crate::ir::Node { name, source_op: "output".into(), op, inputs: vec![id], output: y });
        y
    }

    /// A float output `i` of `c` with the internal form of its declared shape.
    fn float_out(&mut self, c: &OpCall<'_>, i: usize) -> Result<TensorId, String> {
        let t = *c.outputs.get(i).ok_or_else(|| format!("output {i} is missing"))?;
        let shape = internal(&self.shape(t)?);
        let id = self.graph.add_tensor(self.tensor_name(t), shape, DType::F32, TensorKind::Activation);
        self.values.insert(t, Some(id));
        Ok(id)
    }

    /// Input `i` of `c` in TFLite's element order (a rank-4 internal tensor transposed to NHWC
    /// where the bytes differ), with its TFLite shape.
    fn in_tflite_order(&mut self, c: &OpCall<'_>, i: usize) -> Result<(TensorId, Vec<usize>), String> {
        let x = self.act(c, i)?;
        let declared = self.shape(c.input(i).expect("act checked it"))?;
        if declared.len() != 4 || same_bytes(&declared) {
            return Ok((x, declared));
        }
        let name = format!("{}.nhwc", self.graph.tensors[x].name);
        let y = self.graph.add_tensor(name.clone(), declared.clone(), DType::F32, TensorKind::Activation);
        let op = Op::Copy(copy::transpose(&[0, 2, 3, 1], &self.graph.tensors[x].shape.clone(), &declared));
        self.graph.nodes.push(crate::ir::Node { name, source_op: c.op.to_string(), op, inputs: vec![x], output: y });
        Ok((y, declared))
    }

    /// A float input `i` of `c` as an IR tensor: a run-time tensor, or a constant in internal
    /// layout, its shape broadcast to `rank` against TFLite's trailing axes first.
    fn float_operand(&mut self, c: &OpCall<'_>, i: usize, rank: usize) -> Result<TensorId, String> {
        let t = c.input(i).ok_or_else(|| format!("input {i} is missing"))?;
        if let Some(Some(id)) = self.values.get(&t) {
            return Ok(*id);
        }
        let values = self.floats(t)?;
        let mut shape = self.shape(t)?;
        while shape.len() < rank {
            shape.insert(0, 1);
        }
        let data = Data::F32(values);
        let (shape, data) = match shape.len() == 4 && rank == 4 {
            true => (internal(&shape), data.gather(permutation(&shape, &[0, 3, 1, 2]))),
            false => (shape, data),
        };
        Ok(self.graph.add_const(format!("{}.input{i}", c.name), shape, data))
    }
}

/// The lowerings of float models, by TFLite operator name.
pub(super) const LOWERINGS: &[(&[&str], super::Lowering)] = &[
    (&["CONV_2D", "DEPTHWISE_CONV_2D"], conv),
    (&["FULLY_CONNECTED"], fully_connected),
    (&["BATCH_MATMUL"], batch_matmul),
    (&["AVERAGE_POOL_2D", "MAX_POOL_2D"], pool),
    (&["MEAN"], mean),
    (&["SOFTMAX"], softmax),
    (&["ADD", "SUB", "MUL"], binary),
    (&["LOGISTIC", "TANH", "RELU", "RELU6", "RELU_N1_TO_1", "HARD_SWISH", "LEAKY_RELU"], unary),
    (&["RESHAPE", "SQUEEZE", "EXPAND_DIMS"], reshape),
    (&["TRANSPOSE", "STRIDED_SLICE"], rearrange),
    (&["CONCATENATION"], concat),
    (&["PAD", "PADV2"], pad),
];

/// CONV_2D and DEPTHWISE_CONV_2D: the weights permuted to OIHW; a CONV_2D with int8 weights is
/// TensorFlow Lite's hybrid convolution ([`hybrid_conv`]).
fn conv(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let x = w.act(c, 0)?;
    let (batch, in_h, in_w, in_c) = nhwc(&w.shape(c.input(0).expect("act checked it"))?)?;
    let wt = c.input(1).ok_or("no filter")?;
    let ws = w.shape(wt)?;
    let win = ConvWindow::of(c, (in_h, in_w, in_c), &ws)?;
    if c.op == "CONV_2D" && w.tensor(wt)?.type_() == tflite::TensorType::INT8 {
        return hybrid_conv(w, c, x, (batch, in_h, in_w, in_c), &win);
    }
    let ((out_c, groups), (kh, kw)) = ((win.out_channels, win.groups), win.kernel);
    // To OIHW: from `[out, kh, kw, in / groups]`, or (depthwise) `[1, kh, kw, out]`.
    let to_oihw: &[usize] = if win.depthwise { &[3, 0, 1, 2] } else { &[0, 3, 1, 2] };
    let oihw = Data::F32(w.floats(wt)?).gather(permutation(&ws, to_oihw));
    let ((stride_h, stride_w), (dilation_h, dilation_w)) = (win.stride, win.dilation);
    let ((out_h, out_w), (pad_top, pad_left)) = (win.out, win.pad);
    let p = rt::Conv2d {
        batch,
        in_channels: in_c,
        in_h,
        in_w,
        out_channels: out_c,
        out_h,
        out_w,
        kernel_h: kh,
        kernel_w: kw,
        stride_h,
        stride_w,
        dilation_h,
        dilation_w,
        pad_top,
        pad_left,
        groups,
        act: activation(win.activation)?,
        weights: rt::ConvWeights::Oihw,
        input: rt::ConvInput::Nchw,
    };
    let weights = w.graph.add_const(format!("{}.weights", c.name), vec![out_c, in_c / groups, kh, kw], oihw);
    let mut inputs = vec![x, weights];
    if let Some(b) = c.input(2) {
        inputs.push(w.graph.add_const(format!("{}.bias", c.name), vec![out_c], Data::F32(w.floats(b)?)));
    }
    let y = w.float_out(c, 0)?;
    w.push(c, Op::Conv(p), inputs, y);
    Ok(())
}

/// A CONV_2D with int8 weights on a float input (a hybrid file): TensorFlow Lite's `EvalHybrid`
/// ([`rtq::hybrid_conv2d`]), the weights kept int8 and OHWI, the NCHW activations read by strides.
/// TensorFlow Lite takes another path (asymmetric input quantization) for per-channel weights and
/// grouped convolutions: those are refused.
fn hybrid_conv(
    w: &mut Walk<'_>,
    c: &OpCall<'_>,
    x: TensorId,
    (batch, in_h, in_w, in_c): (usize, usize, usize, usize),
    win: &ConvWindow,
) -> Result<(), String> {
    let wt = c.input(1).expect("conv checked it");
    let weight_scale = match w.quant(wt)? {
        Some(Quant::PerTensor { scale, zero_point: 0 }) => scale,
        _ => return Err("a hybrid CONV_2D whose weights are not quantized per tensor, symmetric".into()),
    };
    if win.groups != 1 {
        return Err("a grouped hybrid CONV_2D".into());
    }
    let weights: Vec<i8> = w.ints(wt)?.iter().map(|&v| v as i8).collect();
    let (act_min, act_max) = super::fused(win.activation)?;
    let conv = rtq::Conv2d {
        batch,
        in_channels: in_c,
        in_h,
        in_w,
        out_channels: win.out_channels,
        out_h: win.out.0,
        out_w: win.out.1,
        kernel_h: win.kernel.0,
        kernel_w: win.kernel.1,
        stride_h: win.stride.0,
        stride_w: win.stride.1,
        dilation_h: win.dilation.0,
        dilation_w: win.dilation.1,
        pad_top: win.pad.0,
        pad_left: win.pad.1,
        groups: 1,
        x_strides: rtq::ImageStrides::nchw(in_c, in_h, in_w),
        y_strides: rtq::ImageStrides::nchw(win.out_channels, win.out.0, win.out.1),
        x_zero_point: 0,
        w_zero_point: 0,
        y_zero_point: 0,
        act_min: 0,
        act_max: 0,
    };
    let shape = vec![weights.len()];
    let mut inputs = vec![x, w.graph.add_const(format!("{}.weights", c.name), shape, Data::I8(weights))];
    if let Some(b) = c.input(2) {
        let bias = Data::F32(w.floats(b)?);
        if bias.len() != win.out_channels {
            return Err(format!("a bias of {} values for {} channels", bias.len(), win.out_channels));
        }
        inputs.push(w.graph.add_const(format!("{}.bias", c.name), vec![bias.len()], bias));
    }
    let y = w.float_out(c, 0)?;
    w.push(c, Op::QHybridConv(QHybridConv(rtq::HybridConv2d { conv, weight_scale, act_min, act_max })), inputs, y);
    Ok(())
}

/// FULLY_CONNECTED: `[batch, in]` (the input in TFLite's element order) times the transpose of
/// `[out, in]`, a matrix product reading the weights by strides.
fn fully_connected(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let (x, xs) = w.in_tflite_order(c, 0)?;
    let opt = c.table.builtin_options_as_fully_connected_options().ok_or("no FullyConnectedOptions")?;
    let wt = c.input(1).ok_or("no weights")?;
    let ws = w.shape(wt)?;
    let [out_features, in_features] = ws[..] else { return Err(format!("weights of shape {ws:?}")) };
    let len: usize = xs.iter().product();
    if in_features == 0 || !len.is_multiple_of(in_features) {
        return Err(format!("an input of {len} elements for weights {ws:?}"));
    }
    let batch = len / in_features;
    let p = rt::MatMul {
        b_row_stride: 1,
        b_col_stride: in_features,
        act: activation(opt.fused_activation_function())?,
        ..rt::MatMul::row_major(batch, out_features, in_features)
    };
    let weights = w.graph.add_const(format!("{}.weights", c.name), ws.clone(), Data::F32(w.floats(wt)?));
    let mut inputs = vec![x, weights];
    if let Some(b) = c.input(2) {
        inputs.push(w.graph.add_const(format!("{}.bias", c.name), vec![out_features], Data::F32(w.floats(b)?)));
    }
    let y = w.float_out(c, 0)?;
    w.push(c, Op::MatMul(p), inputs, y);
    Ok(())
}

/// AVERAGE_POOL_2D and MAX_POOL_2D (padding not counted).
fn pool(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let x = w.act(c, 0)?;
    let (batch, in_h, in_w, channels) = nhwc(&w.shape(c.input(0).expect("act checked it"))?)?;
    let win = PoolWindow::of(c, (in_h, in_w))?;
    let ((kernel_h, kernel_w), (stride_h, stride_w)) = (win.kernel, win.stride);
    let ((out_h, out_w), (pad_top, pad_left)) = (win.out, win.pad);
    if activation(win.activation)? != Activation::None {
        return Err("a fused activation after pooling".into());
    }
    let p = rt::Pool2d {
        batch,
        channels,
        in_d: 1,
        out_d: 1,
        kernel_d: 1,
        stride_d: 1,
        dilation_d: 1,
        pad_front: 0,
        pad_back: 0,
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
        pad_bottom: ((out_h - 1) * stride_h + kernel_h).saturating_sub(in_h + pad_top),
        pad_right: ((out_w - 1) * stride_w + kernel_w).saturating_sub(in_w + pad_left),
        count_include_pad: false,
    };
    let kind = if c.op == "MAX_POOL_2D" { PoolKind::Max } else { PoolKind::Avg };
    let y = w.float_out(c, 0)?;
    w.push(c, Op::Pool(Pool { kind, params: p }), vec![x], y);
    Ok(())
}

/// MEAN over constant axes (TFLite's axes mapped to the internal layout).
fn mean(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let x = w.act(c, 0)?;
    let declared = w.shape(c.input(0).expect("act checked it"))?;
    let rank = declared.len();
    let to_internal = |a: usize| if rank == 4 { [0, 2, 3, 1][a] } else { a };
    let axes = (w.ints(c.input(1).ok_or("no axes")?)?.iter())
        .map(|&a| {
            let a = if a < 0 { a + rank as i64 } else { a };
            usize::try_from(a).ok().filter(|&a| a < rank).map(to_internal).ok_or_else(|| format!("axis {a}"))
        })
        .collect::<Result<Vec<usize>, _>>()?;
    let shape = internal(&declared);
    let strides = strides_of(&shape);
    let kept: Vec<usize> = (0..rank).filter(|a| !axes.contains(a)).collect();
    let y = w.float_out(c, 0)?;
    let out_rank = w.graph.tensors[y].shape.len();
    // The output's axes: the kept ones, and (keep_dims) an extent-1 axis for each reduced one.
    let out_in_strides: Vec<usize> = match out_rank == rank {
        true => (0..rank).map(|a| if axes.contains(&a) { 0 } else { strides[a] }).collect(),
        false => kept.iter().map(|&a| strides[a]).collect(),
    };
    if out_in_strides.len() != out_rank {
        return Err(format!("a mean of {declared:?} into a rank-{out_rank} output"));
    }
    let op = ReduceOp {
        kind: Reducer::Mean,
        out_in_strides,
        red_shape: axes.iter().map(|&a| shape[a]).collect(),
        red_strides: axes.iter().map(|&a| strides[a]).collect(),
    };
    w.push(c, Op::Reduce(op), vec![x], y);
    Ok(())
}

/// SOFTMAX along TFLite's last axis (the channels of a rank-4 tensor, internally axis 1).
fn softmax(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let x = w.act(c, 0)?;
    if c.table.builtin_options_as_softmax_options().is_some_and(|o| o.beta() != 1.0) {
        return Err("a softmax with beta other than 1".into());
    }
    let shape = w.graph.tensors[x].shape.clone();
    let axis = if shape.len() == 4 { 1 } else { shape.len().checked_sub(1).ok_or("a softmax of a scalar")? };
    let op = SoftmaxOp {
        log: false,
        outer: shape[..axis].iter().product(),
        axis_len: shape[axis],
        inner: shape[axis + 1..].iter().product(),
    };
    let y = w.float_out(c, 0)?;
    w.push(c, Op::Softmax(op), vec![x], y);
    Ok(())
}

/// ADD, SUB, MUL with broadcasting in the internal layout; a fused activation is a step of its
/// own after it (the in-place rewrite lets it overwrite the sum).
fn binary(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let (activation_fn, kind) = match c.op {
        "ADD" => (c.table.builtin_options_as_add_options().map(|o| o.fused_activation_function()), Binary::Add),
        "SUB" => (c.table.builtin_options_as_sub_options().map(|o| o.fused_activation_function()), Binary::Sub),
        _ => (c.table.builtin_options_as_mul_options().map(|o| o.fused_activation_function()), Binary::Mul),
    };
    let after = match activation(activation_fn.unwrap_or(tflite::ActivationFunctionType::NONE))? {
        Activation::None => None,
        Activation::Relu => Some(Unary::Relu),
        Activation::Clip { min, max } => Some(Unary::Clip { min, max }),
        other => return Err(format!("fused activation {other:?} after an elementwise operator")),
    };
    let rank = w.out_shape(c, 0)?.len();
    let (a, b) = (w.float_operand(c, 0, rank)?, w.float_operand(c, 1, rank)?);
    let (sa, sb) = (w.graph.tensors[a].shape.clone(), w.graph.tensors[b].shape.clone());
    let out = crate::import::quant::broadcast_shape(&sa, &sb)?;
    let op = BinaryOp::new(kind, broadcast_strides(&sa, &out), broadcast_strides(&sb, &out));
    let y = w.float_out(c, 0)?;
    let Some(f) = after else {
        w.push(c, Op::Binary(op), vec![a, b], y);
        return Ok(());
    };
    let name = format!("{}.unactivated", w.graph.tensors[y].name);
    let sum = w.graph.add_tensor(name, w.graph.tensors[y].shape.clone(), DType::F32, TensorKind::Activation);
    w.push(c, Op::Binary(op), vec![a, b], sum);
    w.push(c, Op::Unary(f), vec![sum], y);
    Ok(())
}

/// LOGISTIC, TANH, RELU, RELU6, RELU_N1_TO_1, HARD_SWISH, LEAKY_RELU.
fn unary(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let x = w.act(c, 0)?;
    let f = match c.op {
        "LOGISTIC" => Unary::Sigmoid,
        "TANH" => Unary::Tanh,
        "RELU" => Unary::Relu,
        "RELU6" => Unary::Clip { min: 0.0, max: 6.0 },
        "RELU_N1_TO_1" => Unary::Clip { min: -1.0, max: 1.0 },
        "HARD_SWISH" => Unary::HardSwish,
        _ => Unary::LeakyRelu { alpha: c.table.builtin_options_as_leaky_relu_options().map_or(0.2, |o| o.alpha()) },
    };
    let y = w.float_out(c, 0)?;
    w.push(c, Op::Unary(f), vec![x], y);
    Ok(())
}

/// RESHAPE, SQUEEZE, EXPAND_DIMS: TFLite's element order kept (a transpose on either side where
/// a rank-4 tensor's layouts differ).
fn reshape(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let (x, _) = w.in_tflite_order(c, 0)?;
    in_tflite_order_out(w, c, Op::View(View), vec![x])
}

/// TRANSPOSE by a constant permutation and STRIDED_SLICE, in TFLite's element order.
fn rearrange(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let (x, xs) = w.in_tflite_order(c, 0)?;
    let copy = match c.op {
        "TRANSPOSE" => super::layout::transpose_copy(w, c, &xs)?.0,
        _ => copy::Copies(vec![super::layout::strided_slice_copy(w, c, &xs)?]),
    };
    in_tflite_order_out(w, c, Op::Copy(copy), vec![x])
}

/// Output 0 of `c` written by `op` from `inputs` in TFLite's element order (its declared shape),
/// then brought to the internal layout (a transpose where a rank-4 tensor's layouts differ).
fn in_tflite_order_out(w: &mut Walk<'_>, c: &OpCall<'_>, op: Op, inputs: Vec<TensorId>) -> Result<(), String> {
    let declared = w.out_shape(c, 0)?;
    if declared.len() == 4 && !same_bytes(&declared) {
        let name = format!("{}.nhwc", w.tensor_name(c.outputs[0]));
        let flat = w.graph.add_tensor(name, declared.clone(), DType::F32, TensorKind::Activation);
        w.push(c, op, inputs, flat);
        let y = w.float_out(c, 0)?;
        w.push(c, Op::Copy(copy::transpose(&[0, 3, 1, 2], &declared, &internal(&declared))), vec![flat], y);
        return Ok(());
    }
    let y = w.float_out(c, 0)?;
    w.push(c, op, inputs, y);
    Ok(())
}

/// BATCH_MATMUL of two float tensors with equal batch axes (`adj_x` / `adj_y` as strides).
fn batch_matmul(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let (a, sa) = w.in_tflite_order(c, 0)?;
    let (b, sb) = w.in_tflite_order(c, 1)?;
    let opt = c.table.builtin_options_as_batch_mat_mul_options().ok_or("no BatchMatMulOptions")?;
    let (ra, rb) = (sa.len(), sb.len());
    if ra < 2 || ra != rb || sa[..ra - 2] != sb[..rb - 2] {
        return Err(format!("a batch matmul of {sa:?} by {sb:?} (equal batch axes are supported)"));
    }
    let (m, ka) = if opt.adj_x() { (sa[ra - 1], sa[ra - 2]) } else { (sa[ra - 2], sa[ra - 1]) };
    let (kb, n) = if opt.adj_y() { (sb[rb - 1], sb[rb - 2]) } else { (sb[rb - 2], sb[rb - 1]) };
    if ka != kb {
        return Err(format!("a batch matmul of {sa:?} by {sb:?}: inner extents differ"));
    }
    let batch: usize = sa[..ra - 2].iter().product();
    let mut p = rt::MatMul::row_major(m, n, ka);
    (p.batch[3], p.a_batch_strides[3], p.b_batch_strides[3], p.c_batch_strides[3]) = (batch, m * ka, ka * n, m * n);
    if opt.adj_x() {
        (p.a_row_stride, p.a_col_stride) = (1, m);
    }
    if opt.adj_y() {
        (p.b_row_stride, p.b_col_stride) = (1, ka);
    }
    in_tflite_order_out(w, c, Op::MatMul(p), vec![a, b])
}

/// CONCATENATION along TFLite's axis (mapped to the internal layout): copies.
fn concat(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let opt = c.table.builtin_options_as_concatenation_options().ok_or("no ConcatenationOptions")?;
    if activation(opt.fused_activation_function())? != Activation::None {
        return Err("a fused activation after a concatenation".into());
    }
    let rank = w.out_shape(c, 0)?.len();
    let inputs = (0..c.inputs.len()).map(|i| w.float_operand(c, i, rank)).collect::<Result<Vec<_>, _>>()?;
    let a = opt.axis() as i64;
    let a = usize::try_from(if a < 0 { a + rank as i64 } else { a }).map_err(|_| "a negative axis")?;
    let at = if rank == 4 { [0, 2, 3, 1][a.min(3)] } else { a };
    let shapes: Vec<Vec<usize>> = inputs.iter().map(|&t| w.graph.tensors[t].shape.clone()).collect();
    let y = w.float_out(c, 0)?;
    let out = w.graph.tensors[y].shape.clone();
    w.push(c, Op::Copy(copy::concat_copies(&shapes, at, &out)), inputs, y);
    Ok(())
}

/// PAD / PADV2 with a constant (0 for PAD), paddings mapped to the internal layout.
fn pad(w: &mut Walk<'_>, c: &OpCall<'_>) -> Result<(), String> {
    let x = w.act(c, 0)?;
    let declared = w.shape(c.input(0).expect("act checked it"))?;
    let pads = w.ints(c.input(1).ok_or("no paddings")?)?;
    if pads.len() != 2 * declared.len() || pads.iter().any(|&p| p < 0) {
        return Err(format!("paddings {pads:?} for a rank-{} input", declared.len()));
    }
    let begin: Vec<isize> = (0..declared.len()).map(|a| pads[2 * a] as isize).collect();
    let begin = match *begin {
        [n, h, ww, ch] => vec![n, ch, h, ww],
        _ => begin,
    };
    let value = match c.input(2) {
        Some(t) => *w.floats(t)?.first().ok_or("an empty pad value")?,
        None => 0.0,
    };
    let y = w.float_out(c, 0)?;
    w.push(c, Op::Pad(PadOp { pads_begin: begin, mode: rt::PadMode::Constant(value) }), vec![x], y);
    Ok(())
}
