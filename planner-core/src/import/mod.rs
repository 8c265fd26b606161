//! Model import: ONNX through tract, which loads and declutters the model at a fixed input shape,
//! each tract node lowered to an [`ir::Node`](crate::ir::Node) whose op is a `runtime-min` kernel
//! call (quantized ONNX from the protobuf itself: `quant/`); TFLite flatbuffers from the file
//! itself (`tflite/`), recognised by their file identifier whatever the file's name.
//!
//! tract's decluttered graph does not keep ONNX ops one to one (pinned by this module's tests):
//! BatchNormalization folds into a preceding Conv, Gemm/MatMul and 1x1 convolutions become `EinSum`,
//! Relu and Clip become `Max`/`Min` with a constant, AveragePool becomes `SumPool`, Flatten and
//! Reshape become axis changes (views here), and cancelling transposes disappear. The lowering
//! handles what tract really produces. Constant subgraphs tract leaves unfolded (large computed
//! weights) are evaluated at build time by `fold.rs` first.

mod declutter;
mod fold;
pub mod limits;
mod mean;
mod proto;
mod quant;
mod tflite;

use std::collections::HashMap;
use std::path::Path;

use tract_onnx::prelude::*;

use crate::error::{CompileError, UnsupportedOp};
use crate::ir::{Graph, Node, Op, TensorId, TensorKind};
use crate::ops::copy::transpose;
use crate::ops::lowering::{self, permutation, Lowered, Src, TractNode};
use crate::ops::select::lower::is_fused_comparison;
use crate::tensor::{DType, Data};
use crate::timings::phase;
use limits::{FoldBudget, Limits};

pub use proto::{declared_inputs, DeclaredInput};

/// A fixed shape for a graph input (the macro's `inputs: { "name": [..] }`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputShape {
    /// The graph input's name.
    pub name: String,
    /// Its dimensions.
    pub dims: Vec<usize>,
}

/// Loads `path` and lowers it to the IR, with `fixed` overriding declared input shapes, within the
/// default [`Limits`].
pub fn import(path: &Path, fixed: &[InputShape]) -> Result<Graph, CompileError> {
    import_within(path, fixed, &Limits::default())
}

/// Loads `path` and lowers it to the IR, with `fixed` overriding declared input shapes, within
/// `limits` (checked before tract allocates anything: see [`limits`]).
pub fn import_within(path: &Path, fixed: &[InputShape], limits: &Limits) -> Result<Graph, CompileError> {
    let invalid = |message: String| CompileError::InvalidModel { path: path.to_owned(), message };
    let bytes = phase("load", || read_model(path))?;
    let imported = match is_tflite(&bytes) {
        true => phase("lower", || import_tflite(&bytes, fixed, limits)),
        false => {
            phase("load", || decode_proto(path, &bytes)).and_then(|proto| import_proto_within(&proto, fixed, limits))
        }
    };
    imported.map_err(|e| match e {
        CompileError::InvalidModel { message, .. } => invalid(message),
        other => other,
    })
}

/// Whether `bytes` is a TFLite flatbuffer rather than an ONNX protobuf (its file identifier).
pub fn is_tflite(bytes: &[u8]) -> bool {
    tflite::is_tflite(bytes)
}

/// Lowers the bytes of a TFLite model to the IR, with `fixed` overriding declared input shapes,
/// within `limits`.
pub fn import_tflite(bytes: &[u8], fixed: &[InputShape], limits: &Limits) -> Result<Graph, CompileError> {
    tflite::import(bytes, fixed, limits)
}

/// The constants an integer operator's constructor returns (`[weights, folded bias, multipliers,
/// shifts]`, or a prefix of them) as tensors named after its node `node`, in that order: what both
/// quantized importers give a weighted integer step besides its activation input.
fn operator_constants(g: &mut Graph, node: &str, consts: Vec<Data>) -> Vec<TensorId> {
    (["weights", "bias", "multipliers", "shifts"].into_iter().zip(consts))
        .map(|(what, data)| g.add_const(format!("{node}.{what}"), vec![data.len()], data))
        .collect()
}

/// Reads and decodes the ONNX file (no analysis yet).
pub fn read_proto(path: &Path) -> Result<tract_onnx::pb::ModelProto, CompileError> {
    decode_proto(path, &read_model(path)?)
}

/// Decodes the bytes of the ONNX file at `path`.
fn decode_proto(path: &Path, bytes: &[u8]) -> Result<tract_onnx::pb::ModelProto, CompileError> {
    tract_onnx::onnx()
        .proto_model_for_read(&mut &bytes[..])
        .map_err(|e| CompileError::InvalidModel { path: path.to_owned(), message: format!("{e:#}") })
}

