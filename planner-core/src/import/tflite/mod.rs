//! TensorFlow Lite flatbuffers (`.tflite`), read with tract-tflite's flatbuffer bindings
//! (`tract_tflite::tflite`, generated from TFLite's schema; the buffer is verified before anything
//! is read) straight into the IR, in TFLite's own layout and arithmetic.
//!
//! tract-tflite's graph is not used: its importer turns quantized tensors into tract's own
//! quantized types and its convolutions into NHWC tract ops, while the integers, scales, zero
//! points and options that TFLite Micro computes with are all in the flatbuffer. So every
//! operator is lowered from the file itself to the integer IR operators of [`crate::ops`] with
//! [`Convention::Tflite`]: activations stay NHWC (the kernels address them by strides, so no
//! transpose is ever inserted), weights stay OHWI / 1HWO as stored, and every multiplier is
//! TFLite's `QuantizeMultiplier` of the scales as TFLite Micro's `Prepare` computes them, so the
//! outputs are TFLite Micro's bit for bit.
//!
//! Full-integer int8 and uint8 models are supported (per-channel weights; int8, uint8 or float
//! ports through QUANTIZE / DEQUANTIZE), TFLite's 16x8 mode (int16 activations, int8 weights,
//! int64 biases: the same lowerings on `DType::I16`, the `_s16` kernels where TFLite's int16
//! arithmetic differs; an int16 operator without one is refused naming it), and float32 models
//! ([`float`]: the float kernels, with NCHW tensors inside), hybrid ones included (a CONV_2D with
//! int8 weights on float activations: TensorFlow Lite's `EvalHybrid`).
//! Every operator that cannot be lowered is listed at once, with its TFLite name.

mod conv;
mod elementwise;
mod float;
mod layout;
mod pool;

use std::collections::HashMap;

use tract_tflite::tflite;

use super::limits::Limits;
use super::InputShape;
use crate::error::{CompileError, UnsupportedOp};
use crate::ir::{Graph, Node, Op, TensorId, TensorKind};
use crate::ops::qparams::QParams;
use crate::tensor::{DType, Data, Quant};

/// The flatbuffer file identifier of TFLite models (bytes 4..8).
const IDENTIFIER: &[u8; 4] = b"TFL3";

/// Whether `bytes` is a TFLite flatbuffer (its file identifier; ONNX protobufs never carry it).
pub fn is_tflite(bytes: &[u8]) -> bool {
    bytes.get(4..8) == Some(&IDENTIFIER[..])
}

/// Lowers a TFLite model to the IR, with `fixed` overriding declared input shapes, within `limits`.
pub fn import(bytes: &[u8], fixed: &[InputShape], limits: &Limits) -> Result<Graph, CompileError> {
    let invalid = |message: String| CompileError::InvalidModel { path: Default::default(), message };
    let model = tflite::root_as_model(bytes).map_err(|e| invalid(format!("not a valid TFLite flatbuffer: {e}")))?;
    let subgraphs = model.subgraphs().ok_or_else(|| invalid("the model has no subgraph".into()))?;
    if subgraphs.is_empty() {
        return Err(invalid("the model has no subgraph".into()));
    }
    let sub = subgraphs.get(0);
    let operators = sub.operators().map(|o| o.len()).unwrap_or(0);
    if operators as u64 > limits.nodes {
        return Err(CompileError::Limit {
            key: "nodes",
            node: String::new(),
            op: String::new(),
            what: format!("{operators} operators"),
            amount: operators as u64,
            limit: limits.nodes,
            bytes: false,
        });
    }
    let mut walk = Walk::new(model, sub, limits);
    walk.float = walk.computes_in_float();
    walk.inputs(fixed)?;
    for (i, op) in sub.operators().into_iter().flatten().enumerate() {
        walk.operator(i, op);
    }
    for &t in sub.outputs().map(|o| o.iter().collect::<Vec<_>>()).unwrap_or_default().iter() {
        match walk.values.get(&t).copied() {
            Some(Some(id)) if walk.float => {
                let declared = walk.shape(t).map_err(invalid)?;
                let y = walk.float_output(id, &declared);
                walk.graph.outputs.push(y);
            }
            Some(Some(id)) => walk.graph.outputs.push(id),
            Some(None) => {} // its producer failed, and was reported
            None => walk.failed.push(UnsupportedOp {
                node: walk.tensor_name(t),
                op: "graph output".into(),
                reason: "no operator computes it (an output that is a constant or an input)".into(),
            }),
        }
    }
    if !walk.failed.is_empty() {
        return Err(CompileError::Unsupported(walk.failed));
    }
    if walk.graph.outputs.is_empty() {
        return Err(invalid("the model declares no outputs".into()));
    }
    Ok(walk.graph)
}

