//! Values written back as Rust expressions in generated code (shared by the operator modules,
//! whose parameter structs destructure completely, so adding a field to a kernel's parameters is a
//! compile error until the generator writes it too).

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min as rt;

/// An `f32` as a Rust expression (non-finite values as `f32` constants).
pub fn f32_expr(v: f32) -> TokenStream {
    if v.is_nan() {
        quote!(f32::NAN)
    } else if v == f32::INFINITY {
        quote!(f32::INFINITY)
    } else if v == f32::NEG_INFINITY {
        quote!(f32::NEG_INFINITY)
    } else {
        let lit = proc_macro2::Literal::f32_suffixed(v);
        quote!(#lit)
    }
}

/// `&[a, b, ...]` for a slice of integers.
pub fn slice_expr<T: quote::ToTokens>(v: &[T]) -> TokenStream {
    quote!(&[#(#v),*])
}

/// An [`rt::Activation`] expression.
pub fn activation(a: rt::Activation) -> TokenStream {
    use rt::Activation::*;
    match a {
        None => quote!(::sramfit::kernels::Activation::None),
        Relu => quote!(::sramfit::kernels::Activation::Relu),
        Clip { min, max } => {
            let (min, max) = (f32_expr(min), f32_expr(max));
            quote!(::sramfit::kernels::Activation::Clip { min: #min, max: #max })
        }
        LeakyRelu { alpha } => {
            let alpha = f32_expr(alpha);
            quote!(::sramfit::kernels::Activation::LeakyRelu { alpha: #alpha })
        }
        HardSwish => quote!(::sramfit::kernels::Activation::HardSwish),
        Sigmoid => quote!(::sramfit::kernels::Activation::Sigmoid),
        Tanh => quote!(::sramfit::kernels::Activation::Tanh),
    }
}
