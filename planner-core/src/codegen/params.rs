//! Kernel parameter structs of `runtime-min` written back as Rust expressions.
//!
//! Each function destructures its struct completely, so adding a field to a kernel's parameters
//! is a compile error here until the generator writes it too.

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

/// A [`rt::Conv2d`] expression.
pub fn conv2d(p: &rt::Conv2d) -> TokenStream {
    let rt::Conv2d {
        batch,
        in_channels,
        in_h,
        in_w,
        out_channels,
        out_h,
        out_w,
        kernel_h,
        kernel_w,
        stride_h,
        stride_w,
        dilation_h,
        dilation_w,
        pad_top,
        pad_left,
        groups,
        act,
        weights,
    } = *p;
    let act = activation(act);
    let weights = match weights {
        rt::ConvWeights::Oihw => quote!(::sramfit::kernels::ConvWeights::Oihw),
        rt::ConvWeights::KMajor => quote!(::sramfit::kernels::ConvWeights::KMajor),
    };
    quote!(::sramfit::kernels::Conv2d {
        batch: #batch, in_channels: #in_channels, in_h: #in_h, in_w: #in_w,
        out_channels: #out_channels, out_h: #out_h, out_w: #out_w,
        kernel_h: #kernel_h, kernel_w: #kernel_w, stride_h: #stride_h, stride_w: #stride_w,
        dilation_h: #dilation_h, dilation_w: #dilation_w, pad_top: #pad_top, pad_left: #pad_left,
        groups: #groups, act: #act, weights: #weights,
    })
}

/// A [`rt::ConvTranspose2d`] expression.
pub fn conv_transpose2d(p: &rt::ConvTranspose2d) -> TokenStream {
    let rt::ConvTranspose2d {
        batch,
        in_channels,
        in_h,
        in_w,
        out_channels,
        out_h,
        out_w,
        kernel_h,
        kernel_w,
        stride_h,
        stride_w,
        dilation_h,
        dilation_w,
        pad_top,
        pad_left,
        groups,
    } = *p;
    quote!(::sramfit::kernels::ConvTranspose2d {
        batch: #batch, in_channels: #in_channels, in_h: #in_h, in_w: #in_w,
        out_channels: #out_channels, out_h: #out_h, out_w: #out_w,
        kernel_h: #kernel_h, kernel_w: #kernel_w, stride_h: #stride_h, stride_w: #stride_w,
        dilation_h: #dilation_h, dilation_w: #dilation_w, pad_top: #pad_top, pad_left: #pad_left,
        groups: #groups,
    })
}

/// A [`rt::Cmp`] expression.
pub fn cmp(c: rt::Cmp) -> TokenStream {
    match c {
        rt::Cmp::Lt => quote!(::sramfit::kernels::Cmp::Lt),
        rt::Cmp::Le => quote!(::sramfit::kernels::Cmp::Le),
        rt::Cmp::Gt => quote!(::sramfit::kernels::Cmp::Gt),
        rt::Cmp::Ge => quote!(::sramfit::kernels::Cmp::Ge),
        rt::Cmp::Eq => quote!(::sramfit::kernels::Cmp::Eq),
        rt::Cmp::Ne => quote!(::sramfit::kernels::Cmp::Ne),
    }
}

