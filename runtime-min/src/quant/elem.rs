//! The two 8-bit activation element types, behind one sealed trait.

mod sealed {
    /// Only `i8` and `u8` implement [`super::QuantElem`].
    pub trait Sealed {}
    impl Sealed for i8 {}
    impl Sealed for u8 {}
}

/// An 8-bit quantized activation element: `i8` (TFLite, ONNX QDQ int8) or `u8` (ONNX models
/// quantized with uint8 activations). Sealed: no other type implements it.
///
/// Kernels are generic over it and monomorphised only for the types a model uses.
pub trait QuantElem: sealed::Sealed + Copy + Default + PartialEq + core::fmt::Debug + 'static {
    /// The smallest value, as `i32` (-128 or 0).
    const MIN: i32;
    /// The largest value, as `i32` (127 or 255).
    const MAX: i32;
    /// The value as `i32`.
    fn to_i32(self) -> i32;
    /// `v` clamped to `[MIN, MAX]`.
    fn saturate(v: i32) -> Self;
    /// The raw byte: the index of this value in a 256-entry lookup table (TFLite's order:
    /// an `i8` table starts with 0, 1, .., 127, then -128, .., -1).
    fn byte(self) -> u8;
}

impl QuantElem for i8 {
    const MIN: i32 = i8::MIN as i32;
    const MAX: i32 = i8::MAX as i32;
    #[inline(always)]
    fn to_i32(self) -> i32 {
        self as i32
    }
    #[inline(always)]
    fn saturate(v: i32) -> Self {
        v.clamp(<i8 as QuantElem>::MIN, <i8 as QuantElem>::MAX) as i8
    }
    #[inline(always)]
    fn byte(self) -> u8 {
        self as u8
    }
}

impl QuantElem for u8 {
    const MIN: i32 = u8::MIN as i32;
    const MAX: i32 = u8::MAX as i32;
    #[inline(always)]
    fn to_i32(self) -> i32 {
        self as i32
    }
    #[inline(always)]
    fn saturate(v: i32) -> Self {
        v.clamp(<u8 as QuantElem>::MIN, <u8 as QuantElem>::MAX) as u8
    }
    #[inline(always)]
    fn byte(self) -> u8 {
        self
    }
}
