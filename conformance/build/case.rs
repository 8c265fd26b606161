//! One case: decode the model and its data, bake the inputs a static compiler must see as
//! constants, and run sramfit's import -> compile -> emit path.

use std::panic::{self, AssertUnwindSafe};
use std::path::Path;

use proc_macro2::TokenStream;
use prost::Message;
use sramfit_planner_core::error::CompileError;
use sramfit_planner_core::{codegen, import, pipeline};
use tract_onnx::pb::{self, type_proto::Value as Type};
use tract_onnx::prelude::*;

/// ONNX's element type codes for the types a port of a sramfit module can have, and their
/// `sramfit::DType` variant names.
const PORT_TYPES: &[(i32, &str)] = &[(1, "F32"), (3, "I8"), (2, "U8"), (5, "I16"), (6, "I32")];

/// The quantized ops of the corpus.
const QUANTIZED_OPS: &[&str] =
    &["QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger"];

/// Ops whose inputs after the first are parameters (statistics, bounds, pads, scales, zero points,
/// quantized weights) that a build-time compiler only accepts as constants.
const PARAMETER_INPUT_OPS: &[&str] = &[
    "BatchNormalization",
    "Clip",
    "Pad",
    "Resize",
    "QuantizeLinear",
    "DequantizeLinear",
    "QLinearConv",
    "QLinearMatMul",
    "ConvInteger",
    "MatMulInteger",
];

/// A tensor of the case's data set.
pub struct Data {
    /// Dimensions.
    pub shape: Vec<usize>,
    /// Its `sramfit::DType` variant name (`F32`, `I8`, ...).
    pub dtype: &'static str,
    /// Row-major values, little-endian.
    pub bytes: Vec<u8>,
}

/// What became of a case at build time.
pub enum Status {
    /// Compiled: the module's items, the run-time inputs (with their graph input indices), the
    /// expected outputs, and which inputs were baked as constants.
    Compiled { items: TokenStream, inputs: Vec<(usize, Data)>, outputs: Vec<Data>, baked: Vec<usize> },
    /// In scope, but import or compilation failed: the first line of the error.
    Unsupported(String),
    /// Out of scope: why.
    Skipped(String),
}

/// One row of the index, processed.
pub struct Case {
    /// Folder name.
    pub name: String,
    /// Op type(s).
    pub op: String,
    /// Whether it is a quantized or integer case: a quantized op, or 8-, 16- or 32-bit integer
    /// data.
    pub integer: bool,
    /// The outcome.
    pub status: Status,
}

/// Processes one case. Never panics: a panic inside the compiler becomes an `Unsupported` status.
pub fn prepare(data_dir: &Path, row: &crate::index::Row) -> Case {
    let dir = data_dir.join(&row.case);
    let status = match panic::catch_unwind(AssertUnwindSafe(|| prepare_in(&dir, &row.op))) {
        Ok(Ok(status)) => status,
        Ok(Err(e)) => Status::Unsupported(first_line(&e)),
        Err(p) => {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
            Status::Unsupported(format!("the compiler panicked: {}", first_line(&msg.unwrap_or_default())))
        }
    };
    let integer = QUANTIZED_OPS.contains(&row.op.as_str())
        || row.dtypes.split(',').any(|t| ["int8", "uint8", "int16", "int32"].contains(&t));
    Case { name: row.case.clone(), op: row.op.clone(), integer, status }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").trim().to_string()
}

