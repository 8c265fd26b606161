//! Elementwise binary kernels with NumPy (ONNX multidirectional)
//! broadcasting.

use crate::activation::{clip_f, relu_f, Activation};
use crate::arch::{self, KernelCall, Kernels};
use crate::util::{contiguous_strides, Layout};

/// Broadcasting description for the binary kernels.
///
/// The output `y` is contiguous (row-major) with shape `out_shape`; output
/// element at index `(i_0, .., i_{r-1})` reads `a[sum(i_d * a_strides[d])]`
/// and `b[sum(i_d * b_strides[d])]`. Strides are in elements and are 0 on
/// broadcast axes. All three slices have the same length `r <= MAX_RANK`;
/// rank 0 means a single scalar element. Axes are coalesced internally, so
/// contiguous, scalar and row/column broadcasts all run as contiguous inner
/// loops.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Broadcast<'a> {
    /// Shape of the output.
    pub out_shape: &'a [usize],
    /// Strides of `a` for every output axis (0 = broadcast).
    pub a_strides: &'a [usize],
    /// Strides of `b` for every output axis (0 = broadcast).
    pub b_strides: &'a [usize],
}

/// The element types of [`add`], [`sub`], [`mul`], [`div`], [`max`], [`min`] and their in-place
/// variants: `f32` (IEEE arithmetic) and the integer types of ONNX's integer cases of those
/// operators, whose add, sub and mul wrap around, whose division truncates toward zero (and
/// gives 0 for a division by zero instead of trapping: ONNX leaves it undefined), and whose max
/// and min are the integers'.
pub trait BinaryElem: Copy {
    /// `a + b`.
    fn add(a: Self, b: Self) -> Self;
    /// `a - b`.
    fn sub(a: Self, b: Self) -> Self;
    /// `a * b`.
    fn mul(a: Self, b: Self) -> Self;
    /// `a / b`.
    fn div(a: Self, b: Self) -> Self;
    /// ONNX Max of two values.
    fn max(a: Self, b: Self) -> Self;
    /// ONNX Min of two values.
    fn min(a: Self, b: Self) -> Self;
}

impl BinaryElem for f32 {
    #[inline(always)]
    fn add(a: f32, b: f32) -> f32 {
        a + b
    }
    #[inline(always)]
    fn sub(a: f32, b: f32) -> f32 {
        a - b
    }
    #[inline(always)]
    fn mul(a: f32, b: f32) -> f32 {
        a * b
    }
    #[inline(always)]
    fn div(a: f32, b: f32) -> f32 {
        a / b
    }
    #[inline(always)]
    fn max(a: f32, b: f32) -> f32 {
        f32::max(a, b)
    }
    #[inline(always)]
    fn min(a: f32, b: f32) -> f32 {
        f32::min(a, b)
    }
}

macro_rules! integer_binary_elem {
    ($($t:ty),*) => {$(
        impl BinaryElem for $t {
            #[inline(always)]
            fn add(a: $t, b: $t) -> $t {
                a.wrapping_add(b)
            }
            #[inline(always)]
            fn sub(a: $t, b: $t) -> $t {
                a.wrapping_sub(b)
            }
            #[inline(always)]
            fn mul(a: $t, b: $t) -> $t {
                a.wrapping_mul(b)
            }
            #[inline(always)]
            fn div(a: $t, b: $t) -> $t {
                if b == 0 { 0 } else { a.wrapping_div(b) }
            }
            #[inline(always)]
            fn max(a: $t, b: $t) -> $t {
                Ord::max(a, b)
            }
            #[inline(always)]
            fn min(a: $t, b: $t) -> $t {
                Ord::min(a, b)
            }
        }
    )*};
}

integer_binary_elem!(i8, u8, i16, i32);

