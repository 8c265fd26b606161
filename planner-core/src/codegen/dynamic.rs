//! The module of a model with a bounded dynamic dimension ([`DynamicProgram`]): the same header as
//! every model, `run` / `run_in` at the bound, `run_dyn` / `run_dyn_in` taking the length first,
//! and `input_lens` / `output_lens` / `input_dim` / `output_dim` to size buffers at a length. With
//! `io: arena`, `run_in(arena, n)` and the `Arena` accessors take the length instead
//! ([`super::io::dynamic_items`]).

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::{checks, docs, io, module_header, port_idents, run_body, CodegenOptions};
use crate::dynamic::fit::Fit;
use crate::dynamic::{Class, DynamicProgram};
use crate::ir::Io;

/// Emits the items of the model module of `d` (to be placed inside `mod name { ... }`).
pub fn emit(d: &DynamicProgram, o: &CodegenOptions) -> TokenStream {
    let p = &d.program;
    let g = &p.graph;
    let (inputs, outputs) = port_idents(g);
    let (max, n) = (d.bound.max, &d.len);
    // Checked mode's tables are per class (each has its own plan), inside the class's block.
    let header = module_header(p, &CodegenOptions { checked: false, ..o.clone() }, Some(&module_note(d)));
    let entry = if g.io == Io::Arena { "run_in" } else { "run_dyn" };
    let lengths = length_items(d, entry);
    let body = classes_body(d, o);
    let schedules: Vec<String> = d.classes.iter().map(|c| docs::schedule_doc(&c.program)).collect();
    if g.io == Io::Arena {
        let accessors = io::dynamic_items(d, &inputs, &outputs);
        let run_in_doc = format!("{}\n\n{}", arena_run_note(d), schedules.join("\n\n"));
        return quote! {
            #header
            #lengths
            #accessors

            #[doc = #run_in_doc]
            pub fn run_in(arena: &mut Arena, #n: usize) -> ::core::result::Result<(), ::sramfit::Error> {
                if !(MIN_LEN..=MAX_LEN).contains(&#n) {
                    return Err(::sramfit::Error::Shape { port: ::sramfit::Port::Length, expected: MAX_LEN, found: #n });
                }
                run_len(arena, #n)
            }

            /// Runs the model at length `n`, which [`run_in`] checked to be in `MIN_LEN..=MAX_LEN`.
            #[allow(unused_doc_comments, unused_unsafe, unused_variables, unused_parens, clippy::all)]
            fn run_len(arena: &mut Arena, #n: usize) -> ::core::result::Result<(), ::sramfit::Error> {
                #body
            }
        };
    }
    let run_in_doc = format!("{}\n\n{}", run_len_note(d), schedules.join("\n\n"));
    let (n_in, n_out) = (inputs.len(), outputs.len());
    let at_max = |f: &Fit| f.at(max) as usize;
    let in_max: Vec<usize> = d.input_lens.iter().map(at_max).collect();
    let out_max: Vec<usize> = d.output_lens.iter().map(at_max).collect();
    let in_params = inputs.iter().zip(&in_max).map(|(id, k)| quote!(#id: &[f32; #k]));
    let out_params = outputs.iter().zip(&out_max).map(|(id, k)| quote!(#id: &mut [f32; #k]));
    let params: Vec<TokenStream> = in_params.chain(out_params).collect();
    let args: Vec<&Ident> = inputs.iter().chain(&outputs).collect();
    let in_slices = inputs.iter().map(|id| quote!(#id: &[f32]));
    let out_slices = outputs.iter().map(|id| quote!(#id: &mut [f32]));
    let slices: Vec<TokenStream> = in_slices.chain(out_slices).collect();

    let dyn_in: Vec<Ident> = (0..n_in).map(|i| format_ident!("__in_{i}")).collect();
    let dyn_out: Vec<Ident> = (0..n_out).map(|i| format_ident!("__out_{i}")).collect();
    let in_checks = dyn_in.iter().enumerate().map(|(i, id)| {
        quote! {
            if #id.len() != __in_lens[#i] {
                return Err(::sramfit::Error::Shape { port: ::sramfit::Port::Input(#i), expected: __in_lens[#i], found: #id.len() });
            }
        }
    });
    let out_checks = dyn_out.iter().enumerate().map(|(i, id)| {
        quote! {
            if #id.len() != __out_lens[#i] {
                return Err(::sramfit::Error::Shape { port: ::sramfit::Port::Output(#i), expected: __out_lens[#i], found: #id.len() });
            }
        }
    });

    quote! {
        #header
        #lengths

        /// Runs the model at the largest length [`MAX_LEN`] in the module's shared arena: inputs,
        /// then outputs, in graph order, as flat row-major arrays.
        ///
        /// Returns [`Error::Busy`](::sramfit::Error::Busy) if another call is using the shared
        /// arena (another thread, or an interrupt that preempted a call); nothing is written then.
        pub fn run(#(#params),*) -> ::core::result::Result<(), ::sramfit::Error> {
            let mut arena = SHARED.try_lock()?;
            run_in(&mut arena, #(#args),*)
        }

        /// Runs the model at length `n` (`MIN_LEN..=MAX_LEN`) in the module's shared arena, on
        /// inputs of [`input_lens`]`(n)` values into outputs of [`output_lens`]`(n)` values.
        ///
        /// A length out of range ([`Port::Length`](::sramfit::Port::Length)), a wrong number of
        /// slices or a slice of another length is [`Error::Shape`](::sramfit::Error::Shape),
        /// returned before the arena is touched.
        pub fn run_dyn(#n: usize, inputs: &[&[f32]], outputs: &mut [&mut [f32]]) -> ::core::result::Result<(), ::sramfit::Error> {
            let mut arena = SHARED.try_lock()?;
            run_dyn_in(&mut arena, #n, inputs, outputs)
        }

        /// Like [`run_dyn`], in a caller-owned arena.
        pub fn run_dyn_in(arena: &mut Arena, #n: usize, inputs: &[&[f32]], outputs: &mut [&mut [f32]]) -> ::core::result::Result<(), ::sramfit::Error> {
            if !(MIN_LEN..=MAX_LEN).contains(&#n) {
                return Err(::sramfit::Error::Shape { port: ::sramfit::Port::Length, expected: MAX_LEN, found: #n });
            }
            let [#(#dyn_in),*] = inputs else {
                return Err(::sramfit::Error::Shape { port: ::sramfit::Port::InputCount, expected: #n_in, found: inputs.len() });
            };
            let __outputs = outputs.len();
            let [#(#dyn_out),*] = outputs else {
                return Err(::sramfit::Error::Shape { port: ::sramfit::Port::OutputCount, expected: #n_out, found: __outputs });
            };
            let (__in_lens, __out_lens) = (input_lens(#n), output_lens(#n));
            #(#in_checks)*
            #(#out_checks)*
            run_len(arena, #n, #(#dyn_in,)* #(#dyn_out),*)
        }

        #[doc = #run_in_doc]
        pub fn run_in(arena: &mut Arena, #(#params),*) -> ::core::result::Result<(), ::sramfit::Error> {
            run_len(arena, MAX_LEN, #(#args),*)
        }

        /// Runs the model at length `n`, which its callers checked to be in `MIN_LEN..=MAX_LEN`
        /// with every slice of its length at `n`.
        #[allow(unused_doc_comments, unused_unsafe, unused_variables, unused_parens, clippy::all)]
        fn run_len(arena: &mut Arena, #n: usize, #(#slices),*) -> ::core::result::Result<(), ::sramfit::Error> {
            #body
        }
    }
}

/// `DYNAMIC_DIM`, `MIN_LEN`, `MAX_LEN` and the `const fn`s giving the ports' extents at a length.
/// `entry` is the module's length-taking entry point, for the docs.
fn length_items(d: &DynamicProgram, entry: &str) -> TokenStream {
    let (symbol, min, max, n) = (&d.bound.symbol, d.bound.min, d.bound.max, &d.len);
    let (n_in, n_out) = (d.input_lens.len(), d.output_lens.len());
    let in_lens = d.input_lens.iter().map(|f| f.to_tokens(n));
    let out_lens = d.output_lens.iter().map(|f| f.to_tokens(n));
    let input_dim = dim_fn(&d.input_shapes, &format_ident!("input"), n);
    let output_dim = dim_fn(&d.output_shapes, &format_ident!("output"), n);
    let dim_doc = format!("The name of the bounded dimension: `{symbol}`.");
    let min_doc = format!("The smallest length [`{entry}`] accepts for [`DYNAMIC_DIM`].");
    let max_doc = format!(
        "The largest length [`{entry}`] accepts for [`DYNAMIC_DIM`]: the arena is planned for it,\nand [`INPUT_SHAPES`] / [`OUTPUT_SHAPES`] are the shapes at it."
    );
    let out_lens_doc = format!(
        "Element count of each graph output at length `n` (graph order): how many values\n[`{entry}`] writes. Meaningful for `MIN_LEN <= n <= MAX_LEN`."
    );
    let output_dim_doc = format!(
        "Extent of axis `axis` of graph output `output` at length `n` (0 when there is no\nsuch axis): the run-time shape of what [`{entry}`] writes. Meaningful for\n`MIN_LEN <= n <= MAX_LEN`."
    );
    quote! {
        #[doc = #dim_doc]
        pub const DYNAMIC_DIM: &str = #symbol;
        #[doc = #min_doc]
        pub const MIN_LEN: usize = #min;
        #[doc = #max_doc]
        pub const MAX_LEN: usize = #max;

        /// Element count of each graph input at length `n` (graph order). Meaningful for
        /// `MIN_LEN <= n <= MAX_LEN`.
        // Fitted expressions, written as found (e.g. `(n + 1) / 2`, not `n.div_ceil(2)`).
        #[allow(clippy::all, unused_parens)]
        pub const fn input_lens(#n: usize) -> [usize; #n_in] {
            [#(#in_lens),*]
        }

        #[doc = #out_lens_doc]
        // Fitted expressions, written as found (e.g. `(n + 1) / 2`, not `n.div_ceil(2)`).
        #[allow(clippy::all, unused_parens)]
        pub const fn output_lens(#n: usize) -> [usize; #n_out] {
            [#(#out_lens),*]
        }

        /// Extent of axis `axis` of graph input `input` at length `n` (0 when there is no such
        /// axis). Meaningful for `MIN_LEN <= n <= MAX_LEN`.
        // Fitted expressions, written as found (e.g. `(n + 1) / 2`, not `n.div_ceil(2)`).
        #[allow(clippy::all, unused_parens)]
        pub const fn input_dim(input: usize, axis: usize, #n: usize) -> usize {
            #input_dim
        }

        #[doc = #output_dim_doc]
        // Fitted expressions, written as found (e.g. `(n + 1) / 2`, not `n.div_ceil(2)`).
        #[allow(clippy::all, unused_parens)]
        pub const fn output_dim(output: usize, axis: usize, #n: usize) -> usize {
            #output_dim
        }

    }
}

/// `match n { lens of a class => value, .. }` over the classes of `d`, the class of the largest
/// length last, as `_` (just the value when there is one class).
pub(crate) fn class_match(d: &DynamicProgram, value: impl Fn(&Class) -> TokenStream) -> TokenStream {
    let [first, rest @ ..] = d.classes.as_slice() else { return TokenStream::new() };
    if rest.is_empty() {
        return value(first);
    }
    let n = &d.len;
    let arms = rest.iter().map(|c| {
        let pattern = ranges(&c.lens).into_iter().map(|(a, b)| if a == b { quote!(#a) } else { quote!(#a..=#b) });
        let v = value(c);
        quote!(#(#pattern)|* => #v,)
    });
    let last = value(first);
    quote!(match #n { #(#arms)* _ => #last })
}

/// The body of `run_len`: the one class's steps, or a `match` on the length over the classes
/// (the class of the largest length last, as `_`).
fn classes_body(d: &DynamicProgram, o: &CodegenOptions) -> TokenStream {
    let block = |c: &Class| {
        let checked = o.checked && c.program.live.problem.buffers.iter().any(|b| b.size > 0);
        let items = if checked { checks::items(&c.program) } else { TokenStream::new() };
        let body = run_body(&c.program, o, c.steps.clone());
        quote!({ #items #body })
    };
    match d.classes.is_empty() {
        true => quote!(Ok(())),
        false => class_match(d, block),
    }
}

/// `lens` (increasing) as maximal runs of consecutive values.
fn ranges(lens: &[usize]) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for &n in lens {
        match out.last_mut() {
            Some((_, end)) if *end + 1 == n => *end = n,
            _ => out.push((n, n)),
        }
    }
    out
}

/// A `match (port, axis)` over the fitted dimensions.
fn dim_fn(shapes: &[Vec<Fit>], port: &Ident, n: &Ident) -> TokenStream {
    let arms = shapes.iter().enumerate().flat_map(|(port, dims)| {
        dims.iter().enumerate().map(move |(axis, f)| {
            let e = f.to_tokens(n);
            quote!((#port, #axis) => #e,)
        })
    });
    quote!(match (#port, axis) { #(#arms)* _ => 0 })
}

/// The module docs' paragraph on the bounded dimension.
fn module_note(d: &DynamicProgram) -> String {
    let b = &d.bound;
    let classes = if d.classes.len() == 1 {
        String::new()
    } else {
        let list: Vec<String> = d
            .classes
            .iter()
            .map(|c| {
                let r: Vec<String> = ranges(&c.lens)
                    .iter()
                    .map(|(a, z)| if a == z { a.to_string() } else { format!("{a}..={z}") })
                    .collect();
                format!("{} (arena {} bytes)", r.join(", "), c.program.plan.arena_bytes)
            })
            .collect();
        format!(
            " The model's graph has another structure at some lengths (tract simplifies it there), so the \
             lengths form {} classes, each with its own plan (made at its largest length, verified at all \
             of them) and code: {}; `ARENA_BYTES` is the largest.",
            d.classes.len(),
            list.join("; ")
        )
    };
    format!(
        "\n\n**Bounded dimension `{}`**: any length from {} to {} at run time ([`run_dyn`]); the arena \
         is planned for {} and reused at every length. The code of every step was generated at each \
         of the {} lengths and is the same at all of them except integer shape parameters, which are \
         written below as expressions of `{}` that equal them at every length: this exhaustive check \
         is the proof that the code run at a length is the code sramfit generates for that exact \
         length. At every length each arena buffer has the same lifetime and fits its slot, and the \
         plan passed the verifier.{}",
        b.symbol,
        b.min,
        b.max,
        b.max,
        b.max - b.min + 1,
        d.len,
        classes
    )
}

/// The paragraph before the schedule in `run_in`'s docs.
fn run_len_note(d: &DynamicProgram) -> String {
    format!(
        "Like [`run`] (at the largest length `{} = {}`), in a caller-owned arena. The schedule below \
         (one per class of lengths) shows offsets and sizes at each class's largest length; at a \
         smaller length each tensor uses the start of its slot.",
        d.bound.symbol, d.bound.max
    )
}

/// The paragraph before the schedule in `run_in`'s docs, with `io: arena`.
fn arena_run_note(d: &DynamicProgram) -> String {
    format!(
        "Runs the model at length `{len}` (`MIN_LEN..=MAX_LEN`, else [`Error::Shape`](::sramfit::Error::Shape) \
         with [`Port::Length`](::sramfit::Port::Length) before the arena is touched) on the inputs written \
         through the `Arena` accessors at that length; read the outputs through them afterwards, at the \
         same length. The schedule below (one per class of lengths) shows offsets and sizes at each \
         class's largest length; at a smaller length each tensor uses the start of its slot.",
        len = d.len
    )
}
