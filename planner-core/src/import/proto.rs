//! What the ONNX file itself declares about its inputs, read from the protobuf before tract
//! analyses anything, so that a symbolic dimension is reported with the name the model gives it.

use tract_onnx::pb::{self, tensor_shape_proto::dimension::Value as Dim, type_proto::Value as Type};

use super::InputShape;
use crate::error::CompileError;

/// ONNX's element type code for float32.
const FLOAT: i32 = 1;

/// A graph input as the ONNX file declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeclaredInput {
    /// Input name.
    pub name: String,
    /// ONNX element type code (1 = float32).
    pub elem_type: i32,
    /// Dimensions: a number, a symbol, or `?` when the file leaves it open.
    pub dims: Vec<String>,
}

/// The graph inputs that are not initializers, in graph order.
pub fn declared_inputs(model: &pb::ModelProto) -> Vec<DeclaredInput> {
    let Some(graph) = &model.graph else { return Vec::new() };
    let initializers: Vec<&str> = graph.initializer.iter().map(|t| t.name.as_str()).collect();
    graph
        .input
        .iter()
        .filter(|i| !initializers.contains(&i.name.as_str()))
        .map(|i| {
            let tensor = i.r#type.as_ref().and_then(|t| t.value.as_ref()).map(|Type::TensorType(t)| t);
            let dims = tensor
                .and_then(|t| t.shape.as_ref())
                .map(|s| {
                    s.dim
                        .iter()
                        .map(|d| match &d.value {
                            Some(Dim::DimValue(v)) if *v >= 0 => v.to_string(),
                            Some(Dim::DimParam(p)) if !p.is_empty() => p.clone(),
                            _ => "?".to_string(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            DeclaredInput { name: i.name.clone(), elem_type: tensor.map_or(0, |t| t.elem_type), dims }
        })
        .collect()
}

/// The concrete shape of every declared input: the `fixed` one where given, else the declared one,
/// which must then be fully numeric.
pub fn resolve_input_shapes(declared: &[DeclaredInput], fixed: &[InputShape]) -> Result<Vec<Vec<usize>>, CompileError> {
    if declared.is_empty() {
        return Err(CompileError::NoInputs);
    }
    let known = || declared.iter().map(|d| d.name.clone()).collect::<Vec<_>>();
    for f in fixed {
        let Some(d) = declared.iter().find(|d| d.name == f.name) else {
            return Err(CompileError::UnknownInput { name: f.name.clone(), known: known() });
        };
        if !d.dims.is_empty() && d.dims.len() != f.dims.len() {
            return Err(CompileError::InputRank {
                name: f.name.clone(),
                model_rank: d.dims.len(),
                given_rank: f.dims.len(),
            });
        }
    }
    declared
        .iter()
        .map(|d| {
            if let Some(f) = fixed.iter().find(|f| f.name == d.name) {
                return Ok(f.dims.clone());
            }
            d.dims
                .iter()
                .enumerate()
                .map(|(axis, s)| {
                    s.parse::<usize>().map_err(|_| CompileError::SymbolicDim {
                        input: d.name.clone(),
                        axis,
                        symbol: s.clone(),
                        shape: d.dims.clone(),
                    })
                })
                .collect()
        })
        .collect()
}

/// Refuses an input that is not float32 (the float importer's ports; quantized models have their
/// own importer).
pub fn check_float(declared: &[DeclaredInput]) -> Result<(), CompileError> {
    match declared.iter().find(|d| d.elem_type != FLOAT) {
        Some(d) => {
            Err(CompileError::UnsupportedType { tensor: d.name.clone(), dtype: elem_type_name(d.elem_type).into() })
        }
        None => Ok(()),
    }
}

fn elem_type_name(code: i32) -> &'static str {
    match code {
        1 => "float32",
        2 => "uint8",
        3 => "int8",
        5 => "int16",
        6 => "int32",
        7 => "int64",
        9 => "bool",
        10 => "float16",
        11 => "float64",
        16 => "bfloat16",
        _ => "a non-float32 type",
    }
}
