//! Typed tensors: element type, optional quantization, static shape, and where the data comes
//! from. The leaves of the IR: [`crate::ops`] describe operators over them and [`crate::ir`]
//! assembles both into a graph.

pub use sramfit_runtime_min::DType;

/// Index of a tensor in [`crate::ir::Graph::tensors`].
pub type TensorId = usize;

/// Where a tensor's data comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum TensorKind {
    /// Graph input `i`, read from the caller's buffer.
    Input(usize),
    /// Constant data (weights), stored in read-only memory, row-major.
    Const(Data),
    /// Computed by a node.
    Activation,
}

/// The values of a constant tensor, typed.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    /// 32-bit floats.
    F32(Vec<f32>),
    /// Signed bytes.
    I8(Vec<i8>),
    /// Unsigned bytes.
    U8(Vec<u8>),
    /// Signed 16-bit integers.
    I16(Vec<i16>),
    /// Signed 32-bit integers.
    I32(Vec<i32>),
}

impl Data {
    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            Data::F32(_) => DType::F32,
            Data::I8(_) => DType::I8,
            Data::U8(_) => DType::U8,
            Data::I16(_) => DType::I16,
            Data::I32(_) => DType::I32,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Data::F32(v) => v.len(),
            Data::I8(v) => v.len(),
            Data::U8(v) => v.len(),
            Data::I16(v) => v.len(),
            Data::I32(v) => v.len(),
        }
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `f32` values, if the data is `f32`.
    pub fn as_f32(&self) -> Option<&[f32]> {
        match self {
            Data::F32(v) => Some(v),
            _ => None,
        }
    }

    /// Appends the values as little-endian bytes (the weight blob's encoding).
    pub fn extend_le_bytes(&self, out: &mut Vec<u8>) {
        match self {
            Data::F32(v) => out.extend(v.iter().flat_map(|x| x.to_le_bytes())),
            Data::I8(v) => out.extend(v.iter().map(|&x| x as u8)),
            Data::U8(v) => out.extend_from_slice(v),
            Data::I16(v) => out.extend(v.iter().flat_map(|x| x.to_le_bytes())),
            Data::I32(v) => out.extend(v.iter().flat_map(|x| x.to_le_bytes())),
        }
    }

    /// The elements at `indices`, in that order (a permutation or selection made at build time).
    pub fn gather(&self, indices: impl Iterator<Item = usize>) -> Data {
        fn pick<T: Copy>(v: &[T], i: impl Iterator<Item = usize>) -> Vec<T> {
            i.map(|i| v[i]).collect()
        }
        match self {
            Data::F32(v) => Data::F32(pick(v, indices)),
            Data::I8(v) => Data::I8(pick(v, indices)),
            Data::U8(v) => Data::U8(pick(v, indices)),
            Data::I16(v) => Data::I16(pick(v, indices)),
            Data::I32(v) => Data::I32(pick(v, indices)),
        }
    }
}

/// How a quantized tensor's integers map to real numbers: `real = scale * (q - zero_point)`.
#[derive(Clone, Debug, PartialEq)]
pub enum Quant {
    /// One scale and zero point for the whole tensor.
    PerTensor {
        /// The real value of one step.
        scale: f32,
        /// The integer that represents 0.
        zero_point: i32,
    },
    /// One scale and zero point per index of `axis` (per-channel weights).
    PerAxis {
        /// The quantized axis.
        axis: usize,
        /// One scale per index of the axis.
        scales: Vec<f32>,
        /// One zero point per index of the axis.
        zero_points: Vec<i32>,
    },
}

/// A tensor: a name, a static shape, an element type, and where its data lives.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    /// The ONNX tensor (or node output) name, for messages and reports.
    pub name: String,
    /// Static shape, row-major.
    pub shape: Vec<usize>,
    /// Element type (a constant's is its data's).
    pub dtype: DType,
    /// Quantization parameters of an integer tensor that stands for real numbers.
    pub quant: Option<Quant>,
    /// Origin of the data.
    pub kind: TensorKind,
}

impl Tensor {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Size in bytes.
    pub fn bytes(&self) -> u64 {
        self.len() as u64 * self.dtype.size() as u64
    }

    /// The constant data, if the tensor is a constant.
    pub fn data(&self) -> Option<&Data> {
        match &self.kind {
            TensorKind::Const(d) => Some(d),
            _ => None,
        }
    }
}

/// Row-major strides (in elements) of a shape.
pub fn strides_of(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Whether `strides` (in elements) address a tensor of `shape` in row-major order, so that it is
/// read at the index it is written (axes of extent 1 never move the index, whatever their stride).
pub fn is_row_major(shape: &[usize], strides: &[usize]) -> bool {
    strides.len() == shape.len()
        && shape.iter().zip(strides.iter().zip(strides_of(shape))).all(|(&n, (&s, c))| n == 1 || s == c)
}
