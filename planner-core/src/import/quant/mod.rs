//! Quantized ONNX models, read from the protobuf (tract folds every weight's DequantizeLinear into
//! an `f32` constant before sramfit sees its graph, so the integers, scales and zero points are
//! taken from the file itself).
//!
//! Both formats onnxruntime writes become one form before anything is lowered: an integer
//! operator call ([`Call`]: the ONNX operator it computes, its operands — quantized activations,
//! quantized weights, plain constants — and the quantization of its outputs), lowered by the
//! operator families' modules to the integer IR operators of [`crate::ops`]:
//!
//! - **QDQ**: a float operator whose inputs are DequantizeLinear outputs and whose result goes,
//!   possibly through Relu / Clip (fused as the output clamp), into exactly one QuantizeLinear
//!   is that call, the QuantizeLinear's parameters its output's ([`Walk::region`]). The float
//!   graph inside is never executed. A QuantizeLinear of a DequantizeLinear is a requantization
//!   (or nothing, when the parameters agree).
//! - **QOperator**: QLinearConv, QLinearMatMul, QGemm, QLinearAdd, ... carry their parameters as
//!   inputs ([`qoperator`]); MaxPool, Reshape, Transpose, Pad, ... on integer tensors keep their
//!   input's quantization.
//!
//! A float operator reading dequantized values whose result reaches a QuantizeLinear any other
//! way has no integer form here and is an error naming it, never run in float. Float operators
//! before the first QuantizeLinear or after the last DequantizeLinear run in float (elementwise
//! functions only); QuantizeLinear of a float tensor and DequantizeLinear into one are the
//! [`crate::ops::qconvert`] steps at that boundary.

mod conv;
mod elementwise;
mod geometry;
mod layout;
mod matmul;
mod onnx;
mod qoperator;
mod reduce;
mod weights;

pub(in crate::import) use elementwise::broadcast_shape;

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use tract_onnx::pb;

use self::onnx::{dtype_of, elem, elem_name, Attrs, Konst};
use super::proto::{declared_inputs, resolve_input_shapes};
use super::InputShape;
use crate::error::{CompileError, UnsupportedOp};
use crate::ir::{Graph, Node, Op, TensorId, TensorKind};
use crate::ops::qconvert::{Direction, QConvert};
use crate::ops::qparams::{Convention, QParams};
use crate::ops::requantize::Requantize;
use crate::tensor::{DType, Data, Quant};

/// Operators only quantized models contain: their presence sends a model through this importer.
const QUANTIZED_OPS: &[&str] = &[
    "QuantizeLinear",
    "DequantizeLinear",
    "QLinearConv",
    "QLinearMatMul",
    "ConvInteger",
    "MatMulInteger",
    "QGemm",
    "QLinearAdd",
    "QLinearMul",
    "QLinearAveragePool",
    "QLinearGlobalAveragePool",
    "QLinearConcat",
    "QLinearSigmoid",
    "QLinearLeakyRelu",
    "QLinearSoftmax",
];

/// Whether the model holds quantized operators or integer inputs (QOperator one-node models,
/// operators on raw integers), and is imported here rather than through tract.
pub fn is_quantized(proto: &pb::ModelProto) -> bool {
    let integer_input =
        declared_inputs(proto).iter().any(|d| matches!(dtype_of(d.elem_type), Some(t) if t != DType::F32));
    integer_input
        || proto.graph.as_ref().is_some_and(|g| g.node.iter().any(|n| QUANTIZED_OPS.contains(&n.op_type.as_str())))
}

/// Lowers a quantized model to the IR, with `fixed` overriding declared input shapes.
pub fn import(proto: &pb::ModelProto, fixed: &[InputShape]) -> Result<Graph, CompileError> {
    let invalid = |message: String| CompileError::InvalidModel { path: Default::default(), message };
    let g = proto.graph.as_ref().ok_or_else(|| invalid("the model has no graph".into()))?;
    let opset =
        proto.opset_import.iter().find(|o| o.domain.is_empty() || o.domain == "ai.onnx").map_or(1, |o| o.version);
    let mut walk = Walk::new(g, opset);
    for init in &g.initializer {
        let k = Konst::from_proto(init).map_err(invalid)?;
        walk.values.insert(init.name.clone(), Value::Const(Rc::new(k)));
    }
    let declared = declared_inputs(proto);
    let shapes = resolve_input_shapes(&declared, fixed)?;
    for (i, (d, shape)) in declared.iter().zip(shapes).enumerate() {
        let dtype = dtype_of(d.elem_type)
            .ok_or_else(|| CompileError::UnsupportedType { tensor: d.name.clone(), dtype: elem_name(d.elem_type) })?;
        let t = walk.graph.add_tensor(d.name.clone(), shape, dtype, TensorKind::Input(i));
        walk.graph.inputs.push(t);
        walk.values.insert(d.name.clone(), if dtype == DType::F32 { Value::Float(t) } else { Value::Int(t) });
    }
    for node in &g.node {
        walk.node(node);
    }
    for o in &g.output {
        match walk.graph_output(&o.name) {
            Ok(Some(t)) => walk.graph.outputs.push(t),
            Ok(None) => {}
            Err(reason) => walk.failed.push(UnsupportedOp { node: o.name.clone(), op: "graph output".into(), reason }),
        }
    }
    if !walk.failed.is_empty() {
        return Err(CompileError::Unsupported(walk.failed));
    }
    Ok(walk.graph)
}