/// One operator being lowered: its index, TFLite name, flatbuffer table and tensor indices.
pub(super) struct OpCall<'a> {
    /// Its name for messages and IR nodes: its first output tensor's name.
    pub name: String,
    /// The TFLite builtin operator name (`CONV_2D`).
    pub op: &'static str,
    /// The flatbuffer table (options).
    pub table: tflite::Operator<'a>,
    /// Input tensor indices (`-1`: an optional input left out).
    pub inputs: Vec<i32>,
    /// Output tensor indices.
    pub outputs: Vec<i32>,
}

impl OpCall<'_> {
    /// Tensor index of input `i`, if present.
    pub fn input(&self, i: usize) -> Option<i32> {
        self.inputs.get(i).copied().filter(|&t| t >= 0)
    }
}

/// An operator family's lowering.
pub(super) type Lowering = fn(&mut Walk<'_>, &OpCall<'_>) -> Result<(), String>;

/// The lowerings of integer models, by TFLite operator name.
const LOWERINGS: &[(&[&str], Lowering)] = &[
    (&["CONV_2D", "DEPTHWISE_CONV_2D"], conv::conv),
    (&["FULLY_CONNECTED"], conv::fully_connected),
    (&["BATCH_MATMUL"], conv::batch_matmul),
    (&["AVERAGE_POOL_2D", "MAX_POOL_2D"], pool::pool),
    (&["MEAN"], pool::mean),
    (&["SOFTMAX"], pool::softmax),
    (&["ADD", "SUB", "MUL"], elementwise::binary),
    (&["LOGISTIC", "TANH", "HARD_SWISH", "LEAKY_RELU", "RELU", "RELU6"], elementwise::table),
    (&["QUANTIZE", "DEQUANTIZE"], elementwise::convert),
    (&["RESHAPE", "SQUEEZE", "EXPAND_DIMS"], layout::view),
    (&["CONCATENATION"], layout::concat),
    (&["PAD", "PADV2"], layout::pad),
    (&["TRANSPOSE"], layout::transpose),
    (&["STRIDED_SLICE"], layout::strided_slice),
];

/// Why operator `c`, which has an int16 operand, cannot be lowered: sramfit's 16x8 mode does not
/// have it.
pub(super) fn not_in_16x8(c: &OpCall<'_>) -> String {
    format!("{} on int16 (TFLite's 16x8 mode) is not supported by sramfit", c.op)
}

/// A fused activation's real range (`ActivationFunctionType`).
pub(super) fn fused(f: tflite::ActivationFunctionType) -> Result<(f32, f32), String> {
    Ok(match f {
        tflite::ActivationFunctionType::NONE => (f32::NEG_INFINITY, f32::INFINITY),
        tflite::ActivationFunctionType::RELU => (0.0, f32::INFINITY),
        tflite::ActivationFunctionType::RELU6 => (0.0, 6.0),
        tflite::ActivationFunctionType::RELU_N1_TO_1 => (-1.0, 1.0),
        other => return Err(format!("fused activation {}", other.variant_name().unwrap_or("unknown"))),
    })
}

/// State of the walk over the subgraph.
pub(super) struct Walk<'a> {
    model: tflite::Model<'a>,
    sub: tflite::SubGraph<'a>,
    /// The IR built so far.
    pub graph: Graph,
    /// The IR tensor of each TFLite tensor index computed so far (`None`: its producer failed).
    values: HashMap<i32, Option<TensorId>>,
    failed: Vec<UnsupportedOp>,
    limits: Limits,
    /// A float32 model: lowered by [`float`] to the float kernels, rank-4 tensors NCHW inside.
    float: bool,
}

