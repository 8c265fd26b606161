//! The module of a model with a bounded dynamic dimension ([`DynamicProgram`]): the same header as
//! every model, `run` / `run_in` at the bound, `run_dyn` / `run_dyn_in` taking the length first,
//! and `input_lens` / `output_lens` / `input_dim` / `output_dim` to size buffers at a length. With
//! `io: arena`, `run_in(arena, n)` and the `Arena` accessors take the length instead
//! ([`arena_items`]).

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::fit::Fit;
use super::{Class, DynamicProgram};
use crate::codegen::{checks, docs, elem_type, io, lock_arena, module_header, run_body, CodegenOptions, Ports};
use crate::ir::Io;
use crate::liveness::Storage;

/// Emits the items of the model module of `d` (to be placed inside `mod name { ... }`).
pub fn emit(d: &DynamicProgram, o: &CodegenOptions) -> TokenStream {
    let p = &d.program;
    let g = &p.graph;
    let ports = Ports::of(g, &g.inputs, &g.outputs);
    let (inputs, outputs) = (&ports.inputs, &ports.outputs);
    let n = &d.len;
    // Checked mode's tables are per class (each has its own plan), inside the class's block.
    let header = module_header(p, &CodegenOptions { checked: false, ..o.clone() }, Some(&module_note(d)));
    let entry = if g.io == Io::Arena { "run_in" } else { "run_dyn" };
    let lengths = length_items(d, entry);
    let body = classes_body(d, o);
    let schedules: Vec<String> = d.classes.iter().map(|c| docs::schedule_doc(&c.program)).collect();
    if g.io == Io::Arena {
        let accessors = arena_items(d, inputs, outputs);
        let typed = ports.typed_entries(&lock_arena(p), io::copy_through_arena(&ports, &[], Some(quote!(MAX_LEN))));
        let run_in_doc = format!("{}\n\n{}", arena_run_note(d), schedules.join("\n\n"));
        return quote! {
            #header
            #lengths
            #accessors
            #typed

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
    let params = ports.params();
    let args = ports.args();
    let typed_slice = |id: &Ident, d: crate::tensor::DType, mutable: bool| {
        let ty = elem_type(d);
        if mutable {
            quote!(#id: &mut [#ty])
        } else {
            quote!(#id: &[#ty])
        }
    };
    let in_slices = inputs.iter().zip(&ports.in_dtypes).map(|(id, &d)| typed_slice(id, d, false));
    let out_slices = outputs.iter().zip(&ports.out_dtypes).map(|(id, &d)| typed_slice(id, d, true));
    let slices: Vec<TokenStream> = in_slices.chain(out_slices).collect();
    let typed = ports.typed_entries(&lock_arena(&d.program), quote!(run_in(arena, #(#args),*)));

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

    // `run_dyn` takes plain `f32` slices: only models whose ports are all `f32` have it.
    let run_dyn = ports.all_f32().then(|| {
        quote! {
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

        #run_dyn
        #typed

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

/// The `impl Arena` accessors and `shared()` of a model with a bounded dimension and `io: arena`:
/// each accessor takes the length `n` and returns the port's slice at it (its first
/// `input_lens(n)[i]` / `output_lens(n)[i]` values, in the slot the plan of `n`'s class gives
/// it), or `sramfit::Error::Shape` with `Port::Length` for a length out of range.
fn arena_items(d: &DynamicProgram, inputs: &[Ident], outputs: &[Ident]) -> TokenStream {
    let n = &d.len;
    let offsets = |ports: fn(&crate::ir::Graph) -> &[usize]| {
        class_match(d, |c| {
            let p = &c.program;
            let offs = ports(&p.graph).iter().map(|&t| match p.live.storage[t] {
                Storage::Arena(b) => (p.plan.offsets[b] + p.live.offset_in_buffer[t]) as usize,
                _ => unreachable!("liveness puts every input and output in the arena with Io::Arena"),
            });
            quote!([#(#offs),*])
        })
    };
    let (in_offsets, out_offsets) = (offsets(|g| g.inputs.as_slice()), offsets(|g| g.outputs.as_slice()));
    let (n_in, n_out) = (inputs.len(), outputs.len());
    let g = &d.program.graph;
    let tensor = |t: usize| {
        let x = &g.tensors[t];
        format!("`{}` {:?} {} at the largest length", x.name, x.shape, x.dtype)
    };
    // A slice of port `t` at the offset and length the expressions `off` and `len` evaluate to.
    let slice = |t: usize, base: TokenStream, off: TokenStream, len: TokenStream, mutable: bool| {
        let ty = elem_type(g.tensors[t].dtype);
        match mutable {
            true => quote!(unsafe { ::sramfit::__private::arena_slice_mut::<#ty>(#base, ARENA_BYTES, #off, #len) }),
            false => quote!(unsafe { ::sramfit::__private::arena_slice::<#ty>(#base, ARENA_BYTES, #off, #len) }),
        }
    };
    let input_fns = inputs.iter().zip(&g.inputs).enumerate().map(|(i, (id, &t))| {
        let ty = elem_type(g.tensors[t].dtype);
        let s = slice(t, quote!(self.0.as_mut_ptr()), quote!(off), quote!(len), true);
        let doc = format!(
            "Input {i}, {}, at length `n`: its `input_lens(n)[{i}]` values; write them before [`run_in`]`(arena, n)`. A run may overwrite it.",
            tensor(t)
        );
        quote! {
            #[doc = #doc]
            pub fn #id(&mut self, #n: usize) -> ::core::result::Result<&mut [#ty], ::sramfit::Error> {
                let (off, len) = (input_offsets(check_len(#n)?)[#i], input_lens(#n)[#i]);
                // SAFETY: at every length of its class the verified plan puts this input inside the
                // arena at a 16-byte-aligned offset; `&mut self` makes it the only slice alive.
                Ok(#s)
            }
        }
    });
    let output_fns = outputs.iter().zip(&g.outputs).enumerate().map(|(i, (id, &t))| {
        let ty = elem_type(g.tensors[t].dtype);
        let s = slice(t, quote!(self.0.as_ptr().cast_mut()), quote!(off), quote!(len), false);
        let doc = format!(
            "Output {i}, {}, at length `n`: its `output_lens(n)[{i}]` values; read them after [`run_in`]`(arena, n)`.",
            tensor(t)
        );
        quote! {
            #[doc = #doc]
            pub fn #id(&self, #n: usize) -> ::core::result::Result<&[#ty], ::sramfit::Error> {
                let (off, len) = (output_offsets(check_len(#n)?)[#i], output_lens(#n)[#i]);
                // SAFETY: inside the arena (verified plan of every length of the class), aligned;
                // `&self` rules out any mutable slice of the arena while this one lives.
                Ok(#s)
            }
        }
    });
    let shared = io::shared_fn();
    let all = |ports: &[usize], mutable: bool| {
        let slices = ports
            .iter()
            .enumerate()
            .map(|(i, &t)| (g.tensors[t].dtype, slice(t, quote!(base), quote!(offs[#i]), quote!(lens[#i]), mutable)));
        io::port_array(slices.collect(), mutable)
    };
    let ((in_elem, all_inputs), (out_elem, all_outputs)) = (all(&g.inputs, true), all(&g.outputs, false));
    quote! {
        /// `n` if it is in `MIN_LEN..=MAX_LEN`.
        fn check_len(#n: usize) -> ::core::result::Result<usize, ::sramfit::Error> {
            match (MIN_LEN..=MAX_LEN).contains(&#n) {
                true => Ok(#n),
                false => Err(::sramfit::Error::Shape { port: ::sramfit::Port::Length, expected: MAX_LEN, found: #n }),
            }
        }

        /// Byte offset of each input in the arena at length `n` (the plan of `n`'s class).
        #[allow(clippy::all)]
        const fn input_offsets(#n: usize) -> [usize; #n_in] {
            #in_offsets
        }

        /// Byte offset of each output in the arena at length `n` (the plan of `n`'s class).
        #[allow(clippy::all)]
        const fn output_offsets(#n: usize) -> [usize; #n_out] {
            #out_offsets
        }

        impl Arena {
            #(#input_fns)*
            #(#output_fns)*

            /// Every input at length `n`, in graph order: write them before [`run_in`].
            #[allow(unused_unsafe)]
            pub fn inputs_mut(&mut self, #n: usize) -> ::core::result::Result<[#in_elem; #n_in], ::sramfit::Error> {
                let (offs, lens) = (input_offsets(check_len(#n)?), input_lens(#n));
                let base = self.0.as_mut_ptr();
                // SAFETY: inside the arena and aligned (verified plan); pairwise disjoint, because the
                // inputs are all live at step 0 of every class's verified plan; `&mut self` rules out
                // any other slice of the arena.
                Ok([#(#all_inputs),*])
            }

            /// Every output at length `n`, in graph order: read them after [`run_in`].
            #[allow(unused_unsafe)]
            pub fn outputs(&self, #n: usize) -> ::core::result::Result<[#out_elem; #n_out], ::sramfit::Error> {
                let (offs, lens) = (output_offsets(check_len(#n)?), output_lens(#n));
                let base = self.0.as_ptr().cast_mut();
                // SAFETY: inside the arena and aligned (verified plan); `&self` rules out any
                // mutable slice of the arena while these live.
                Ok([#(#all_outputs),*])
            }
        }

        #shared
    }
}
