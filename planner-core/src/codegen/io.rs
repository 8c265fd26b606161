//! The entry points of a model whose inputs and outputs live in the arena ([`Io::Arena`]): accessors
//! on `Arena` for each input (write before the run) and output (read after it), `run_in(&mut Arena)`,
//! and `shared()` for the module's static arena.
//!
//! [`Io::Arena`]: crate::ir::Io::Arena

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use crate::compile::Program;
use crate::liveness::Storage;

/// Identifiers the accessors must not take (the `Arena` methods that exist anyway).
pub const RESERVED: &[&str] = &["new", "default", "inputs_mut", "outputs"];

/// The `impl Arena` accessors and `shared()`.
pub fn items(p: &Program, inputs: &[Ident], outputs: &[Ident]) -> TokenStream {
    let g = &p.graph;
    let place = |t: usize| {
        let Storage::Arena(b) = p.live.storage[t] else {
            unreachable!("liveness puts every input and output in the arena with Io::Arena")
        };
        ((p.plan.offsets[b] + p.live.offset_in_buffer[t]) as usize, g.tensors[t].len())
    };
    let describe = |t: usize| {
        let tensor = &g.tensors[t];
        let (off, len) = place(t);
        format!("`{}` {:?} f32, arena bytes {off}..{}", tensor.name, tensor.shape, off + 4 * len)
    };
    let input_fns = inputs.iter().zip(&g.inputs).map(|(id, &t)| {
        let (off, len) = place(t);
        let doc = format!(
            "Input {}: write it before [`run_in`]. A run may overwrite it (the plan reuses its bytes once its last reader ran).",
            describe(t)
        );
        quote! {
            #[doc = #doc]
            pub fn #id(&mut self) -> &mut [f32; #len] {
                // SAFETY: the verified plan puts this input inside the arena at a 16-byte-aligned
                // offset; `&mut self` makes it the only slice of the arena alive.
                let s = unsafe { ::sramfit::__private::arena_f32_mut(self.0.as_mut_ptr(), ARENA_BYTES, #off, #len) };
                match s.try_into() { Ok(a) => a, Err(_) => unreachable!() }
            }
        }
    });
    let output_fns = outputs.iter().zip(&g.outputs).map(|(id, &t)| {
        let (off, len) = place(t);
        let doc = format!("Output {}: read it after [`run_in`] (no step writes it after its producer).", describe(t));
        quote! {
            #[doc = #doc]
            pub fn #id(&self) -> &[f32; #len] {
                // SAFETY: inside the arena (verified plan), aligned; `&self` rules out any mutable
                // slice of the arena while this one lives.
                let s = unsafe { ::sramfit::__private::arena_f32(self.0.as_ptr().cast_mut(), ARENA_BYTES, #off, #len) };
                match s.try_into() { Ok(a) => a, Err(_) => unreachable!() }
            }
        }
    });
    let (n_in, n_out) = (g.inputs.len(), g.outputs.len());
    let shared = shared_fn();
    let all_inputs = g.inputs.iter().map(|&t| {
        let (off, len) = place(t);
        quote!(unsafe { ::sramfit::__private::arena_f32_mut(base, ARENA_BYTES, #off, #len) })
    });
    let all_outputs = g.outputs.iter().map(|&t| {
        let (off, len) = place(t);
        quote!(unsafe { ::sramfit::__private::arena_f32(base, ARENA_BYTES, #off, #len) })
    });
    quote! {
        impl Arena {
            #(#input_fns)*
            #(#output_fns)*

            /// Every input, in graph order: write them before [`run_in`].
            #[allow(unused_unsafe)]
            pub fn inputs_mut(&mut self) -> [&mut [f32]; #n_in] {
                let base = self.0.as_mut_ptr();
                // SAFETY: inside the arena and aligned (verified plan); pairwise disjoint, because the
                // inputs are all live at step 0 and the verified plan gives live buffers disjoint
                // bytes; `&mut self` rules out any other slice of the arena.
                [#(#all_inputs),*]
            }

            /// Every output, in graph order: read them after [`run_in`].
            #[allow(unused_unsafe)]
            pub fn outputs(&self) -> [&[f32]; #n_out] {
                let base = self.0.as_ptr().cast_mut();
                // SAFETY: inside the arena and aligned (verified plan); `&self` rules out any
                // mutable slice of the arena while these live.
                [#(#all_outputs),*]
            }
        }

        #shared
    }
}

/// The `impl Arena` accessors and `shared()` of a model with a bounded dimension and `io: arena`:
/// each accessor takes the length `n` and returns the port's slice at it (its first
/// `input_lens(n)[i]` / `output_lens(n)[i]` values, in the slot the plan of `n`'s class gives
/// it), or `sramfit::Error::Shape` with `Port::Length` for a length out of range.
#[cfg(feature = "onnx")]
pub fn dynamic_items(d: &crate::dynamic::DynamicProgram, inputs: &[Ident], outputs: &[Ident]) -> TokenStream {
    let n = &d.len;
    let offsets = |ports: fn(&crate::ir::Graph) -> &[usize]| {
        super::dynamic::class_match(d, |c| {
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
    let tensor = |t: usize| {
        let x = &d.program.graph.tensors[t];
        format!("`{}` {:?} f32 at the largest length", x.name, x.shape)
    };
    let input_fns = inputs.iter().zip(&d.program.graph.inputs).enumerate().map(|(i, (id, &t))| {
        let doc = format!(
            "Input {i}, {}, at length `n`: its `input_lens(n)[{i}]` values; write them before [`run_in`]`(arena, n)`. A run may overwrite it.",
            tensor(t)
        );
        quote! {
            #[doc = #doc]
            pub fn #id(&mut self, #n: usize) -> ::core::result::Result<&mut [f32], ::sramfit::Error> {
                let (off, len) = (input_offsets(check_len(#n)?)[#i], input_lens(#n)[#i]);
                // SAFETY: at every length of its class the verified plan puts this input inside the
                // arena at a 16-byte-aligned offset; `&mut self` makes it the only slice alive.
                Ok(unsafe { ::sramfit::__private::arena_f32_mut(self.0.as_mut_ptr(), ARENA_BYTES, off, len) })
            }
        }
    });
    let output_fns = outputs.iter().zip(&d.program.graph.outputs).enumerate().map(|(i, (id, &t))| {
        let doc = format!(
            "Output {i}, {}, at length `n`: its `output_lens(n)[{i}]` values; read them after [`run_in`]`(arena, n)`.",
            tensor(t)
        );
        quote! {
            #[doc = #doc]
            pub fn #id(&self, #n: usize) -> ::core::result::Result<&[f32], ::sramfit::Error> {
                let (off, len) = (output_offsets(check_len(#n)?)[#i], output_lens(#n)[#i]);
                // SAFETY: inside the arena (verified plan of every length of the class), aligned;
                // `&self` rules out any mutable slice of the arena while this one lives.
                Ok(unsafe { ::sramfit::__private::arena_f32(self.0.as_ptr().cast_mut(), ARENA_BYTES, off, len) })
            }
        }
    });
    let shared = shared_fn();
    let all_inputs = (0..n_in)
        .map(|i| quote!(unsafe { ::sramfit::__private::arena_f32_mut(base, ARENA_BYTES, offs[#i], lens[#i]) }));
    let all_outputs =
        (0..n_out).map(|i| quote!(unsafe { ::sramfit::__private::arena_f32(base, ARENA_BYTES, offs[#i], lens[#i]) }));
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
            pub fn inputs_mut(&mut self, #n: usize) -> ::core::result::Result<[&mut [f32]; #n_in], ::sramfit::Error> {
                let (offs, lens) = (input_offsets(check_len(#n)?), input_lens(#n));
                let base = self.0.as_mut_ptr();
                // SAFETY: inside the arena and aligned (verified plan); pairwise disjoint, because the
                // inputs are all live at step 0 of every class's verified plan; `&mut self` rules out
                // any other slice of the arena.
                Ok([#(#all_inputs),*])
            }

            /// Every output at length `n`, in graph order: read them after [`run_in`].
            #[allow(unused_unsafe)]
            pub fn outputs(&self, #n: usize) -> ::core::result::Result<[&[f32]; #n_out], ::sramfit::Error> {
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

/// `shared()`: the module's static arena for one caller at a time.
fn shared_fn() -> TokenStream {
    quote! {
        /// The module's shared arena, for one caller at a time: write the inputs through it, call
        /// [`run_in`], read the outputs.
        ///
        /// Returns [`Error::Busy`](::sramfit::Error::Busy) while another caller holds it (another
        /// thread, or an interrupt that preempted the holder).
        pub fn shared() -> ::core::result::Result<::sramfit::ArenaGuard<'static, Arena>, ::sramfit::Error> {
            SHARED.try_lock()
        }
    }
}