/// Shared driver: `y = f(a, b)` elementwise under broadcasting.
#[inline(always)]
fn binary<T: Copy>(p: &Broadcast, a: &[T], b: &[T], y: &mut [T], f: impl Fn(T, T) -> T) {
    let ys = contiguous_strides(p.out_shape);
    let Some(l) = Layout::<3>::new(p.out_shape, |s, d| match s {
        0 => ys[d],
        1 => p.a_strides[d] as isize,
        _ => p.b_strides[d] as isize,
    }) else {
        return;
    };
    let (n, st) = l.inner();
    let (sa, sb) = (st[1] as usize, st[2] as usize);
    l.for_each_outer([0; 3], |[yo, ao, bo]| {
        let (ao, bo) = (ao as usize, bo as usize);
        let yr = &mut y[yo as usize..][..n];
        match (sa, sb) {
            (1, 1) => {
                for ((yv, &av), &bv) in yr.iter_mut().zip(&a[ao..][..n]).zip(&b[bo..][..n]) {
                    *yv = f(av, bv);
                }
            }
            (0, 1) => {
                let av = a[ao];
                for (yv, &bv) in yr.iter_mut().zip(&b[bo..][..n]) {
                    *yv = f(av, bv);
                }
            }
            (1, 0) => {
                let bv = b[bo];
                for (yv, &av) in yr.iter_mut().zip(&a[ao..][..n]) {
                    *yv = f(av, bv);
                }
            }
            (0, 0) => yr.fill(f(a[ao], b[bo])),
            _ => {
                for (t, yv) in yr.iter_mut().enumerate() {
                    *yv = f(a[ao + t * sa], b[bo + t * sb]);
                }
            }
        }
    });
}

/// Shared driver: `acc = f(acc, b)` elementwise, `acc` contiguous with the
/// output shape, `b` broadcast through `p.b_strides` (`p.a_strides` ignored).
#[inline(always)]
fn binary_in_place<T: Copy>(p: &Broadcast, acc: &mut [T], b: &[T], f: impl Fn(T, T) -> T) {
    let ys = contiguous_strides(p.out_shape);
    let Some(l) = Layout::<2>::new(p.out_shape, |s, d| match s {
        0 => ys[d],
        _ => p.b_strides[d] as isize,
    }) else {
        return;
    };
    let (n, st) = l.inner();
    let sb = st[1] as usize;
    l.for_each_outer([0; 2], |[yo, bo]| {
        let bo = bo as usize;
        let yr = &mut acc[yo as usize..][..n];
        match sb {
            1 => {
                for (yv, &bv) in yr.iter_mut().zip(&b[bo..][..n]) {
                    *yv = f(*yv, bv);
                }
            }
            0 => {
                let bv = b[bo];
                for yv in yr.iter_mut() {
                    *yv = f(*yv, bv);
                }
            }
            _ => {
                for (t, yv) in yr.iter_mut().enumerate() {
                    *yv = f(*yv, b[bo + t * sb]);
                }
            }
        }
    });
}

/// The arguments of one [`binary`] kernel, whose body [`arch::run`] compiles per kernel path
/// (its loops vectorise on the wider vectors).
struct BinaryCall<'a, T, F> {
    p: &'a Broadcast<'a>,
    a: &'a [T],
    b: &'a [T],
    y: &'a mut [T],
    f: F,
}

impl<T: Copy, F: Fn(T, T) -> T> KernelCall for BinaryCall<'_, T, F> {
    #[inline(always)]
    fn run(self, _kernels: Kernels) {
        binary(self.p, self.a, self.b, self.y, self.f);
    }
}

/// The arguments of one [`binary_in_place`] kernel, like [`BinaryCall`].
struct BinaryInPlaceCall<'a, T, F> {
    p: &'a Broadcast<'a>,
    acc: &'a mut [T],
    b: &'a [T],
    f: F,
}

impl<T: Copy, F: Fn(T, T) -> T> KernelCall for BinaryInPlaceCall<'_, T, F> {
    #[inline(always)]
    fn run(self, _kernels: Kernels) {
        binary_in_place(self.p, self.acc, self.b, self.f);
    }
}