/// Lowers an already decoded ONNX model (e.g. one a test harness edited) to the IR, within the
/// default [`Limits`].
pub fn import_proto(proto: &tract_onnx::pb::ModelProto, fixed: &[InputShape]) -> Result<Graph, CompileError> {
    import_proto_within(proto, fixed, &Limits::default())
}

/// Lowers an already decoded ONNX model to the IR within `limits`: the protobuf is checked
/// first ([`limits::check_proto`]), then tract analyses it (`declutter`), its shapes are checked
/// ([`limits::check_typed`]), the constant subgraphs are folded within the fold budget (`fold`),
/// and each node is lowered (`lower`).
pub fn import_proto_within(
    proto: &tract_onnx::pb::ModelProto,
    fixed: &[InputShape],
    limits: &Limits,
) -> Result<Graph, CompileError> {
    if quant::is_quantized(proto) {
        let declared = declared_inputs(proto);
        let shapes = proto::resolve_input_shapes(&declared, fixed)?;
        let named: Vec<(String, Vec<usize>)> = declared.iter().map(|d| d.name.clone()).zip(shapes).collect();
        limits::check_proto(proto, &named, limits)?;
        return phase("lower", || quant::import(proto, fixed));
    }
    let invalid = |e: TractError| CompileError::InvalidModel { path: Default::default(), message: format!("{e:#}") };
    let declared = declared_inputs(proto);
    proto::check_float(&declared)?;
    let shapes = proto::resolve_input_shapes(&declared, fixed)?;
    let named: Vec<(String, Vec<usize>)> =
        declared.iter().map(|d| d.name.clone()).zip(shapes.iter().cloned()).collect();
    let mut model = phase("load", || {
        limits::check_proto(proto, &named, limits)?;
        tract_onnx::onnx().model_for_proto_model(proto).map_err(invalid)
    })?;
    for (i, dims) in shapes.iter().enumerate() {
        model.set_input_fact(i, f32::fact(dims).into()).map_err(invalid)?;
    }
    let typed = phase("declutter", || {
        let typed = model.into_typed().map_err(invalid)?;
        limits::check_typed(&typed, limits)?;
        declutter::declutter(typed).map_err(invalid)
    })?;
    let typed = phase("fold", || fold::fold_constants(typed, &mut FoldBudget::new(limits)))?;
    phase("lower", || lower_model(&typed))
}

fn read_model(path: &Path) -> Result<Vec<u8>, CompileError> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => CompileError::NotFound { path: path.to_owned() },
        _ => CompileError::Io { path: path.to_owned(), message: e.to_string() },
    })?;
    if !meta.is_file() {
        return Err(CompileError::NotAFile { path: path.to_owned() });
    }
    std::fs::read(path).map_err(|e| CompileError::Io { path: path.to_owned(), message: e.to_string() })
}

/// Walks the decluttered model in evaluation order and lowers every node.
fn lower_model(model: &TypedModel) -> Result<Graph, CompileError> {
    let mut cx = Lowering { model, graph: Graph::default(), tensors: HashMap::new(), unsupported: Vec::new() };
    // Every graph input gets its tensor first: one that no node reads (or whose readers tract folded
    // into constants) is not in `eval_order`, but the caller still passes it.
    let inputs = model.input_outlets().map_err(internal)?.to_vec();
    for (i, &outlet) in inputs.iter().enumerate() {
        cx.source(outlet, i)?;
    }
    let order = model
        .eval_order()
        .map_err(|e| CompileError::InvalidModel { path: Default::default(), message: format!("{e:#}") })?;
    for id in order {
        let node = model.nodes.get(id).ok_or_else(|| invalid(format!("node {id} is not in the model")))?;
        cx.node(node)?;
    }
    if !cx.unsupported.is_empty() {
        return Err(CompileError::Unsupported(cx.unsupported));
    }
    for (i, outlet) in inputs.iter().enumerate() {
        let t = *cx.tensors.get(outlet).ok_or_else(|| invalid(format!("graph input {i} has no tensor")))?;
        debug_assert_eq!(cx.graph.tensors[t].kind, TensorKind::Input(i));
        cx.graph.inputs.push(t);
    }
    for outlet in model.output_outlets().map_err(internal)? {
        let t = cx.data(*outlet)?;
        cx.graph.outputs.push(t);
    }
    mean::fuse_mean(&mut cx.graph);
    Ok(cx.graph)
}

fn invalid(message: String) -> CompileError {
    CompileError::InvalidModel { path: Default::default(), message }
}