impl<'a> Walk<'a> {
    fn new(model: tflite::Model<'a>, sub: tflite::SubGraph<'a>, limits: &Limits) -> Walk<'a> {
        Walk {
            model,
            sub,
            graph: Graph::default(),
            values: HashMap::new(),
            failed: Vec::new(),
            limits: *limits,
            float: false,
        }
    }

    /// Whether the model computes in float: an operator other than DEQUANTIZE writes a float32
    /// tensor (float32 and hybrid files; a full-integer model with float ports only quantizes
    /// and dequantizes them).
    fn computes_in_float(&self) -> bool {
        let float = |t: i32| self.tensor(t).is_ok_and(|x| x.type_() == tflite::TensorType::FLOAT32);
        self.sub.operators().into_iter().flatten().any(|op| {
            let outputs = op.outputs().map(|v| v.iter().collect::<Vec<_>>()).unwrap_or_default();
            self.op_name(op.opcode_index()) != "DEQUANTIZE" && outputs.iter().any(|&t| float(t))
        })
    }

    /// The graph inputs, in their declared order, with `fixed` shapes where given.
    fn inputs(&mut self, fixed: &[InputShape]) -> Result<(), CompileError> {
        let inputs: Vec<i32> = self.sub.inputs().map(|v| v.iter().collect()).unwrap_or_default();
        if inputs.is_empty() {
            return Err(CompileError::NoInputs);
        }
        let names: Vec<String> = inputs.iter().map(|&t| self.tensor_name(t)).collect();
        if let Some(f) = fixed.iter().find(|f| !names.contains(&f.name)) {
            return Err(CompileError::UnknownInput { name: f.name.clone(), known: names });
        }
        for (i, &t) in inputs.iter().enumerate() {
            let name = names[i].clone();
            let declared = self.shape(t).map_err(|message| CompileError::InvalidModel {
                path: Default::default(),
                message: format!("input `{name}`: {message}"),
            })?;
            let shape = match fixed.iter().find(|f| f.name == name) {
                Some(f) if f.dims.len() != declared.len() => {
                    return Err(CompileError::InputRank { name, model_rank: declared.len(), given_rank: f.dims.len() })
                }
                Some(f) => f.dims.clone(),
                None => declared,
            };
            let tensor = self.tensor(t).map_err(|message| CompileError::InvalidModel {
                path: Default::default(),
                message: format!("input `{name}`: {message}"),
            })?;
            let dtype = dtype_of(tensor.type_())
                .map_err(|d| CompileError::UnsupportedType { tensor: name.clone(), dtype: d })?;
            if self.float && dtype == DType::F32 {
                let id = self.float_input(name, shape, i);
                self.values.insert(t, Some(id));
                continue;
            }
            let id = self.graph.add_tensor(name, shape, dtype, TensorKind::Input(i));
            self.graph.tensors[id].quant =
                self.quant(t).map_err(|message| CompileError::InvalidModel { path: Default::default(), message })?;
            self.graph.inputs.push(id);
            self.values.insert(t, Some(id));
        }
        Ok(())
    }

    /// Lowers operator `index`; a failure is recorded (its outputs marked failed) so that every
    /// unsupported operator is listed at once.
    fn operator(&mut self, index: usize, table: tflite::Operator<'a>) {
        let inputs: Vec<i32> = table.inputs().map(|v| v.iter().collect()).unwrap_or_default();
        let outputs: Vec<i32> = table.outputs().map(|v| v.iter().collect()).unwrap_or_default();
        let name = outputs.first().map(|&t| self.tensor_name(t)).unwrap_or_else(|| format!("operator {index}"));
        let op = self.op_name(table.opcode_index());
        let call = OpCall { name, op, table, inputs, outputs };
        if call.inputs.iter().any(|t| matches!(self.values.get(t), Some(None))) {
            // Behind a failed operator: still listed if no lowering exists for it at all.
            if self.lowering(op).is_none() {
                self.failed.push(UnsupportedOp {
                    node: call.name.clone(),
                    op: op.to_string(),
                    reason: self.unsupported(op),
                });
            }
            return self.fail_outputs(&call);
        }
        if let Err(reason) = self.lower(&call) {
            self.failed.push(UnsupportedOp { node: call.name.clone(), op: op.to_string(), reason });
            self.fail_outputs(&call);
        }
    }

    fn fail_outputs(&mut self, call: &OpCall<'_>) {
        for &o in &call.outputs {
            self.values.insert(o, None);
        }
    }

    /// The builtin operator name of an operator code (TFLite's `GetBuiltinCode`: the larger of the
    /// deprecated 8-bit code and the 32-bit one).
    fn op_name(&self, opcode_index: u32) -> &'static str {
        let code = (self.model.operator_codes())
            .filter(|c| (opcode_index as usize) < c.len())
            .map(|c| c.get(opcode_index as usize));
        match code {
            Some(c) => {
                let builtin = (c.deprecated_builtin_code() as i32).max(c.builtin_code().0);
                match builtin {
                    32 => "CUSTOM",
                    b => tflite::BuiltinOperator(b).variant_name().unwrap_or("an unknown operator"),
                }
            }
            None => "an operator with no operator code",
        }
    }

    /// Lowers one operator by family.
    fn lower(&mut self, c: &OpCall<'a>) -> Result<(), String> {
        match self.lowering(c.op) {
            Some(lower) => lower(self, c),
            None => Err(self.unsupported(c.op)),
        }
    }

    /// The lowering of the operator named `op` in this model's kind (integer or float).
    fn lowering(&self, op: &str) -> Option<Lowering> {
        let table = if self.float { float::LOWERINGS } else { LOWERINGS };
        table.iter().find(|(names, _)| names.contains(&op)).map(|&(_, lower)| lower)
    }

    /// Why the operator named `op` cannot be lowered in this model.
    fn unsupported(&self, op: &str) -> String {
        let kind = if self.float { "float32" } else { "integer" };
        format!("{op} is not supported in {kind} TFLite models by sramfit")
    }

    /// The flatbuffer table of tensor `t`.
    pub fn tensor(&self, t: i32) -> Result<tflite::Tensor<'a>, String> {
        let tensors = self.sub.tensors().ok_or("the subgraph has no tensors")?;
        usize::try_from(t)
            .ok()
            .filter(|&i| i < tensors.len())
            .map(|i| tensors.get(i))
            .ok_or_else(|| format!("tensor index {t} out of range ({} tensors)", tensors.len()))
    }

    /// The name of tensor `t` (its index when it has none). The converter names a fused
    /// operator's output after every TensorFlow op it absorbed, `;`-separated, its activation
    /// first (`model/activation/Relu;model/conv2d/BiasAdd;...`): that first name is kept.
    pub fn tensor_name(&self, t: i32) -> String {
        match self.tensor(t).ok().and_then(|x| x.name()).and_then(|n| n.split(';').next()) {
            Some(n) if !n.is_empty() => n.to_string(),
            _ => format!("tensor {t}"),
        }
    }

    /// The shape of tensor `t`, checked against the element limit.
    pub fn shape(&self, t: i32) -> Result<Vec<usize>, String> {
        let x = self.tensor(t)?;
        let dims: Vec<i32> = x.shape().map(|s| s.iter().collect()).unwrap_or_default();
        let shape = (dims.iter())
            .map(|&d| usize::try_from(d).map_err(|_| format!("`{}` has a dimension of {d}", self.tensor_name(t))))
            .collect::<Result<Vec<usize>, _>>()?;
        let elements = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d as u64)).unwrap_or(u64::MAX);
        if elements > self.limits.tensor_elements {
            return Err(format!(
                "`{}` has {elements} elements, over the `tensor_elements` limit of {}",
                self.tensor_name(t),
                self.limits.tensor_elements
            ));
        }
        Ok(shape)
    }

    /// The quantization of tensor `t` (`None` when it has no scale).
    pub fn quant(&self, t: i32) -> Result<Option<Quant>, String> {
        let Some(q) = self.tensor(t)?.quantization() else { return Ok(None) };
        let scales: Vec<f32> = q.scale().map(|s| s.iter().collect()).unwrap_or_default();
        let zero_points: Vec<i64> = q.zero_point().map(|s| s.iter().collect()).unwrap_or_default();
        let zero_points: Vec<i32> = match zero_points.len() {
            0 => vec![0; scales.len()],
            _ => zero_points
                .iter()
                .map(|&z| i32::try_from(z).map_err(|_| format!("zero point {z}")))
                .collect::<Result<_, _>>()?,
        };
        if zero_points.len() != scales.len() {
            return Err(format!(
                "`{}`: {} scales and {} zero points",
                self.tensor_name(t),
                scales.len(),
                zero_points.len()
            ));
        }
        if scales.iter().any(|s| !s.is_finite() || *s <= 0.0) {
            return Err(format!("`{}` has a scale that is not a positive number", self.tensor_name(t)));
        }
        Ok(match scales.len() {
            0 => None,
            1 => Some(Quant::PerTensor { scale: scales[0], zero_point: zero_points[0] }),
            _ => {
                let axis = usize::try_from(q.quantized_dimension()).map_err(|_| "a negative quantized dimension")?;
                Some(Quant::PerAxis { axis, scales, zero_points })
            }
        })
    }

    /// The constant data of tensor `t` (`None` for a tensor computed at run time).
    pub fn data(&self, t: i32) -> Result<Option<&'a [u8]>, String> {
        let x = self.tensor(t)?;
        let buffers = self.model.buffers().ok_or("the model has no buffers")?;
        let b = x.buffer() as usize;
        if b >= buffers.len() {
            return Err(format!("`{}` names buffer {b} of {}", self.tensor_name(t), buffers.len()));
        }
        Ok(buffers.get(b).data().map(|d| d.bytes()).filter(|d| !d.is_empty()))
    }

    /// The constant of tensor `t` as integers (int8, uint8, int16, int32 or int64 elements).
    pub fn ints(&self, t: i32) -> Result<Vec<i64>, String> {
        let bytes = self.data(t)?.ok_or_else(|| format!("`{}` must be a constant", self.tensor_name(t)))?;
        let x = self.tensor(t)?;
        let n: usize = self.shape(t)?.iter().product();
        let width = match x.type_() {
            tflite::TensorType::INT8 | tflite::TensorType::UINT8 => 1,
            tflite::TensorType::INT16 => 2,
            tflite::TensorType::INT32 => 4,
            tflite::TensorType::INT64 => 8,
            other => return Err(format!("`{}` is {}, not integers", self.tensor_name(t), type_name(other))),
        };
        if bytes.len() != n * width {
            return Err(format!("`{}` holds {} bytes for {n} elements", self.tensor_name(t), bytes.len()));
        }
        Ok(match x.type_() {
            tflite::TensorType::INT8 => bytes.iter().map(|&b| b as i8 as i64).collect(),
            tflite::TensorType::UINT8 => bytes.iter().map(|&b| b as i64).collect(),
            tflite::TensorType::INT16 => {
                bytes.chunks_exact(2).map(|c| i16::from_le_bytes([c[0], c[1]]) as i64).collect()
            }
            tflite::TensorType::INT32 => {
                bytes.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64).collect()
            }
            _ => bytes.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes"))).collect(),
        })
    }

    /// The IR tensor of input `i` of `c`, computed at run time.
    pub fn act(&self, c: &OpCall<'_>, i: usize) -> Result<TensorId, String> {
        let t = c.input(i).ok_or_else(|| format!("input {i} is missing"))?;
        match self.values.get(&t) {
            Some(Some(id)) => Ok(*id),
            _ if self.data(t)?.is_some() => Err(format!("input {i} (`{}`) is a constant", self.tensor_name(t))),
            _ => Err(format!("reads `{}` before anything computes it", self.tensor_name(t))),
        }
    }

    /// Input `i` of `c` as an 8-bit tensor with its quantization: a run-time tensor, or a
    /// per-tensor quantized constant stored as one.
    pub fn operand(&mut self, c: &OpCall<'_>, i: usize) -> Result<(TensorId, QParams), String> {
        let t = c.input(i).ok_or_else(|| format!("input {i} is missing"))?;
        if let Some(Some(id)) = self.values.get(&t) {
            return Ok((*id, QParams::of(&self.graph.tensors[*id])?));
        }
        let ints = self.ints(t)?;
        let q = self.qparams(t)?;
        let data = crate::ops::qparams::int_data(q.dtype, ints.iter().map(|&v| v as i32));
        let id = self.graph.add_const(format!("{}.input{i}", c.name), self.shape(t)?, data);
        self.graph.tensors[id].quant = Some(q.quant());
        Ok((id, q))
    }

    /// The per-tensor quantization of an 8-bit or int16 tensor `t`.
    pub fn qparams(&self, t: i32) -> Result<QParams, String> {
        let name = self.tensor_name(t);
        let dtype = match self.tensor(t)?.type_() {
            tflite::TensorType::INT8 => DType::I8,
            tflite::TensorType::UINT8 => DType::U8,
            tflite::TensorType::INT16 => DType::I16,
            tflite::TensorType::FLOAT32 => {
                return Err(format!("`{name}` is float32: sramfit reads full-integer TFLite models only so far (float32 and hybrid files are not supported yet)"))
            }
            other => return Err(format!("`{name}` is {}", type_name(other))),
        };
        match self.quant(t)? {
            Some(Quant::PerTensor { scale, zero_point }) => Ok(QParams { scale, zero_point, dtype }),
            Some(Quant::PerAxis { .. }) => Err(format!("`{name}` is quantized per axis")),
            None => Err(format!("`{name}` has no quantization parameters")),
        }
    }

    /// The quantization of output `i` of `c`.
    pub fn out_q(&self, c: &OpCall<'_>, i: usize) -> Result<QParams, String> {
        self.qparams(*c.outputs.get(i).ok_or_else(|| format!("output {i} is missing"))?)
    }

    /// The shape the model declares for output `i` of `c`.
    pub fn out_shape(&self, c: &OpCall<'_>, i: usize) -> Result<Vec<usize>, String> {
        self.shape(*c.outputs.get(i).ok_or_else(|| format!("output {i} is missing"))?)
    }

    /// The IR tensor for output `i` of `c`: its TFLite name, `shape` and quantization `q`.
    pub fn output(
        &mut self,
        c: &OpCall<'_>,
        i: usize,
        shape: Vec<usize>,
        q: Option<QParams>,
    ) -> Result<TensorId, String> {
        let t = *c.outputs.get(i).ok_or_else(|| format!("output {i} is missing"))?;
        let declared = self.shape(t)?;
        if declared.iter().product::<usize>() != shape.iter().product::<usize>() {
            return Err(format!("output `{}` is declared {declared:?}, computed {shape:?}", self.tensor_name(t)));
        }
        let dtype = q.map_or(DType::F32, |q| q.dtype);
        let id = self.graph.add_tensor(self.tensor_name(t), declared, dtype, TensorKind::Activation);
        self.graph.tensors[id].quant = q.map(|q| q.quant());
        self.values.insert(t, Some(id));
        Ok(id)
    }

    /// Appends the step of `c` computing `output` from `inputs`.
    pub fn push(&mut self, c: &OpCall<'_>, op: Op, inputs: Vec<TensorId>, output: TensorId) {
        self.graph.nodes.push(Node { name: c.name.clone(), source_op: c.op.to_string(), op, inputs, output });
    }

    /// Appends the step of `c` reading `x` and the constants `[weights, folded bias, multipliers,
    /// shifts]` (and any others) into output 0.
    pub fn push_with_constants(&mut self, c: &OpCall<'_>, op: Op, x: TensorId, consts: Vec<Data>, y: TensorId) {
        let mut inputs = vec![x];
        inputs.extend(super::operator_constants(&mut self.graph, &c.name, consts));
        self.push(c, op, inputs, y);
    }
}

/// The IR element type of a TFLite tensor type.
fn dtype_of(t: tflite::TensorType) -> Result<DType, String> {
    Ok(match t {
        tflite::TensorType::FLOAT32 => DType::F32,
        tflite::TensorType::INT8 => DType::I8,
        tflite::TensorType::UINT8 => DType::U8,
        tflite::TensorType::INT16 => DType::I16,
        tflite::TensorType::INT32 => DType::I32,
        other => return Err(type_name(other).to_string()),
    })
}

/// A TFLite tensor type's name, lower case.
fn type_name(t: tflite::TensorType) -> String {
    t.variant_name().unwrap_or("an unknown type").to_lowercase()
}