macro_rules! binary_kernels {
    ($( $name:ident, $in_place:ident, $doc:literal, $note:literal; )*) => {
        $(
            #[doc = concat!("Elementwise `y = ", $doc, "` with broadcasting (see [`Broadcast`]), on ",
                "`f32` or integers ([`BinaryElem`]).", $note)]
            pub fn $name<T: BinaryElem>(p: &Broadcast, a: &[T], b: &[T], y: &mut [T]) {
                arch::run(BinaryCall { p, a, b, y, f: T::$name });
            }
            #[doc = concat!("In place `acc = ", $doc, "` with `a = acc`: `acc` is contiguous with ",
                "`p.out_shape`, `b` is broadcast through `p.b_strides`; `p.a_strides` is ignored.")]
            pub fn $in_place<T: BinaryElem>(p: &Broadcast, acc: &mut [T], b: &[T]) {
                arch::run(BinaryInPlaceCall { p, acc, b, f: T::$name });
            }
        )*
        /// These kernels and their in-place variants (see [`crate::in_place_variant`]).
        pub(crate) const BINARY_IN_PLACE: &[(&str, &str)] = &[$((stringify!($name), stringify!($in_place))),*];
    };
}

binary_kernels! {
    add, add_in_place, "a + b", "";
    sub, sub_in_place, "a - b", "";
    mul, mul_in_place, "a * b", "";
    div, div_in_place, "a / b", "";
    max, max_in_place, "max(a, b)",
        " ONNX Max; if one `f32` operand is NaN the other one is returned (`f32::max`).";
    min, min_in_place, "min(a, b)",
        " ONNX Min; if one `f32` operand is NaN the other one is returned (`f32::min`).";
}

/// Elementwise `y = act(a + b)` on `f32` with broadcasting (see [`Broadcast`]): [`add`] and the
/// activation after it in one pass over the values, the same bits as the two steps (the
/// activation of the same sums, [`Activation::apply`]). The planner's activation fusion makes it
/// of an Add whose only reader is an activation (a residual network's sum and ReLU: ResNet-8's
/// three ReLUs took 2.6 us as steps of their own). ReLU and Clip are applied to each sum as it
/// is made; other activations in a second pass.
pub fn add_activated(p: &Broadcast, act: Activation, a: &[f32], b: &[f32], y: &mut [f32]) {
    match act {
        Activation::Relu => arch::run(BinaryCall { p, a, b, y, f: |a, b| relu_f(a + b) }),
        Activation::Clip { min, max } => arch::run(BinaryCall { p, a, b, y, f: move |a, b| clip_f(a + b, min, max) }),
        act => {
            add(p, a, b, y);
            act.apply_in_place(y);
        }
    }
}

/// In place [`add_activated`]: `acc = act(acc + b)`, `acc` contiguous with `p.out_shape`, `b`
/// broadcast through `p.b_strides` (`p.a_strides` ignored).
pub fn add_activated_in_place(p: &Broadcast, act: Activation, acc: &mut [f32], b: &[f32]) {
    match act {
        Activation::Relu => arch::run(BinaryInPlaceCall { p, acc, b, f: |a, b| relu_f(a + b) }),
        Activation::Clip { min, max } => {
            arch::run(BinaryInPlaceCall { p, acc, b, f: move |a, b| clip_f(a + b, min, max) })
        }
        act => {
            add_in_place(p, acc, b);
            act.apply_in_place(acc);
        }
    }
}

/// Elementwise `y = a ^ b` (ONNX Pow, `powf`) with broadcasting (see
/// [`Broadcast`]).
pub fn pow(p: &Broadcast, a: &[f32], b: &[f32], y: &mut [f32]) {
    binary(p, a, b, y, libm::powf);
}

/// Elementwise `y = fmod(a, b)` (ONNX Mod with `fmod = 1`: the result has the
/// sign of `a`) with broadcasting (see [`Broadcast`]).
pub fn fmod(p: &Broadcast, a: &[f32], b: &[f32], y: &mut [f32]) {
    binary(p, a, b, y, libm::fmodf);
}

/// ONNX PRelu: `y = x` if `x >= 0`, else `slope * x`, with `slope`
/// broadcast to `x` (`p.a_strides` describe `x`, `p.b_strides` the slope).
pub fn prelu(p: &Broadcast, x: &[f32], slope: &[f32], y: &mut [f32]) {
    binary(p, x, slope, y, crate::activation::leaky_relu_f);
}
