//! Reading a quantized model's ONNX protobuf directly: typed constants (initializers and Constant
//! nodes, in every element type quantized models use) and node attributes.

use tract_onnx::pb;

use crate::tensor::{DType, Data};

/// ONNX element type codes.
pub mod elem {
    /// float32.
    pub const FLOAT: i32 = 1;
    /// uint8.
    pub const UINT8: i32 = 2;
    /// int8.
    pub const INT8: i32 = 3;
    /// uint16.
    pub const UINT16: i32 = 4;
    /// int16.
    pub const INT16: i32 = 5;
    /// int32.
    pub const INT32: i32 = 6;
    /// int64.
    pub const INT64: i32 = 7;
    /// bool.
    pub const BOOL: i32 = 9;
    /// float16.
    pub const FLOAT16: i32 = 10;
    /// float64.
    pub const DOUBLE: i32 = 11;
    /// uint32.
    pub const UINT32: i32 = 12;
    /// uint64.
    pub const UINT64: i32 = 13;
}

/// The IR element type of an ONNX element type, if the IR has it.
pub fn dtype_of(elem: i32) -> Option<DType> {
    match elem {
        elem::FLOAT => Some(DType::F32),
        elem::INT8 => Some(DType::I8),
        elem::UINT8 => Some(DType::U8),
        elem::INT16 => Some(DType::I16),
        elem::INT32 => Some(DType::I32),
        _ => None,
    }
}

/// The ONNX name of an element type code, for messages.
pub fn elem_name(elem: i32) -> String {
    let name = match elem {
        elem::FLOAT => "float32",
        elem::UINT8 => "uint8",
        elem::INT8 => "int8",
        elem::UINT16 => "uint16",
        elem::INT16 => "int16",
        elem::INT32 => "int32",
        elem::INT64 => "int64",
        elem::BOOL => "bool",
        elem::FLOAT16 => "float16",
        elem::DOUBLE => "float64",
        elem::UINT32 => "uint32",
        elem::UINT64 => "uint64",
        17..=26 => return format!("a float8 / 4-bit / 2-bit type (code {elem})"),
        _ => return format!("element type {elem}"),
    };
    name.into()
}

/// The values of a constant: floating point types as `f32`, integer types as `i64`.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    /// float32, float16, float64.
    Float(Vec<f32>),
    /// Every integer type and bool.
    Int(Vec<i64>),
}

/// A constant tensor: an initializer or a Constant node's value.
#[derive(Clone, Debug, PartialEq)]
pub struct Konst {
    /// Dimensions.
    pub shape: Vec<usize>,
    /// ONNX element type code.
    pub elem: i32,
    /// The values, row-major.
    pub values: Values,
}

impl Konst {
    /// Decodes a `TensorProto` (typed fields or little-endian `raw_data`).
    pub fn from_proto(t: &pb::TensorProto) -> Result<Konst, String> {
        let what = || format!("constant `{}`", t.name);
        if t.data_location == Some(1) || !t.external_data.is_empty() {
            return Err(format!("{} keeps its data in an external file (not supported)", what()));
        }
        let shape = t.dims.iter().map(|&d| usize::try_from(d)).collect::<Result<Vec<_>, _>>();
        let shape = shape.map_err(|_| format!("{} has a negative dimension", what()))?;
        let len = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
        let len = len.ok_or_else(|| format!("{} has more elements than an address space holds", what()))?;
        let raw = &t.raw_data;
        let values = match t.data_type {
            elem::FLOAT if !raw.is_empty() => Values::Float(le(raw, f32::from_le_bytes)),
            elem::FLOAT => Values::Float(t.float_data.clone()),
            elem::DOUBLE if !raw.is_empty() => Values::Float(le(raw, |b| f64::from_le_bytes(b) as f32)),
            elem::DOUBLE => Values::Float(t.double_data.iter().map(|&v| v as f32).collect()),
            elem::FLOAT16 if !raw.is_empty() => Values::Float(le(raw, |b| f16_to_f32(u16::from_le_bytes(b)))),
            elem::FLOAT16 => Values::Float(t.int32_data.iter().map(|&v| f16_to_f32(v as u16)).collect()),
            elem::INT8 if !raw.is_empty() => Values::Int(raw.iter().map(|&b| b as i8 as i64).collect()),
            elem::UINT8 | elem::BOOL if !raw.is_empty() => Values::Int(raw.iter().map(|&b| b as i64).collect()),
            elem::INT16 if !raw.is_empty() => Values::Int(le(raw, |b| i16::from_le_bytes(b) as i64)),
            elem::UINT16 if !raw.is_empty() => Values::Int(le(raw, |b| u16::from_le_bytes(b) as i64)),
            elem::INT32 if !raw.is_empty() => Values::Int(le(raw, |b| i32::from_le_bytes(b) as i64)),
            elem::UINT32 if !raw.is_empty() => Values::Int(le(raw, |b| u32::from_le_bytes(b) as i64)),
            elem::INT64 if !raw.is_empty() => Values::Int(le(raw, i64::from_le_bytes)),
            elem::INT8 | elem::UINT8 | elem::BOOL | elem::INT16 | elem::UINT16 | elem::INT32 => {
                Values::Int(t.int32_data.iter().map(|&v| v as i64).collect())
            }
            elem::INT64 => Values::Int(t.int64_data.clone()),
            elem::UINT32 => Values::Int(t.uint64_data.iter().map(|&v| v as i64).collect()),
            other => return Err(format!("{} is {} (not supported)", what(), elem_name(other))),
        };
        let k = Konst { shape, elem: t.data_type, values };
        if k.len() != len {
            return Err(format!("{} holds {} values for shape {:?}", what(), k.len(), k.shape));
        }
        Ok(k)
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match &self.values {
            Values::Float(v) => v.len(),
            Values::Int(v) => v.len(),
        }
    }