/// A quantized constant: an integer initializer behind a DequantizeLinear (weights, biases).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct QConst {
    /// The integers.
    pub values: Konst,
    /// One scale, or one per index of `axis`.
    pub scales: Vec<f32>,
    /// One zero point, or one per index of `axis`.
    pub zero_points: Vec<i64>,
    /// The quantized axis (when there are several scales).
    pub axis: usize,
}

impl QConst {
    /// The real values.
    pub fn dequantized(&self) -> Result<Vec<f32>, String> {
        let ints = self.values.ints()?;
        let inner: usize = self.values.shape.get(self.axis + 1..).map_or(1, |s| s.iter().product());
        let n = self.scales.len();
        Ok(ints
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let c = (i / inner.max(1)) % n;
                (v - self.zero_points[c % self.zero_points.len()]) as f32 * self.scales[c]
            })
            .collect())
    }
}

/// What an ONNX value is while the graph is walked.
#[derive(Clone, Debug)]
enum Value {
    /// A constant (initializer, Constant node, or a QuantizeLinear of one).
    Const(Rc<Konst>),
    /// DequantizeLinear of a constant.
    Weights(Rc<QConst>),
    /// An integer tensor of the IR.
    Int(TensorId),
    /// A float tensor of the IR.
    Float(TensorId),
    /// DequantizeLinear of an integer tensor: not computed unless a float consumer needs it.
    Dequantized(TensorId, Quant),
    /// The float result of an operator that was lowered as an integer operator writing this
    /// tensor, for the QuantizeLinear that reads it (directly or through fused Relu / Clip).
    Quantized(TensorId),
    /// An output of a node that could not be lowered (reported once, at that node).
    Failed,
}

/// One operand of an integer operator call.
#[derive(Clone, Debug)]
pub(super) enum Operand {
    /// A quantized activation (an integer IR tensor) and its quantization.
    Act(TensorId, QParams),
    /// Quantized constant data.
    Weights(Rc<QConst>),
    /// A plain constant (shapes, axes, float parameters; QOperator biases as `int32`).
    Const(Rc<Konst>),
    /// An optional input the node leaves out.
    Absent,
}

/// The quantization of one output of an integer operator call, and the real range of the
/// activations fused into it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Out {
    /// The output's quantization.
    pub q: QParams,
    /// `[lo, hi]` of fused Relu / Clip nodes (unbounded without).
    pub clamp: (f32, f32),
}

/// No fused activation.
const UNBOUNDED: (f32, f32) = (f32::NEG_INFINITY, f32::INFINITY);

/// An integer operator call: the ONNX operator computed (`op`, the float operator's name for
/// QOperator nodes too), the node it comes from, its operands and its outputs' quantization.
pub(super) struct Call<'n> {
    /// The float ONNX operator this computes (`Conv` for a QLinearConv).
    pub op: &'static str,
    /// The node (for its name, attributes and output names).
    pub node: &'n pb::NodeProto,
    /// The operands, in the float operator's input order.
    pub operands: Vec<Operand>,
    /// One per node output.
    pub outs: Vec<Out>,
}

impl Call<'_> {
    /// The node's attributes.
    pub fn attrs(&self) -> Attrs<'_> {
        Attrs(&self.node.attribute)
    }

    /// Operand `i` as a quantized activation.
    pub fn act(&self, i: usize) -> Result<(TensorId, QParams), String> {
        match self.operands.get(i) {
            Some(Operand::Act(t, q)) => Ok((*t, *q)),
            _ => Err(format!("input {i} is not a quantized activation")),
        }
    }

    /// Operand `i` as a plain constant, if it is one.
    pub fn konst(&self, i: usize) -> Option<&Konst> {
        match self.operands.get(i) {
            Some(Operand::Const(k)) => Some(k.as_ref()),
            _ => None,
        }
    }

    /// Operand `i` as `count` real constants (a float constant, or dequantized weights).
    pub fn reals(&self, i: usize, count: usize) -> Result<Vec<f64>, String> {
        let v = match self.operands.get(i) {
            Some(Operand::Const(k)) => k.floats(),
            Some(Operand::Weights(q)) => q.dequantized()?,
            _ => return Err(format!("input {i} must be a constant")),
        };
        match v.len() {
            n if n == count => Ok(v.iter().map(|&x| x as f64).collect()),
            n => Err(format!("{n} values of input {i} where {count} are needed")),
        }
    }

    /// The single output's quantization and clamp.
    pub fn out(&self) -> Out {
        self.outs[0]
    }
}

