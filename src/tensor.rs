//! Typed ports: the element types a generated module's inputs and outputs can have, and the
//! tagged slices `run_typed` takes, so that one call signature serves every model.

use crate::{DType, Error, Port};

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for i8 {}
    impl Sealed for u8 {}
    impl Sealed for i16 {}
    impl Sealed for i32 {}
}

/// An element type of tensors: `f32`, `i8`, `u8`, `i16` or `i32`. Every bit pattern of these is a
/// valid value, which is what lets the arena and the weight blob be viewed as slices of them.
pub trait Element: Copy + sealed::Sealed + 'static {
    /// The matching [`DType`].
    const DTYPE: DType;
    /// The slice inside `t`, if `t` holds this element type.
    fn of_ref<'a>(t: &TensorRef<'a>) -> Option<&'a [Self]>;
    /// The slice inside `t`, if `t` holds this element type.
    fn of_mut<'a, 'b>(t: &'b mut TensorMut<'a>) -> Option<&'b mut [Self]>;
}

/// A read-only tensor of any element type (an input of [`run_typed`](crate#typed-ports)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TensorRef<'a> {
    /// `f32` elements.
    F32(&'a [f32]),
    /// `i8` elements.
    I8(&'a [i8]),
    /// `u8` elements.
    U8(&'a [u8]),
    /// `i16` elements.
    I16(&'a [i16]),
    /// `i32` elements.
    I32(&'a [i32]),
}

/// A writable tensor of any element type (an output of [`run_typed`](crate#typed-ports)).
#[derive(Debug, PartialEq)]
pub enum TensorMut<'a> {
    /// `f32` elements.
    F32(&'a mut [f32]),
    /// `i8` elements.
    I8(&'a mut [i8]),
    /// `u8` elements.
    U8(&'a mut [u8]),
    /// `i16` elements.
    I16(&'a mut [i16]),
    /// `i32` elements.
    I32(&'a mut [i32]),
}

macro_rules! elements {
    ($($t:ty => $v:ident),*) => {
        $(impl Element for $t {
            const DTYPE: DType = DType::$v;
            fn of_ref<'a>(t: &TensorRef<'a>) -> Option<&'a [Self]> {
                match *t {
                    TensorRef::$v(s) => Some(s),
                    _ => None,
                }
            }
            fn of_mut<'a, 'b>(t: &'b mut TensorMut<'a>) -> Option<&'b mut [Self]> {
                match t {
                    TensorMut::$v(s) => Some(s),
                    _ => None,
                }
            }
        })*

        impl TensorRef<'_> {
            /// The element type.
            pub fn dtype(&self) -> DType {
                match self {
                    $(TensorRef::$v(_) => DType::$v,)*
                }
            }

            /// Number of elements.
            pub fn len(&self) -> usize {
                match self {
                    $(TensorRef::$v(s) => s.len(),)*
                }
            }

            /// Whether there are no elements.
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }
        }

        impl TensorMut<'_> {
            /// The element type.
            pub fn dtype(&self) -> DType {
                match self {
                    $(TensorMut::$v(_) => DType::$v,)*
                }
            }

            /// Number of elements.
            pub fn len(&self) -> usize {
                match self {
                    $(TensorMut::$v(s) => s.len(),)*
                }
            }

            /// Whether there are no elements.
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }
        }

        $(impl<'a> From<&'a [$t]> for TensorRef<'a> {
            fn from(s: &'a [$t]) -> Self {
                TensorRef::$v(s)
            }
        }

        impl<'a> From<&'a mut [$t]> for TensorMut<'a> {
            fn from(s: &'a mut [$t]) -> Self {
                TensorMut::$v(s)
            }
        })*
    };
}

elements!(f32 => F32, i8 => I8, u8 => U8, i16 => I16, i32 => I32);

/// Input `i` of a `run_typed` call as an array of `N` elements of `T`, or the error naming the port:
/// [`Error::Type`] for another element type, [`Error::Shape`] for another length.
pub fn port_ref<'a, T: Element, const N: usize>(t: &TensorRef<'a>, i: usize) -> Result<&'a [T; N], Error> {
    let port = Port::Input(i);
    let s = T::of_ref(t).ok_or(Error::Type { port, expected: T::DTYPE, found: t.dtype() })?;
    s.try_into().map_err(|_| Error::Shape { port, expected: N, found: s.len() })
}

/// Output `i` of a `run_typed` call as an array of `N` elements of `T` (see [`port_ref`]).
pub fn port_mut<'a, 'b, T: Element, const N: usize>(
    t: &'b mut TensorMut<'a>,
    i: usize,
) -> Result<&'b mut [T; N], Error> {
    let port = Port::Output(i);
    let found_type = t.dtype();
    let s = T::of_mut(t).ok_or(Error::Type { port, expected: T::DTYPE, found: found_type })?;
    let found = s.len();
    s.try_into().map_err(|_| Error::Shape { port, expected: N, found })
}