fn internal(e: TractError) -> CompileError {
    CompileError::InvalidModel { path: Default::default(), message: format!("{e:#}") }
}

/// State of one lowering walk.
struct Lowering<'m> {
    model: &'m TypedModel,
    graph: Graph,
    /// IR tensor of each tract outlet that has been given one.
    tensors: HashMap<OutletId, TensorId>,
    unsupported: Vec<UnsupportedOp>,
}

impl Lowering<'_> {
    /// The concrete shape of an outlet.
    fn shape(&self, o: OutletId) -> Result<Vec<usize>, CompileError> {
        let fact = self.model.outlet_fact(o).map_err(internal)?;
        let name = self.outlet_name(o);
        let shape = fact.shape.as_concrete().ok_or_else(|| CompileError::SymbolicDim {
            input: name.clone(),
            axis: 0,
            symbol: format!("{:?}", fact.shape),
            shape: fact.shape.iter().map(|d| d.to_string()).collect(),
        })?;
        let elems = shape.iter().try_fold(4usize, |acc, &d| acc.checked_mul(d));
        if elems.is_none() {
            return Err(CompileError::ShapeOverflow { tensor: name });
        }
        Ok(shape.to_vec())
    }

    fn outlet_name(&self, o: OutletId) -> String {
        let name = self.model.nodes.get(o.node).map_or("?", |n| n.name.as_str());
        if o.slot == 0 {
            name.to_string()
        } else {
            format!("{name}.{}", o.slot)
        }
    }

    /// Registers graph input `i` (a `TypedSource` outlet).
    fn source(&mut self, o: OutletId, i: usize) -> Result<(), CompileError> {
        let shape = self.shape(o)?;
        self.check_f32(o)?;
        let t = self.graph.add_tensor(self.outlet_name(o), shape, DType::F32, TensorKind::Input(i));
        self.tensors.insert(o, t);
        Ok(())
    }

    /// The constant value of an outlet, if tract knows it.
    fn konst(&self, o: OutletId) -> Option<Arc<Tensor>> {
        self.model.outlet_fact(o).ok()?.konst.clone()
    }

    /// The IR tensor holding an outlet's data, creating constant tensors on first use.
    fn data(&mut self, o: OutletId) -> Result<TensorId, CompileError> {
        if let Some(&t) = self.tensors.get(&o) {
            return Ok(t);
        }
        let name = self.outlet_name(o);
        let k = self.konst(o).ok_or_else(|| CompileError::InvalidModel {
            path: Default::default(),
            message: format!("tensor `{name}` is used before it is computed"),
        })?;
        let values = f32_values(&k).ok_or_else(|| CompileError::UnsupportedType {
            tensor: name.clone(),
            dtype: format!("{:?}", k.datum_type()),
        })?;
        let t = self.graph.add_const(name, k.shape().to_vec(), Data::F32(values));
        self.tensors.insert(o, t);
        Ok(t)
    }

    fn node(&mut self, node: &TypedNode) -> Result<(), CompileError> {
        if node.op_is::<tract_onnx::tract_core::ops::konst::Const>() {
            return Ok(()); // materialised on first use by `data`
        }
        if node.op_is::<tract_onnx::tract_core::ops::source::TypedSource>() {
            if self.tensors.contains_key(&node.id.into()) {
                return Ok(()); // registered up front by `lower_model`
            }
            let i = self.model.input_outlets().map_err(internal)?.iter().position(|o| o.node == node.id);
            let i = i.ok_or_else(|| invalid(format!("source `{}` is not a graph input", node.name)))?;
            return self.source(node.id.into(), i);
        }
        if self.konst(node.id.into()).is_some() {
            return Ok(()); // folded by tract: a constant, materialised on use
        }
        if is_fused_comparison(self.model, node) {
            return Ok(()); // a bool condition: fused into the `Iff` nodes that read it
        }
        if node.outputs.len() != 1 {
            self.unsupported(node, "operators with several outputs are not supported");
            return Ok(());
        }
        self.check_f32(node.id.into())?;
        if let Err(reason) = self.lower(node)? {
            self.unsupported(node, &reason);
            // A stand-in output lets the walk go on, so that every unsupported node is listed.
            let shape = self.shape(node.id.into())?;
            let t = self.graph.add_tensor(node.name.clone(), shape, DType::F32, TensorKind::Activation);
            self.tensors.insert(node.id.into(), t);
        }
        Ok(())
    }

    /// Lowers `node` through the operator registry ([`crate::ops`]), appending its IR node (and
    /// any copy its inputs need) to the graph; `Ok(Err(reason))` when no operator supports it.
    fn lower(&mut self, node: &TypedNode) -> Result<Result<(), String>, CompileError> {
        let Some(lowerer) = lowering::find(node) else { return Ok(Err(String::new())) };
        let out_shape = self.shape(node.id.into())?;
        let in_shapes: Vec<Vec<usize>> = node.inputs.iter().map(|&i| self.shape(i)).collect::<Result<_, _>>()?;
        if in_shapes.len() < lowerer.min_inputs {
            return Ok(Err(format!("{} inputs where the operator needs {}", in_shapes.len(), lowerer.min_inputs)));
        }
        let tract_node = TractNode { model: self.model, node, in_shapes, out_shape };
        let Lowered { op, inputs: sources, output_perm } = match (lowerer.lower)(&tract_node) {
            Ok(l) => l,
            Err(reason) => return Ok(Err(reason)),
        };
        let mut inputs = Vec::with_capacity(sources.len());
        for src in sources {
            inputs.push(self.input(node, src)?);
        }
        let output =
            self.graph.add_tensor(node.name.clone(), tract_node.out_shape.clone(), DType::F32, TensorKind::Activation);
        self.tensors.insert(node.id.into(), output);
        let (name, source_op) = (node.name.clone(), node.op.name().to_string());
        let Some(back) = output_perm else {
            self.graph.nodes.push(Node { name, source_op, op, inputs, output });
            return Ok(Ok(()));
        };
        // The op writes its result with the axes `back` puts in the tract output's order.
        let mut written = vec![0; back.len()];
        for (i, &p) in back.iter().enumerate() {
            written[p] = tract_node.out_shape[i];
        }
        let staged = format!("{name}.channels_first");
        let t = self.graph.add_tensor(staged.clone(), written.clone(), DType::F32, TensorKind::Activation);
        self.graph.nodes.push(Node { name: staged, source_op: source_op.clone(), op, inputs, output: t });
        let copy = Op::Copy(transpose(&back, &written, &tract_node.out_shape));
        self.graph.nodes.push(Node { name, source_op: "Transpose".into(), op: copy, inputs: vec![t], output });
        Ok(Ok(()))
    }

    /// The IR tensor of one input of a lowered node.
    fn input(&mut self, node: &TypedNode, src: Src) -> Result<TensorId, CompileError> {
        Ok(match src {
            Src::Input(i) => {
                let o = *node.inputs.get(i).ok_or_else(|| invalid(format!("node `{}` has no input {i}", node.name)))?;
                self.data(o)?
            }
            Src::Outlet(o) => self.data(o)?,
            Src::Const { name, shape, data } => self.graph.add_const(format!("{}.{name}", node.name), shape, data),
            Src::Permuted { input, perm } => {
                let source = self.data(node.inputs[input])?;
                let in_shape = self.graph.tensors[source].shape.clone();
                let shape: Vec<usize> = perm.iter().map(|&p| in_shape[p]).collect();
                let name = format!("{}.transposed{input}", node.name);
                if let TensorKind::Const(data) = &self.graph.tensors[source].kind {
                    // Weights are permuted once, at build time: no copy and no arena bytes at run time.
                    let data = data.gather(permutation(&in_shape, &perm));
                    self.graph.add_const(name, shape, data)
                } else {
                    let dtype = self.graph.tensors[source].dtype;
                    let t = self.graph.add_tensor(name.clone(), shape.clone(), dtype, TensorKind::Activation);
                    let op = Op::Copy(transpose(&perm, &in_shape, &shape));
                    let source_op = "Transpose".into();
                    self.graph.nodes.push(Node { name, source_op, op, inputs: vec![source], output: t });
                    t
                }
            }
        })
    }

    fn unsupported(&mut self, node: &TypedNode, reason: &str) {
        self.unsupported.push(UnsupportedOp {
            node: node.name.clone(),
            op: node.op.name().to_string(),
            reason: reason.to_string(),
        });
    }

    fn check_f32(&self, o: OutletId) -> Result<(), CompileError> {
        let fact = self.model.outlet_fact(o).map_err(internal)?;
        if fact.datum_type != f32::datum_type() {
            return Err(CompileError::UnsupportedType {
                tensor: self.outlet_name(o),
                dtype: format!("{:?}", fact.datum_type),
            });
        }
        Ok(())
    }
}

/// The values of a constant as `f32`, if it is a float32 tensor.
fn f32_values(t: &Tensor) -> Option<Vec<f32>> {
    if t.datum_type() != f32::datum_type() {
        return None;
    }
    t.to_plain_array_view::<f32>().ok().map(|v| v.iter().copied().collect())
}