/// State of the walk over a quantized graph.
pub(super) struct Walk<'p> {
    /// The IR built so far.
    pub graph: Graph,
    values: HashMap<String, Value>,
    /// For every value name, the nodes reading it.
    consumers: HashMap<&'p str, Vec<&'p pb::NodeProto>>,
    graph_outputs: HashSet<&'p str>,
    /// Float values from which a QuantizeLinear is reached through float operators.
    feeds_quantize: HashSet<&'p str>,
    /// The float tensor made of each dequantized integer tensor, once needed.
    dequantized: HashMap<TensorId, TensorId>,
    failed: Vec<UnsupportedOp>,
    /// The model's opset of the default domain.
    pub opset: i64,
}

impl<'p> Walk<'p> {
    fn new(g: &'p pb::GraphProto, opset: i64) -> Walk<'p> {
        let mut consumers: HashMap<&str, Vec<&pb::NodeProto>> = HashMap::new();
        for n in &g.node {
            for i in n.input.iter().filter(|i| !i.is_empty()) {
                consumers.entry(i.as_str()).or_default().push(n);
            }
        }
        // Walk backwards from every QuantizeLinear through float operators (not through a
        // DequantizeLinear, whose input is an integer tensor).
        let mut feeds_quantize = HashSet::new();
        for n in g.node.iter().rev() {
            let marked = n.op_type == "QuantizeLinear" || n.output.iter().any(|o| feeds_quantize.contains(o.as_str()));
            if !marked || n.op_type == "DequantizeLinear" {
                continue;
            }
            // A QuantizeLinear's float input is its first; every input of a float operator is.
            let float_inputs =
                if n.op_type == "QuantizeLinear" { &n.input[..n.input.len().min(1)] } else { &n.input[..] };
            feeds_quantize.extend(float_inputs.iter().map(String::as_str));
        }
        Walk {
            graph: Graph::default(),
            values: HashMap::new(),
            consumers,
            graph_outputs: g.output.iter().map(|o| o.name.as_str()).collect(),
            feeds_quantize,
            dequantized: HashMap::new(),
            failed: Vec::new(),
            opset,
        }
    }

    /// Lowers one node; a failure is recorded (and its outputs marked failed) so that every
    /// unsupported node is listed at once.
    fn node(&mut self, node: &'p pb::NodeProto) {
        if node.output.iter().all(|o| self.values.contains_key(o)) {
            return; // a Relu / Clip fused into the operator before it
        }
        let inputs: Vec<Option<Value>> = node.input.iter().map(|i| self.values.get(i).cloned()).collect();
        if inputs.iter().any(|v| matches!(v, Some(Value::Failed))) {
            return self.fail_outputs(node);
        }
        if let Some(missing) = node.input.iter().zip(&inputs).find(|(name, v)| !name.is_empty() && v.is_none()) {
            let reason = format!("reads `{}` before anything computes it (the graph is not sorted)", missing.0);
            return self.fail(node, reason);
        }
        let result = match (node.domain.as_str(), node.op_type.as_str()) {
            ("", "Constant") => self.constant(node),
            ("", "QuantizeLinear") => self.quantize_linear(node),
            ("", "DequantizeLinear") => self.dequantize_linear(node),
            _ if qoperator::handles(node) => qoperator::lower(self, node),
            _ => self.standard(node, &inputs),
        };
        if let Err(reason) = result {
            self.fail(node, reason);
        }
    }

    fn fail(&mut self, node: &pb::NodeProto, reason: String) {
        self.failed.push(UnsupportedOp { node: node_name(node), op: node.op_type.clone(), reason });
        self.fail_outputs(node);
    }

    fn fail_outputs(&mut self, node: &pb::NodeProto) {
        for o in &node.output {
            self.values.insert(o.clone(), Value::Failed);
        }
    }

    /// The value of input `i` of `node` (`None` for an absent optional input).
    fn input(&self, node: &pb::NodeProto, i: usize) -> Option<&Value> {
        node.input.get(i).filter(|n| !n.is_empty()).and_then(|n| self.values.get(n))
    }

    /// Input `i` of `node` as a constant.
    pub(super) fn konst(&self, node: &pb::NodeProto, i: usize) -> Result<Rc<Konst>, String> {
        match self.input(node, i) {
            Some(Value::Const(k)) => Ok(k.clone()),
            _ => Err(format!("input {i} (`{}`) must be a constant", node.input.get(i).map_or("", |s| s))),
        }
    }

    /// The value of a `Constant` node.
    fn constant(&mut self, node: &pb::NodeProto) -> Result<(), String> {
        let a = Attrs(&node.attribute);
        let k = if let Some(t) = a.tensor("value") {
            Konst::from_proto(t)?
        } else if let Some(v) = a.ints("value_ints") {
            Konst { shape: vec![v.len()], elem: elem::INT64, values: onnx::Values::Int(v) }
        } else if let Some(v) = a.0.iter().find(|a| a.name == "value_int").map(|a| a.i) {
            Konst { shape: vec![], elem: elem::INT64, values: onnx::Values::Int(vec![v]) }
        } else if let Some(v) = a.0.iter().find(|a| a.name == "value_float").map(|a| a.f) {
            Konst { shape: vec![], elem: elem::FLOAT, values: onnx::Values::Float(vec![v]) }
        } else {
            return Err("a Constant without a tensor, int or float value".into());
        };
        self.set(node, 0, Value::Const(Rc::new(k)));
        Ok(())
    }

    fn set(&mut self, node: &pb::NodeProto, output: usize, v: Value) {
        if let Some(name) = node.output.get(output) {
            self.values.insert(name.clone(), v);
        }
    }

    /// The scale, zero point and axis inputs of a QuantizeLinear / DequantizeLinear, as the
    /// quantization of the integer side, with its element type.
    fn linear_params(&self, node: &pb::NodeProto) -> Result<(Quant, i32), String> {
        let a = Attrs(&node.attribute);
        if a.int("block_size", 0) != 0 {
            return Err("blocked quantization (block_size) is not supported".into());
        }
        let scales = onnx::scales(&*self.konst(node, 1)?)?;
        let (zero_points, elem) = match self.input(node, 2) {
            None => (vec![0; scales.len()], a.int("output_dtype", elem::UINT8 as i64) as i32),
            Some(_) => {
                let z = self.konst(node, 2)?;
                (z.ints()?.iter().map(|&v| v as i32).collect(), z.elem)
            }
        };
        if zero_points.len() != scales.len() {
            return Err(format!("{} scales and {} zero points", scales.len(), zero_points.len()));
        }
        let quant = match scales.len() {
            1 => Quant::PerTensor { scale: scales[0], zero_point: zero_points[0] },
            _ => {
                let x_rank = self.value_rank(node, 0)?;
                let axis = a.int("axis", 1);
                let axis = if axis < 0 { axis + x_rank as i64 } else { axis };
                let axis = usize::try_from(axis).map_err(|_| format!("axis {axis} out of range"))?;
                Quant::PerAxis { axis, scales, zero_points }
            }
        };
        Ok((quant, elem))
    }

    /// The rank of the value input `i` of `node` reads.
    fn value_rank(&self, node: &pb::NodeProto, i: usize) -> Result<usize, String> {
        match self.input(node, i) {
            Some(Value::Const(k)) => Ok(k.shape.len()),
            Some(Value::Int(t) | Value::Float(t) | Value::Dequantized(t, _) | Value::Quantized(t)) => {
                Ok(self.graph.tensors[*t].shape.len())
            }
            _ => Err(format!("input {i} has no known rank")),
        }
    }

    /// QuantizeLinear: the integer tensor an integer operator already wrote, a requantization of a
    /// dequantized tensor, a quantization of a float tensor, or of a constant at build time.
    fn quantize_linear(&mut self, node: &pb::NodeProto) -> Result<(), String> {
        let (quant, elem) = self.linear_params(node)?;
        let dtype = match dtype_of(elem) {
            Some(d @ (DType::I8 | DType::U8 | DType::I16)) => d,
            _ => return Err(format!("quantization to {} (int8, uint8 and int16 are supported)", elem_name(elem))),
        };
        let name = node.output.first().cloned().unwrap_or_default();
        let input = self.input(node, 0).cloned();
        if dtype == DType::I16 && !matches!(input, Some(Value::Float(_))) {
            return Err("int16 quantization of anything but a float tensor (int16 activations have no integer operators in sramfit)".into());
        }
        let value = match input {
            Some(Value::Quantized(t)) => Value::Int(t),
            Some(Value::Float(x)) => {
                let shape = self.graph.tensors[x].shape.clone();
                let y = self.graph.add_tensor(name, shape.clone(), dtype, TensorKind::Activation);
                self.graph.tensors[y].quant = Some(quant.clone());
                let op = convert(Direction::Quantize { ties_to_even: true }, &quant, &shape)?;
                self.push(node, op, vec![x], y);
                Value::Int(y)
            }
            Some(Value::Dequantized(x, from)) => {
                let (Quant::PerTensor { .. }, Quant::PerTensor { scale, zero_point }) = (&from, &quant) else {
                    return Err("a requantization per axis".into());
                };
                let x_q = eight_bit(&self.graph.tensors[x])?;
                let y_q = QParams { scale: *scale, zero_point: *zero_point, dtype };
                if x_q.same_as(&y_q) {
                    Value::Int(x)
                } else {
                    let y = self.activation(name, self.graph.tensors[x].shape.clone(), y_q);
                    let op = Op::Requantize(Requantize::new(self.graph.tensors[x].len(), x_q, y_q, Convention::Onnx)?);
                    self.push(node, op, vec![x], y);
                    Value::Int(y)
                }
            }
            Some(Value::Const(k)) => Value::Const(Rc::new(quantize_const(&k, &quant, elem)?)),
            Some(Value::Int(_)) => return Err("QuantizeLinear of an integer tensor".into()),
            Some(Value::Weights(_)) => return Err("QuantizeLinear of dequantized constants".into()),
            Some(Value::Failed) | None => return Err("QuantizeLinear without an input".into()),
        };
        self.set(node, 0, value);
        Ok(())
    }

    /// DequantizeLinear: quantized constants (weights and biases, kept as integers), or a
    /// dequantized activation (computed in float only where a float consumer needs it).
    fn dequantize_linear(&mut self, node: &pb::NodeProto) -> Result<(), String> {
        let (quant, _) = self.linear_params(node)?;
        let value = match self.input(node, 0).cloned() {
            Some(Value::Const(k)) => {
                let (scales, zero_points, axis) = match quant {
                    Quant::PerTensor { scale, zero_point } => (vec![scale], vec![zero_point as i64], 0),
                    Quant::PerAxis { axis, scales, zero_points } => {
                        (scales, zero_points.iter().map(|&z| z as i64).collect(), axis)
                    }
                };
                k.ints()?;
                Value::Weights(Rc::new(QConst { values: (*k).clone(), scales, zero_points, axis }))
            }
            Some(Value::Int(t)) => {
                let tensor = &mut self.graph.tensors[t];
                if !matches!(tensor.dtype, DType::I8 | DType::U8 | DType::I16) {
                    return Err(format!(
                        "DequantizeLinear of {} (int8, uint8 and int16 are supported)",
                        tensor.dtype.rust_name()
                    ));
                }
                // An integer graph input learns its quantization from the DequantizeLinear reading it.
                tensor.quant.get_or_insert_with(|| quant.clone());
                Value::Dequantized(t, quant)
            }
            _ => return Err("DequantizeLinear of a float tensor".into()),
        };
        self.set(node, 0, value);
        Ok(())
    }

    /// A standard ONNX operator: an integer operator of a QDQ region, one on integer tensors, or
    /// a float operator outside the quantized part of the graph.
    fn standard(&mut self, node: &'p pb::NodeProto, inputs: &[Option<Value>]) -> Result<(), String> {
        let reads = |f: fn(&Value) -> bool| inputs.iter().flatten().any(f);
        if reads(|v| matches!(v, Value::Dequantized(..) | Value::Weights(_))) {
            if node.output.iter().any(|o| self.feeds_quantize.contains(o.as_str())) {
                return self.region(node, inputs);
            }
            return self.float_op(node, inputs);
        }
        if reads(|v| matches!(v, Value::Int(_))) {
            return self.integer_op(node, inputs);
        }
        if reads(|v| matches!(v, Value::Float(_))) {
            return self.float_op(node, inputs);
        }
        Err("an operator on constants only (compute it before quantizing the model)".into())
    }

    /// A float operator of a QDQ region: lowered as the integer operator that reads the
    /// dequantized inputs' integers and writes what the QuantizeLinear after it would.
    fn region(&mut self, node: &'p pb::NodeProto, inputs: &[Option<Value>]) -> Result<(), String> {
        let op =
            op_name(node).map_err(|why| format!("runs in float between DequantizeLinear and QuantizeLinear: {why}"))?;
        let operands = (inputs.iter())
            .map(|v| match v {
                None => Ok(Operand::Absent),
                Some(Value::Dequantized(t, Quant::PerTensor { scale, zero_point })) => {
                    match self.graph.tensors[*t].dtype {
                        DType::I16 => {
                            Err("reads an int16 tensor (int16 activations have no integer operators in sramfit)".into())
                        }
                        dtype => Ok(Operand::Act(*t, QParams { scale: *scale, zero_point: *zero_point, dtype })),
                    }
                }
                Some(Value::Weights(w)) => Ok(Operand::Weights(w.clone())),
                Some(Value::Const(k)) => Ok(Operand::Const(k.clone())),
                Some(Value::Dequantized(..)) => Err("reads a tensor dequantized per axis".to_string()),
                Some(_) => Err("mixes float or integer tensors with dequantized ones".to_string()),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut chains = Vec::new();
        for o in &node.output {
            chains.push(self.quantized_by(o).map_err(|why| {
                format!("runs in float between DequantizeLinear and QuantizeLinear ({why}); sramfit has no integer form of this pattern")
            })?);
        }
        let outs = chains.iter().map(|c| c.out).collect();
        let tensors = self.integer(Call { op, node, operands, outs }).map_err(|why| {
            format!("between DequantizeLinear and QuantizeLinear, with no integer form in sramfit: {why}")
        })?;
        for (chain, t) in chains.into_iter().zip(tensors) {
            for name in chain.values {
                self.values.insert(name.to_string(), Value::Quantized(t));
            }
        }
        Ok(())
    }

    /// Follows `name` through Relu / Clip nodes to the QuantizeLinear that reads it.
    fn quantized_by(&self, name: &'p str) -> Result<Chain<'p>, String> {
        let mut chain = Chain {
            values: vec![name],
            out: Out { q: QParams { scale: 1.0, zero_point: 0, dtype: DType::I8 }, clamp: UNBOUNDED },
        };
        let mut at = name;
        loop {
            let readers = self.consumers.get(at).map_or(&[][..], Vec::as_slice);
            let &[reader] = readers else {
                return Err(format!("`{at}` is read by {} operators, not by one QuantizeLinear", readers.len()));
            };
            if self.graph_outputs.contains(at) {
                return Err(format!("`{at}` is also a graph output"));
            }
            let (lo, hi) = chain.out.clamp;
            let (l, h) = match reader.op_type.as_str() {
                "QuantizeLinear" => {
                    let (quant, elem) = self.linear_params(reader)?;
                    let Quant::PerTensor { scale, zero_point } = quant else {
                        return Err("its QuantizeLinear is per axis".into());
                    };
                    let dtype = dtype_of(elem).filter(|d| matches!(d, DType::I8 | DType::U8));
                    let dtype = dtype.ok_or_else(|| format!("quantization to {}", elem_name(elem)))?;
                    chain.out.q = QParams { scale, zero_point, dtype };
                    return Ok(chain);
                }
                "Relu" => (0.0, f32::INFINITY),
                "Clip" => self.clip_range(reader)?,
                other => return Err(format!("`{at}` goes on into {other} `{}`", node_name(reader))),
            };
            chain.out.clamp = (lo.max(l), hi.min(h));
            at = reader.output.first().map(String::as_str).unwrap_or_default();
            chain.values.push(at);
        }
    }

    /// The `[min, max]` of a Clip (attributes before opset 11, constant inputs after).
    pub(super) fn clip_range(&self, node: &pb::NodeProto) -> Result<(f32, f32), String> {
        let a = Attrs(&node.attribute);
        let bound = |i: usize, attr: &str, default: f32| -> Result<f32, String> {
            match self.input(node, i) {
                None => Ok(a.float(attr, default)),
                Some(Value::Const(k)) => k.scalar(),
                Some(Value::Weights(w)) => w.dequantized()?.first().copied().ok_or_else(|| "an empty bound".into()),
                Some(_) => Err("a Clip bound computed at run time".into()),
            }
        };
        Ok((bound(1, "min", f32::NEG_INFINITY)?, bound(2, "max", f32::INFINITY)?))
    }

    /// A standard operator on integer tensors (QOperator graphs: MaxPool, Reshape, Transpose,
    /// Pad, Concat, ...): its output keeps its input's quantization.
    fn integer_op(&mut self, node: &'p pb::NodeProto, inputs: &[Option<Value>]) -> Result<(), String> {
        let op = op_name(node)?;
        let raw_input = |v: &Value| matches!(v, Value::Int(t) if self.graph.tensors[*t].quant.is_none());
        if matches!(op, "Add" | "Sub" | "Mul" | "Div" | "Max" | "Min") && inputs.iter().flatten().any(raw_input) {
            return elementwise::raw_binary(self, node, op, inputs);
        }
        if let (Some(Some(Value::Int(x))), "Pad") = (inputs.first(), op) {
            let t = &self.graph.tensors[*x];
            let mode = Attrs(&node.attribute).string("mode").unwrap_or_else(|| "constant".into());
            if t.quant.is_none() && (mode != "constant" || !matches!(t.dtype, DType::I8 | DType::U8)) {
                return layout::raw_pad(self, node, *x);
            }
        }
        let mut q = None;
        let operands = (inputs.iter())
            .map(|v| match v {
                None => Ok(Operand::Absent),
                Some(Value::Int(t)) => {
                    let p = eight_bit(&self.graph.tensors[*t])?;
                    q.get_or_insert(p);
                    Ok(Operand::Act(*t, p))
                }
                Some(Value::Const(k)) => Ok(Operand::Const(k.clone())),
                Some(_) => Err("mixes integer tensors with float or dequantized ones".to_string()),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let q = q.expect("called with an integer input");
        // Raw integers (an input port nothing dequantizes) stay unquantized through the operator.
        let raw = operands.iter().any(|o| matches!(o, Operand::Act(t, _) if self.graph.tensors[*t].quant.is_none()));
        let outs = node.output.iter().map(|_| Out { q, clamp: UNBOUNDED }).collect();
        let tensors = self.integer(Call { op, node, operands, outs })?;
        for (i, t) in tensors.into_iter().enumerate() {
            if raw {
                self.graph.tensors[t].quant = None;
            }
            self.set(node, i, Value::Int(t));
        }
        Ok(())
    }

    /// A float operator outside the quantized part of the graph (before the first QuantizeLinear or
    /// after the last DequantizeLinear): elementwise functions, on dequantized values where needed.
    fn float_op(&mut self, node: &pb::NodeProto, inputs: &[Option<Value>]) -> Result<(), String> {
        let unary = elementwise::float_unary(self, node).ok_or_else(|| {
            format!(
                "{} in float outside the quantized part of the graph: sramfit runs only elementwise functions in float in a quantized model",
                node.op_type
            )
        })?;
        let x = match &inputs[0] {
            Some(v) => self.float_tensor(v)?,
            None => return Err("no input".into()),
        };
        let shape = self.graph.tensors[x].shape.clone();
        let name = node.output.first().cloned().unwrap_or_else(|| node_name(node));
        let y = self.graph.add_tensor(name, shape, DType::F32, TensorKind::Activation);
        self.push(node, Op::Unary(unary), vec![x], y);
        self.set(node, 0, Value::Float(y));
        Ok(())
    }

    /// The float tensor of a value (dequantizing an integer tensor once, at its first float reader).
    fn float_tensor(&mut self, v: &Value) -> Result<TensorId, String> {
        match v {
            Value::Float(t) => Ok(*t),
            Value::Dequantized(t, quant) => {
                if let Some(&f) = self.dequantized.get(t) {
                    return Ok(f);
                }
                let x = &self.graph.tensors[*t];
                let (name, shape) = (format!("{}.dequantized", x.name), x.shape.clone());
                let f = self.graph.add_tensor(name.clone(), shape.clone(), DType::F32, TensorKind::Activation);
                let op = convert(Direction::Dequantize, quant, &shape)?;
                self.graph.nodes.push(Node {
                    name,
                    source_op: "DequantizeLinear".into(),
                    op,
                    inputs: vec![*t],
                    output: f,
                });
                self.dequantized.insert(*t, f);
                Ok(f)
            }
            Value::Const(k) => Ok(self.graph.add_const("constant", k.shape.clone(), Data::F32(k.floats()))),
            Value::Weights(w) => {
                Ok(self.graph.add_const("constant", w.values.shape.clone(), Data::F32(w.dequantized()?)))
            }
            _ => Err("an integer tensor where a float one is expected".into()),
        }
    }

    /// The IR tensor of a graph output (dequantized into a float output where the graph says so).
    fn graph_output(&mut self, name: &str) -> Result<Option<TensorId>, String> {
        let v = self.values.get(name).cloned().ok_or_else(|| format!("no node computes `{name}`"))?;
        Ok(match v {
            Value::Failed => None,
            Value::Int(t) => Some(t),
            Value::Const(k) => Some(self.graph.add_const(name, k.shape.clone(), k.data()?)),
            Value::Quantized(_) => return Err("an integer operator's float result".into()),
            v => {
                let t = self.float_tensor(&v)?;
                self.graph.tensors[t].name = name.to_string();
                Some(t)
            }
        })
    }

    /// Lowers an integer operator call to IR nodes; returns the tensor of each of its outputs.
    fn integer(&mut self, call: Call<'_>) -> Result<Vec<TensorId>, String> {
        match call.op {
            "Conv" if call.node.op_type == "ConvInteger" => conv::conv_integer(self, &call),
            "MatMul" if call.node.op_type == "MatMulInteger" => matmul::matmul_integer(self, &call),
            "Conv" => conv::conv(self, &call),
            "BatchNormalization" => elementwise::batch_norm(self, &call),
            "Gemm" => matmul::gemm(self, &call),
            "MatMul" => matmul::matmul(self, &call),
            "Add" | "Sub" | "Mul" => elementwise::binary(self, &call),
            "MaxPool" | "AveragePool" | "GlobalAveragePool" | "GlobalMaxPool" => reduce::pool(self, &call),
            "ReduceMean" => reduce::reduce_mean(self, &call),
            "Softmax" => reduce::softmax(self, &call),
            "LayerNormalization" => reduce::layer_norm(self, &call),
            "Reshape" | "Flatten" | "Squeeze" | "Unsqueeze" | "Identity" | "Dropout" => layout::view(self, &call),
            "Transpose" => layout::transpose(self, &call),
            "Concat" => layout::concat(self, &call),
            "Split" => layout::split(self, &call),
            "Slice" => layout::slice(self, &call),
            "Pad" => layout::pad(self, &call),
            _ => elementwise::table(self, &call),
        }
    }

    /// A new 8-bit activation tensor quantized by `q`.
    pub(super) fn activation(&mut self, name: impl Into<String>, shape: Vec<usize>, q: QParams) -> TensorId {
        let t = self.graph.add_tensor(name, shape, q.dtype, TensorKind::Activation);
        self.graph.tensors[t].quant = Some(q.quant());
        t
    }

    /// The tensor of output `i` of `call` (its ONNX name, its quantization).
    pub(super) fn output(&mut self, call: &Call<'_>, i: usize, shape: Vec<usize>) -> TensorId {
        let name = call.node.output.get(i).cloned().unwrap_or_else(|| node_name(call.node));
        self.activation(name, shape, call.outs[i].q)
    }

    /// A constant named after `node`.
    pub(super) fn constant_tensor(
        &mut self,
        node: &pb::NodeProto,
        what: &str,
        shape: Vec<usize>,
        data: Data,
    ) -> TensorId {
        self.graph.add_const(format!("{}.{what}", node_name(node)), shape, data)
    }

    /// Appends a step computing `output` from `inputs`.
    pub(super) fn push(&mut self, node: &pb::NodeProto, op: Op, inputs: Vec<TensorId>, output: TensorId) {
        let source_op =
            if node.domain.is_empty() { node.op_type.clone() } else { format!("{}.{}", node.domain, node.op_type) };
        self.graph.nodes.push(Node { name: node_name(node), source_op, op, inputs, output });
    }

    /// Appends the step of `call` that reads `x` and the constants `[weights, folded bias,
    /// multipliers, shifts]` and writes output 0, of `shape`; returns that output.
    pub(super) fn push_with_constants(
        &mut self,
        call: &Call<'_>,
        op: Op,
        x: TensorId,
        consts: Vec<Data>,
        shape: Vec<usize>,
    ) -> TensorId {
        let y = self.output(call, 0, shape);
        self.push_to(call, op, x, consts, y);
        y
    }

    /// [`Walk::push_with_constants`] of an operator whose output 0 is an `int32` accumulator
    /// tensor (ConvInteger, MatMulInteger), constants `[weights, folded bias]`.
    pub(super) fn push_accumulator(
        &mut self,
        call: &Call<'_>,
        op: Op,
        x: TensorId,
        consts: Vec<Data>,
        shape: Vec<usize>,
    ) -> TensorId {
        let name = call.node.output.first().cloned().unwrap_or_else(|| node_name(call.node));
        let y = self.graph.add_tensor(name, shape, DType::I32, TensorKind::Activation);
        self.push_to(call, op, x, consts, y);
        y
    }

    /// Appends the step of `call` reading `x` and `consts` (named in the order of
    /// [`Walk::push_with_constants`]) and writing `y`.
    fn push_to(&mut self, call: &Call<'_>, op: Op, x: TensorId, consts: Vec<Data>, y: TensorId) {
        let mut inputs = vec![x];
        inputs.extend(super::operator_constants(&mut self.graph, &node_name(call.node), consts));
        self.push(call.node, op, inputs, y);
    }

    /// The shape of an IR tensor.
    pub(super) fn shape(&self, t: TensorId) -> Vec<usize> {
        self.graph.tensors[t].shape.clone()
    }
}

/// What a QDQ region's output flows through to its QuantizeLinear.
struct Chain<'p> {
    /// The output and the values of the fused Relu / Clip nodes after it.
    values: Vec<&'p str>,
    /// The QuantizeLinear's parameters and the fused clamp.
    out: Out,
}

/// The node's name for messages and IR nodes (its first output's when it has none).
pub(super) fn node_name(node: &pb::NodeProto) -> String {
    if node.name.is_empty() {
        node.output.first().cloned().unwrap_or_default()
    } else {
        node.name.clone()
    }
}

/// The operator's name as a `&'static str` the families match on.
/// The quantization of an 8-bit tensor an integer operator reads: ONNX's int16 tensors (from a
/// QuantizeLinear of a float tensor, or an int16 graph input) have no integer operators in
/// sramfit (TFLite's 16x8 arithmetic is not onnxruntime's).
pub(super) fn eight_bit(t: &crate::tensor::Tensor) -> Result<QParams, String> {
    match t.dtype {
        DType::I16 => Err(format!(
            "reads the int16 tensor `{}` (int16 activations have no integer operators in sramfit's ONNX import)",
            t.name
        )),
        _ => QParams::of(t),
    }
}

fn op_name(node: &pb::NodeProto) -> Result<&'static str, String> {
    const KNOWN: &[&str] = &[
        "Conv",
        "BatchNormalization",
        "Gemm",
        "MatMul",
        "Add",
        "Sub",
        "Mul",
        "Div",
        "Max",
        "Min",
        "MaxPool",
        "AveragePool",
        "GlobalAveragePool",
        "GlobalMaxPool",
        "ReduceMean",
        "Softmax",
        "LayerNormalization",
        "Reshape",
        "Flatten",
        "Squeeze",
        "Unsqueeze",
        "Identity",
        "Dropout",
        "Transpose",
        "Concat",
        "Split",
        "Slice",
        "Pad",
        "Relu",
        "Clip",
        "Sigmoid",
        "Tanh",
        "HardSwish",
        "HardSigmoid",
        "LeakyRelu",
        "Elu",
        "Selu",
        "Gelu",
        "Exp",
        "Erf",
        "Softplus",
        "Softsign",
        "Neg",
        "Abs",
    ];
    let known = KNOWN.iter().find(|&&k| k == node.op_type && node.domain.is_empty());
    known.copied().ok_or_else(|| format!("{} has no integer form in sramfit", node.op_type))
}

/// A [`QConvert`] step for `quant` over a tensor of `shape`.
fn convert(direction: Direction, quant: &Quant, shape: &[usize]) -> Result<Op, String> {
    let (params, inner) = match quant {
        Quant::PerTensor { scale, zero_point } => (vec![(*scale, *zero_point)], shape.iter().product()),
        Quant::PerAxis { axis, scales, zero_points } => {
            if *axis >= shape.len() || shape[*axis] != scales.len() {
                return Err(format!("{} scales along axis {axis} of {shape:?}", scales.len()));
            }
            (scales.iter().copied().zip(zero_points.iter().copied()).collect(), shape[axis + 1..].iter().product())
        }
    };
    Ok(Op::QConvert(QConvert { direction, params, inner }))
}

/// A float constant quantized at build time.
fn quantize_const(k: &Konst, quant: &Quant, elem: i32) -> Result<Konst, String> {
    let dtype = dtype_of(elem).ok_or_else(|| format!("quantization to {}", elem_name(elem)))?;
    let (scales, zero_points, inner) = match quant {
        Quant::PerTensor { scale, zero_point } => (vec![*scale], vec![*zero_point], k.len().max(1)),
        Quant::PerAxis { axis, scales, zero_points } => {
            (scales.clone(), zero_points.clone(), k.shape.get(axis + 1..).map_or(1, |s| s.iter().product()))
        }
    };
    let values = (k.floats().iter().enumerate())
        .map(|(i, &v)| {
            let c = (i / inner.max(1)) % scales.len();
            QParams { scale: scales[c], zero_point: zero_points[c], dtype }.quantize(v) as i64
        })
        .collect();
    Ok(Konst { shape: k.shape.clone(), elem, values: onnx::Values::Int(values) })
}
