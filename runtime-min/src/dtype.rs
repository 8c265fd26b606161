//! The element types the kernels read and write.

/// An element type of a tensor: what generated code declares its ports, arena slices and weights
/// as, and what the compiler sizes them by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// 32-bit IEEE float.
    F32,
    /// Signed 8-bit integer (quantized activations and weights).
    I8,
    /// Unsigned 8-bit integer (quantized activations).
    U8,
    /// Signed 16-bit integer (TFLite's 16x8 mode activations).
    I16,
    /// Signed 32-bit integer (quantized biases, accumulators).
    I32,
}

impl DType {
    /// Every element type, in declaration order.
    pub const ALL: [DType; 5] = [DType::F32, DType::I8, DType::U8, DType::I16, DType::I32];

    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::I16 => 2,
            DType::I8 | DType::U8 => 1,
        }
    }

    /// The Rust primitive type's name (`f32`, `i8`, ...), as generated code spells it.
    pub const fn rust_name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::I16 => "i16",
            DType::I32 => "i32",
        }
    }

    /// The variant's name (`F32`, `I8`, ...), as generated code spells `sramfit::DType::F32`.
    pub const fn variant_name(self) -> &'static str {
        match self {
            DType::F32 => "F32",
            DType::I8 => "I8",
            DType::U8 => "U8",
            DType::I16 => "I16",
            DType::I32 => "I32",
        }
    }
}

impl core::fmt::Display for DType {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.rust_name())
    }
}