fn prepare_in(dir: &Path, op: &str) -> Result<Status, String> {
    let case = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let case = case.as_str();
    let model = read_proto::<pb::ModelProto>(&dir.join("model.onnx"))?;
    let graph = model.graph.as_ref().ok_or("the model has no graph")?;
    if let Some(why) = out_of_scope(graph) {
        return Ok(Status::Skipped(why));
    }
    let data_set = dir.join("test_data_set_0");
    let inputs: Vec<pb::TensorProto> = (0..graph.input.len())
        .map(|i| read_proto(&data_set.join(format!("input_{i}.pb"))))
        .collect::<Result<_, _>>()?;
    let outputs: Vec<Data> = (0..graph.output.len())
        .map(|j| read_proto(&data_set.join(format!("output_{j}.pb"))).and_then(|t| port_data(&t)))
        .collect::<Result<_, _>>()?;

    // Every input of a type no port can have is a parameter (shape, axes, indices, pads...); so
    // are the inputs after the first of ops that only take constant parameters.
    let mut baked: Vec<usize> = (0..graph.input.len())
        .filter(|&i| port_type(&graph.input[i]).is_none() || (i > 0 && PARAMETER_INPUT_OPS.contains(&op)))
        .collect();
    let mut result = compile_baked(case, &model, &inputs, &baked);
    // tract rejects other ops whose parameters are not constants ("... must be a constant"): bake
    // everything after the first input of those too.
    if matches!(&result, Err(e) if e.contains("must be a constant")) {
        baked = (1..graph.input.len()).collect();
        result = compile_baked(case, &model, &inputs, &baked);
    }
    let items = result?;
    let runtime = (0..graph.input.len())
        .filter(|i| !baked.contains(i))
        .map(|i| port_data(&inputs[i]).map(|d| (i, d)))
        .collect::<Result<_, _>>()?;
    Ok(Status::Compiled { items, inputs: runtime, outputs, baked })
}