/// A [`rt::MatMul`] expression.
pub fn matmul(p: &rt::MatMul) -> TokenStream {
    let rt::MatMul {
        batch,
        a_batch_strides,
        b_batch_strides,
        c_batch_strides,
        m,
        n,
        k,
        a_row_stride,
        a_col_stride,
        b_row_stride,
        b_col_stride,
        c_row_stride,
        alpha,
        act,
    } = *p;
    let (alpha, act) = (f32_expr(alpha), activation(act));
    quote!(::sramfit::kernels::MatMul {
        batch: [#(#batch),*], a_batch_strides: [#(#a_batch_strides),*],
        b_batch_strides: [#(#b_batch_strides),*], c_batch_strides: [#(#c_batch_strides),*],
        m: #m, n: #n, k: #k, a_row_stride: #a_row_stride, a_col_stride: #a_col_stride,
        b_row_stride: #b_row_stride, b_col_stride: #b_col_stride, c_row_stride: #c_row_stride,
        alpha: #alpha, act: #act,
    })
}

/// A [`rt::Pool2d`] expression.
pub fn pool2d(p: &rt::Pool2d) -> TokenStream {
    let rt::Pool2d {
        batch,
        channels,
        in_d,
        out_d,
        kernel_d,
        stride_d,
        dilation_d,
        pad_front,
        pad_back,
        in_h,
        in_w,
        out_h,
        out_w,
        kernel_h,
        kernel_w,
        stride_h,
        stride_w,
        dilation_h,
        dilation_w,
        pad_top,
        pad_left,
        pad_bottom,
        pad_right,
        count_include_pad,
    } = *p;
    quote!(::sramfit::kernels::Pool2d {
        batch: #batch, channels: #channels, in_d: #in_d, out_d: #out_d, kernel_d: #kernel_d,
        stride_d: #stride_d, dilation_d: #dilation_d, pad_front: #pad_front, pad_back: #pad_back, in_h: #in_h, in_w: #in_w, out_h: #out_h, out_w: #out_w,
        kernel_h: #kernel_h, kernel_w: #kernel_w, stride_h: #stride_h, stride_w: #stride_w,
        dilation_h: #dilation_h, dilation_w: #dilation_w, pad_top: #pad_top, pad_left: #pad_left,
        pad_bottom: #pad_bottom, pad_right: #pad_right, count_include_pad: #count_include_pad,
    })
}

/// A [`rt::PadMode`] expression.
pub fn pad_mode(m: rt::PadMode) -> TokenStream {
    match m {
        rt::PadMode::Constant(v) => {
            let v = f32_expr(v);
            quote!(::sramfit::kernels::PadMode::Constant(#v))
        }
        rt::PadMode::Reflect => quote!(::sramfit::kernels::PadMode::Reflect),
        rt::PadMode::Edge => quote!(::sramfit::kernels::PadMode::Edge),
        rt::PadMode::Wrap => quote!(::sramfit::kernels::PadMode::Wrap),
    }
}

/// A [`rt::Resize`] expression.
pub fn resize(p: &rt::Resize) -> TokenStream {
    let rt::Resize { batch_channels, in_h, in_w, out_h, out_w, scale_h, scale_w, coord } = *p;
    let (scale_h, scale_w) = (f32_expr(scale_h), f32_expr(scale_w));
    let coord = match coord {
        rt::CoordMode::HalfPixel => quote!(HalfPixel),
        rt::CoordMode::HalfPixelSymmetric => quote!(HalfPixelSymmetric),
        rt::CoordMode::PytorchHalfPixel => quote!(PytorchHalfPixel),
        rt::CoordMode::AlignCorners => quote!(AlignCorners),
        rt::CoordMode::Asymmetric => quote!(Asymmetric),
        rt::CoordMode::TfHalfPixelForNn => quote!(TfHalfPixelForNn),
    };
    quote!(::sramfit::kernels::Resize {
        batch_channels: #batch_channels, in_h: #in_h, in_w: #in_w, out_h: #out_h, out_w: #out_w,
        scale_h: #scale_h, scale_w: #scale_w, coord: ::sramfit::kernels::CoordMode::#coord,
    })
}

/// A [`rt::NearestMode`] expression.
pub fn nearest_mode(m: rt::NearestMode) -> TokenStream {
    match m {
        rt::NearestMode::RoundPreferFloor => quote!(::sramfit::kernels::NearestMode::RoundPreferFloor),
        rt::NearestMode::RoundPreferCeil => quote!(::sramfit::kernels::NearestMode::RoundPreferCeil),
        rt::NearestMode::Floor => quote!(::sramfit::kernels::NearestMode::Floor),
        rt::NearestMode::Ceil => quote!(::sramfit::kernels::NearestMode::Ceil),
    }
}