    /// The values as `f32` (integers converted).
    pub fn floats(&self) -> Vec<f32> {
        match &self.values {
            Values::Float(v) => v.clone(),
            Values::Int(v) => v.iter().map(|&x| x as f32).collect(),
        }
    }

    /// The values of an integer constant.
    pub fn ints(&self) -> Result<&[i64], String> {
        match &self.values {
            Values::Int(v) => Ok(v),
            Values::Float(_) => Err(format!("a {} constant where integers are expected", elem_name(self.elem))),
        }
    }

    /// The value of a one-element constant, as `f32`.
    pub fn scalar(&self) -> Result<f32, String> {
        match self.floats()[..] {
            [v] => Ok(v),
            _ => Err(format!("{} values where one is expected", self.len())),
        }
    }

    /// As IR data, in the IR's element type of the same name.
    pub fn data(&self) -> Result<Data, String> {
        let ints = || self.ints();
        Ok(match self.elem {
            elem::FLOAT | elem::FLOAT16 | elem::DOUBLE => Data::F32(self.floats()),
            elem::INT8 => Data::I8(ints()?.iter().map(|&v| v as i8).collect()),
            elem::UINT8 => Data::U8(ints()?.iter().map(|&v| v as u8).collect()),
            elem::INT16 => Data::I16(ints()?.iter().map(|&v| v as i16).collect()),
            elem::INT32 => Data::I32(ints()?.iter().map(|&v| v as i32).collect()),
            other => return Err(format!("a constant of {}", elem_name(other))),
        })
    }
}

/// Little-endian values of `N` bytes each.
fn le<const N: usize, T>(raw: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
    raw.chunks_exact(N).map(|c| f(c.try_into().expect("chunks of N bytes"))).collect()
}

/// An IEEE half-precision value, exactly, as `f32`.
fn f16_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = ((h >> 10) & 0x1f) as i32;
    let fraction = (h & 0x3ff) as f32;
    sign * match exponent {
        0 => fraction * 2f32.powi(-24),
        0x1f if fraction == 0.0 => f32::INFINITY,
        0x1f => f32::NAN,
        e => (1.0 + fraction / 1024.0) * 2f32.powi(e - 15),
    }
}

/// The values of a scale input: at least one, each a positive normal number (anything else has
/// no requantization; an infinite or NaN scale would make every multiplier meaningless).
pub fn scales(k: &Konst) -> Result<Vec<f32>, String> {
    let scales = k.floats();
    if scales.is_empty() {
        return Err("an empty scale".into());
    }
    match scales.iter().find(|s| !(s.is_normal() && **s > 0.0)) {
        Some(s) => Err(format!("a scale of {s} (scales are positive normal numbers)")),
        None => Ok(scales),
    }
}

/// A node's attributes, by name.
pub struct Attrs<'a>(pub &'a [pb::AttributeProto]);

impl Attrs<'_> {
    fn get(&self, name: &str) -> Option<&pb::AttributeProto> {
        self.0.iter().find(|a| a.name == name)
    }

    /// An integer attribute, or `default`.
    pub fn int(&self, name: &str, default: i64) -> i64 {
        self.get(name).map_or(default, |a| a.i)
    }

    /// A float attribute, or `default`.
    pub fn float(&self, name: &str, default: f32) -> f32 {
        self.get(name).map_or(default, |a| a.f)
    }

    /// A list of integers, if present.
    pub fn ints(&self, name: &str) -> Option<Vec<i64>> {
        self.get(name).map(|a| a.ints.clone())
    }

    /// A string attribute, if present.
    pub fn string(&self, name: &str) -> Option<String> {
        self.get(name).map(|a| String::from_utf8_lossy(&a.s).into_owned())
    }

    /// A tensor attribute, if present.
    pub fn tensor(&self, name: &str) -> Option<&pb::TensorProto> {
        self.get(name).and_then(|a| a.t.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_half_precision_exactly() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x3555), 0.333_251_95);
        assert_eq!(f16_to_f32(0x7c00), f32::INFINITY);
    }

    #[test]
    fn decodes_raw_and_typed_integers() {
        let raw = pb::TensorProto {
            dims: vec![3],
            data_type: elem::INT8,
            raw_data: vec![1, 0xff, 0x80],
            ..Default::default()
        };
        assert_eq!(Konst::from_proto(&raw).unwrap().values, Values::Int(vec![1, -1, -128]));
        let typed =
            pb::TensorProto { dims: vec![2], data_type: elem::UINT8, int32_data: vec![7, 200], ..Default::default() };
        assert_eq!(Konst::from_proto(&typed).unwrap().data().unwrap(), Data::U8(vec![7, 200]));
        let short =
            pb::TensorProto { dims: vec![4], data_type: elem::INT32, int32_data: vec![1], ..Default::default() };
        assert!(Konst::from_proto(&short).unwrap_err().contains("1 values for shape [4]"));
    }
}
