//! One kernel call per schedule step.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::params::{self, f32_expr, slice_expr};
use super::Access;
use crate::ir::{Binary, Node, Op, Reducer, Unary};

/// The statements of one step: slice bindings, then the kernel call. Empty for views.
pub fn step(node: &Node, step: usize, access: &Access) -> TokenStream {
    let out = &access.tensors[node.output];
    let read = |i: usize| access.read(node.inputs[i], step);
    let y = access.write(node.output, step);
    let in_place = access.p.live.in_place[step];
    match &node.op {
        Op::View => TokenStream::new(),
        Op::Conv(p) => {
            let (x, w) = (read(0), read(1));
            let bias = optional(node, 2, access, step);
            let scratch = match access.scratch(step) {
                Some(s) => s,
                None => quote!(&mut []),
            };
            let p = params::conv2d(p);
            quote!(::sramfit::kernels::conv2d(&#p, #x, #w, #bias, #y, #scratch);)
        }
        Op::ConvTranspose(p) => {
            let (x, w) = (read(0), read(1));
            let bias = optional(node, 2, access, step);
            let p = params::conv_transpose2d(p);
            quote!(::sramfit::kernels::conv_transpose2d(&#p, #x, #w, #bias, #y);)
        }
        Op::MatMul(p) => {
            let (a, b) = (read(0), read(1));
            let bias = optional(node, 2, access, step);
            let p = params::matmul(p);
            quote!(::sramfit::kernels::matmul(&#p, #a, #b, #bias, #y);)
        }
        Op::Unary(u) => {
            let (name, args) = unary_kernel(*u);
            match in_place {
                // The output's slice is the input's bytes (verified in-place step): one `&mut` slice.
                Some(_) => {
                    let f = format_ident!("{name}_in_place");
                    quote!(::sramfit::kernels::#f(#y #(, #args)*);)
                }
                None => {
                    let (f, x) = (format_ident!("{name}"), read(0));
                    quote!(::sramfit::kernels::#f(#x, #y #(, #args)*);)
                }
            }
        }
        Op::Binary { kind, a_strides, b_strides } => {
            let name = binary_name(*kind);
            let shape = slice_expr(&out.shape);
            match in_place {
                // `acc` is the overwritten input (the output's slice), the other operand is read
                // through its own strides (the in-place kernels ignore `a_strides`).
                Some(k) => {
                    let f = format_ident!("{name}_in_place");
                    let (other, strides) = if k == 0 { (read(1), b_strides) } else { (read(0), a_strides) };
                    let (sa, so) = (slice_expr(a_strides), slice_expr(strides));
                    quote!(::sramfit::kernels::#f(
                        &::sramfit::kernels::Broadcast { out_shape: #shape, a_strides: #sa, b_strides: #so },
                        #y, #other);)
                }
                None => {
                    let f = format_ident!("{name}");
                    let (sa, sb) = (slice_expr(a_strides), slice_expr(b_strides));
                    let (a, b) = (read(0), read(1));
                    quote!(::sramfit::kernels::#f(
                        &::sramfit::kernels::Broadcast { out_shape: #shape, a_strides: #sa, b_strides: #sb },
                        #a, #b, #y);)
                }
            }
        }
        Op::MaxPool(p) => {
            let (p, x) = (params::pool2d(p), read(0));
            quote!(::sramfit::kernels::max_pool2d(&#p, #x, #y);)
        }
        Op::AvgPool(p) => {
            let (p, x) = (params::pool2d(p), read(0));
            quote!(::sramfit::kernels::avg_pool2d(&#p, #x, #y);)
        }
        Op::Reduce { kind, out_in_strides, red_shape, red_strides } => {
            let f = format_ident!("{}", reduce_name(*kind));
            let (shape, os, rs, rst) =
                (slice_expr(&out.shape), slice_expr(out_in_strides), slice_expr(red_shape), slice_expr(red_strides));
            let x = read(0);
            quote!(::sramfit::kernels::#f(
                &::sramfit::kernels::Reduce { out_shape: #shape, out_in_strides: #os, red_shape: #rs, red_strides: #rst },
                #x, #y);)
        }
        Op::Softmax { log, outer, axis_len, inner } => {
            let f = if *log { quote!(log_softmax) } else { quote!(softmax) };
            let x = read(0);
            quote!(::sramfit::kernels::#f(#x, #y, #outer, #axis_len, #inner);)
        }
        Op::RmsNorm { outer, axis_len, inner, eps } => {
            let (x, eps) = (read(0), f32_expr(*eps));
            quote!(::sramfit::kernels::rms_norm(#x, #y, #outer, #axis_len, #inner, #eps);)
        }
        Op::Lrn { batch, channels, inner, size, alpha, beta, bias } => {
            let x = read(0);
            let (alpha, beta, bias) = (f32_expr(*alpha), f32_expr(*beta), f32_expr(*bias));
            quote!(::sramfit::kernels::lrn(#x, #y, #batch, #channels, #inner, #size, #alpha, #beta, #bias);)
        }
        Op::Select { cmp, strides } => {
            let cmp = params::cmp(*cmp);
            let shape = slice_expr(&out.shape);
            let [sa, sb, st, sf] = strides.each_ref().map(|s| slice_expr(s));
            let (a, b, t, f) = (read(0), read(1), read(2), read(3));
            quote!(::sramfit::kernels::select_cmp(
                &::sramfit::kernels::Select { cmp: #cmp, out_shape: #shape, a_strides: #sa, b_strides: #sb, t_strides: #st, f_strides: #sf },
                #a, #b, #t, #f, #y);)
        }
        Op::Resize { params: p, nearest } => {
            let (p, x) = (params::resize(p), read(0));
            match nearest {
                Some(m) => {
                    let m = params::nearest_mode(*m);
                    quote!(::sramfit::kernels::resize_nearest(&#p, #m, #x, #y);)
                }
                None => quote!(::sramfit::kernels::resize_linear(&#p, #x, #y);),
            }
        }
        Op::Copy(copies) => {
            let calls = copies.iter().map(|c| {
                let x = read(c.input);
                let y = access.write(node.output, step);
                let (shape, so, ss, d_o, ds) = (
                    slice_expr(&c.shape),
                    c.src_offset,
                    slice_expr(&c.src_strides),
                    c.dst_offset,
                    slice_expr(&c.dst_strides),
                );
                quote!(::sramfit::kernels::copy_strided(
                    &::sramfit::kernels::Strided { shape: #shape, src_offset: #so, src_strides: #ss, dst_offset: #d_o, dst_strides: #ds },
                    #x, #y);)
            });
            quote!(#(#calls)*)
        }
        Op::Pad { pads_begin, mode } => {
            let in_shape = &access.tensors[node.inputs[0]].shape;
            let (is, pb, os, mode) =
                (slice_expr(in_shape), slice_expr(pads_begin), slice_expr(&out.shape), params::pad_mode(*mode));
            let x = read(0);
            quote!(::sramfit::kernels::pad(
                &::sramfit::kernels::Pad { in_shape: #is, pads_begin: #pb, out_shape: #os, mode: #mode },
                #x, #y);)
        }
    }
}

/// `Some(slice)` for input `i` when the node has it, else `None`.
fn optional(node: &Node, i: usize, access: &Access, step: usize) -> TokenStream {
    match node.inputs.get(i) {
        Some(&t) => {
            let s = access.read(t, step);
            quote!(Some(#s))
        }
        None => quote!(None),
    }
}

/// The kernel of an elementwise function and its constant arguments after the slices.
fn unary_kernel(u: Unary) -> (&'static str, Vec<TokenStream>) {
    let name = match u {
        Unary::Relu => "relu",
        Unary::Sigmoid => "sigmoid",
        Unary::Tanh => "tanh",
        Unary::Exp => "exp",
        Unary::Ln => "ln",
        Unary::Sqrt => "sqrt",
        Unary::Rsqrt => "rsqrt",
        Unary::Reciprocal => "reciprocal",
        Unary::Abs => "abs",
        Unary::Neg => "neg",
        Unary::Square => "square",
        Unary::Erf => "erf",
        Unary::Floor => "floor",
        Unary::Ceil => "ceil",
        Unary::Round => "round",
        Unary::Sin => "sin",
        Unary::Cos => "cos",
        Unary::Softplus => "softplus",
        Unary::Softsign => "softsign",
        Unary::HardSwish => "hard_swish",
        Unary::Silu => "silu",
        Unary::Gelu => "gelu",
        Unary::Clip { min, max } => return ("clip", vec![f32_expr(min), f32_expr(max)]),
        Unary::LeakyRelu { alpha } => return ("leaky_relu", vec![f32_expr(alpha)]),
        Unary::PowScalar { exponent } => return ("pow_scalar", vec![f32_expr(exponent)]),
    };
    (name, Vec::new())
}

fn binary_name(b: Binary) -> &'static str {
    match b {
        Binary::Add => "add",
        Binary::Sub => "sub",
        Binary::Mul => "mul",
        Binary::Div => "div",
        Binary::Max => "max",
        Binary::Min => "min",
        Binary::Pow => "pow",
    }
}

fn reduce_name(r: Reducer) -> &'static str {
    match r {
        Reducer::Sum => "reduce_sum",
        Reducer::Mean => "reduce_mean",
        Reducer::Max => "reduce_max",
        Reducer::Min => "reduce_min",
        Reducer::Prod => "reduce_prod",
        Reducer::SumSquare => "reduce_sum_square",
        Reducer::MeanSquare => "reduce_mean_square",
    }
}
