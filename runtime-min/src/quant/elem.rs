//! The quantized activation element types, behind two sealed traits: [`QuantInt`] (`i8`, `u8`
//! and `i16`) and its 8-bit part [`QuantElem`] (`i8`, `u8`: the types with 256-entry tables).

mod sealed {
    /// Only `i8`, `u8` and `i16` implement [`super::QuantInt`].
    pub trait Sealed {}
    impl Sealed for i8 {}
    impl Sealed for u8 {}
    impl Sealed for i16 {}
}

/// A quantized integer activation element: `i8` (TFLite, ONNX QDQ int8), `u8` (ONNX models
/// quantized with uint8 activations) or `i16` (TFLite's 16x8 mode). Sealed: no other type
/// implements it.
///
/// The kernels whose arithmetic is the same at every width (pooling, mean, add, requantization,
/// padding) are generic over it and monomorphised only for the types a model uses.
pub trait QuantInt: sealed::Sealed + Copy + Default + PartialEq + core::fmt::Debug + 'static {
    /// The smallest value, as `i32` (-128, 0 or -32768).
    const MIN: i32;
    /// The largest value, as `i32` (127, 255 or 32767).
    const MAX: i32;
    /// The value as `i32`.
    fn to_i32(self) -> i32;
    /// `v` clamped to `[MIN, MAX]`.
    fn saturate(v: i32) -> Self;
}

/// An 8-bit quantized activation element: `i8` or `u8`, the [`QuantInt`]s indexed into
/// 256-entry lookup tables. Sealed: no other type implements it.
///
/// Kernels are generic over it and monomorphised only for the types a model uses.
pub trait QuantElem: QuantInt {
    /// The raw byte: the index of this value in a 256-entry lookup table (TFLite's order:
    /// an `i8` table starts with 0, 1, .., 127, then -128, .., -1).
    fn byte(self) -> u8;
}

/// [`QuantInt`] for a primitive integer type no wider than `i32`.
macro_rules! quant_int {
    ($($t:ty),*) => {$(
        impl QuantInt for $t {
            const MIN: i32 = <$t>::MIN as i32;
            const MAX: i32 = <$t>::MAX as i32;
            #[inline(always)]
            fn to_i32(self) -> i32 {
                self as i32
            }
            #[inline(always)]
            fn saturate(v: i32) -> Self {
                v.clamp(<Self as QuantInt>::MIN, <Self as QuantInt>::MAX) as $t
            }
        }
    )*};
}
quant_int!(i8, u8, i16);

impl QuantElem for i8 {
    #[inline(always)]
    fn byte(self) -> u8 {
        self as u8
    }
}

impl QuantElem for u8 {
    #[inline(always)]
    fn byte(self) -> u8 {
        self
    }
}