/// Moves the `baked` inputs into the initializers (with the data set's values), then imports,
/// compiles and emits.
fn compile_baked(
    case: &str,
    model: &pb::ModelProto,
    inputs: &[pb::TensorProto],
    baked: &[usize],
) -> Result<TokenStream, String> {
    let mut model = model.clone();
    let graph = model.graph.as_mut().expect("checked by the caller");
    let declared = std::mem::take(&mut graph.input);
    for (i, input) in declared.into_iter().enumerate() {
        if baked.contains(&i) {
            let mut t = inputs[i].clone();
            t.name = input.name;
            graph.initializer.push(t);
        } else {
            graph.input.push(input);
        }
    }
    if let Some(dir) = std::env::var_os("SRAMFIT_CONFORMANCE_DUMP") {
        // For diagnosis: the model exactly as sramfit sees it (open it with planner-core's
        // `dump_tract` example to see tract's decluttered graph).
        let path = Path::new(&dir).join(format!("{case}.onnx"));
        std::fs::write(&path, model.encode_to_vec()).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let ir = import::import_proto(&model, &[]).map_err(|e| one_line(&e))?;
    let program = pipeline::compile_graph(ir, &Default::default()).map_err(|e| one_line(&e))?;
    let items = codegen::emit(&program, &codegen::CodegenOptions::default());
    // Two known codegen warnings (see README.md), allowed only where they occur so that any other
    // warning in generated code still shows: a model without weights never reads `WEIGHTS`, and a
    // model with an empty input or output never reads that parameter.
    let g = &program.graph;
    let dead_code = program.weights.bytes.is_empty().then(|| quote::quote!(dead_code));
    let empty_port = g.inputs.iter().chain(&g.outputs).any(|&t| g.tensors[t].is_empty());
    let unused = empty_port.then(|| quote::quote!(unused_variables));
    let lints = dead_code.into_iter().chain(unused).collect::<Vec<_>>();
    Ok(if lints.is_empty() { items } else { quote::quote!(#![allow(#(#lints),*)] #items) })
}

/// A compile error on one line: the unsupported operators themselves, else the first line.
fn one_line(e: &CompileError) -> String {
    match e {
        CompileError::Unsupported(ops) => {
            let ops: Vec<String> = ops
                .iter()
                .map(|o| {
                    if o.reason.is_empty() {
                        format!("{} `{}`", o.op, o.node)
                    } else {
                        format!("{} `{}` ({})", o.op, o.node, o.reason)
                    }
                })
                .collect();
            format!("unsupported operator: {}", ops.join("; "))
        }
        e => first_line(&e.to_string()),
    }
}

fn read_proto<M: Message + Default>(path: &Path) -> Result<M, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    M::decode(bytes.as_slice()).map_err(|e| format!("{}: {e}", path.display()))
}

fn elem_type(v: &pb::ValueInfoProto) -> Option<i32> {
    match v.r#type.as_ref()?.value.as_ref()? {
        Type::TensorType(t) => Some(t.elem_type),
    }
}

/// The `sramfit::DType` variant of a value's element type, when a port can have it.
fn port_type(v: &pb::ValueInfoProto) -> Option<&'static str> {
    let t = elem_type(v)?;
    PORT_TYPES.iter().find(|(code, _)| *code == t).map(|(_, name)| *name)
}

/// Why a case is out of scope: element types sramfit has no form for (float8, 4-bit and 2-bit
/// quantization anywhere in the graph's ports; other types on a port that is not baked as a
/// constant), blocked quantization, sequences and optionals.
fn out_of_scope(graph: &pb::GraphProto) -> Option<String> {
    for v in graph.input.iter().chain(&graph.output) {
        match elem_type(v) {
            None => return Some(format!("not a tensor: `{}` is a sequence or optional", v.name)),
            Some(17..=20 | 23 | 24) => {
                return Some(format!("float8 / float4 quantization (`{}`): sramfit has no such element type", v.name))
            }
            Some(21 | 22 | 25 | 26) => {
                return Some(format!("4-bit / 2-bit quantization (`{}`): sramfit has no sub-byte element type", v.name))
            }
            Some(_) => {}
        }
    }
    let blocked = |n: &pb::NodeProto| n.attribute.iter().any(|a| a.name == "block_size" && a.i != 0);
    if let Some(n) = graph.node.iter().find(|n| blocked(n)) {
        return Some(format!("blocked quantization (`{}` has block_size): out of scope", n.op_type));
    }
    // uint16, float16, float64, uint32, uint64, bfloat16 data (not parameters) in the first input.
    if let Some(x) = graph.input.first().filter(|x| matches!(elem_type(x), Some(4 | 10 | 11 | 12 | 13 | 16))) {
        let t = elem_type(x).map(type_name).unwrap_or_default();
        return Some(format!("input `{}` is {t}: sramfit's ports are float32, int8, uint8, int16, int32", x.name));
    }
    for out in &graph.output {
        if port_type(out).is_none() {
            let t = elem_type(out).map(type_name).unwrap_or_default();
            return Some(format!(
                "output `{}` is {t}: sramfit's ports are float32, int8, uint8, int16, int32",
                out.name
            ));
        }
    }
    None
}

/// A data set tensor of a port type, as little-endian bytes.
fn port_data(t: &pb::TensorProto) -> Result<Data, String> {
    let tensor = tract_onnx::tensor::load_tensor(&tract_onnx::data_resolver::FopenDataResolver, t, None)
        .map_err(|e| format!("{e:#}"))?;
    fn le<T: Datum + Copy, const N: usize>(t: &Tensor, f: fn(T) -> [u8; N]) -> Result<Vec<u8>, String> {
        Ok(t.to_plain_array_view::<T>().map_err(|e| format!("{e:#}"))?.iter().flat_map(|&v| f(v)).collect())
    }
    let (dtype, bytes) = match tensor.datum_type() {
        DatumType::F32 => ("F32", le(&tensor, f32::to_le_bytes)?),
        DatumType::I8 => ("I8", le(&tensor, i8::to_le_bytes)?),
        DatumType::U8 => ("U8", le(&tensor, u8::to_le_bytes)?),
        DatumType::I16 => ("I16", le(&tensor, i16::to_le_bytes)?),
        DatumType::I32 => ("I32", le(&tensor, i32::to_le_bytes)?),
        d => return Err(format!("tensor `{}` is {d:?}, not a port type", t.name)),
    };
    Ok(Data { shape: tensor.shape().to_vec(), dtype, bytes })
}

fn type_name(code: i32) -> String {
    let name = match code {
        1 => "float32",
        2 => "uint8",
        3 => "int8",
        4 => "uint16",
        5 => "int16",
        6 => "int32",
        7 => "int64",
        9 => "bool",
        10 => "float16",
        11 => "float64",
        12 => "uint32",
        13 => "uint64",
        16 => "bfloat16",
        _ => return format!("element type {code}"),
    };
    name.to_string()
}
