//! The entry points of a model whose inputs and outputs live in the arena ([`Io::Arena`]): accessors
//! on `Arena` for each input (write before the run) and output (read after it), `run_in(&mut Arena)`
//! (which also takes the inputs the caller places itself, [`Graph::caller_inputs`]), and `shared()`
//! for the module's static arena.
//!
//! [`Graph::caller_inputs`]: crate::ir::Graph::caller_inputs
//!
//! [`Io::Arena`]: crate::ir::Io::Arena

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::{arena_slice_expr, elem_type};
use crate::liveness::Storage;
use crate::pipeline::Program;
use crate::tensor::DType;

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
        let (off, _) = place(t);
        format!(
            "`{}` {:?} {}, arena bytes {off}..{}",
            tensor.name,
            tensor.shape,
            tensor.dtype,
            off as u64 + tensor.bytes()
        )
    };
    // The inputs the caller places itself are parameters of `run_in`, not in the arena.
    let arena_inputs: Vec<(&Ident, usize)> = (inputs.iter().zip(&g.inputs).enumerate())
        .filter(|(i, _)| g.input_in_arena(*i))
        .map(|(_, (id, &t))| (id, t))
        .collect();
    let input_fns = arena_inputs.iter().map(|&(id, t)| {
        let (off, len) = place(t);
        let (ty, dtype) = (elem_type(g.tensors[t].dtype), g.tensors[t].dtype);
        let slice = arena_slice_expr(quote!(self.0.as_mut_ptr()), off, len, dtype, true);
        let doc = format!(
            "Input {}: write it before [`run_in`]. A run may overwrite it (the plan reuses its bytes once its last reader ran).",
            describe(t)
        );
        quote! {
            #[doc = #doc]
            pub fn #id(&mut self) -> &mut [#ty; #len] {
                // SAFETY: the verified plan puts this input inside the arena at a 16-byte-aligned
                // offset; `&mut self` makes it the only slice of the arena alive.
                let s = #slice;
                match s.try_into() { Ok(a) => a, Err(_) => unreachable!() }
            }
        }
    });
    let output_fns = outputs.iter().zip(&g.outputs).map(|(id, &t)| {
        let (off, len) = place(t);
        let (ty, dtype) = (elem_type(g.tensors[t].dtype), g.tensors[t].dtype);
        let slice = arena_slice_expr(quote!(self.0.as_ptr().cast_mut()), off, len, dtype, false);
        let doc = format!("Output {}: read it after [`run_in`] (no step writes it after its producer).", describe(t));
        quote! {
            #[doc = #doc]
            pub fn #id(&self) -> &[#ty; #len] {
                // SAFETY: inside the arena (verified plan), aligned; `&self` rules out any mutable
                // slice of the arena while this one lives.
                let s = #slice;
                match s.try_into() { Ok(a) => a, Err(_) => unreachable!() }
            }
        }
    });
    let (n_in, n_out) = (arena_inputs.len(), g.outputs.len());
    let shared = shared_fn();
    let port_list = |ports: &[usize], mutable: bool| {
        let slices = ports.iter().map(|&t| {
            let (off, len) = place(t);
            (g.tensors[t].dtype, arena_slice_expr(quote!(base), off, len, g.tensors[t].dtype, mutable))
        });
        port_array(slices.collect(), mutable)
    };
    let (in_elem, all_inputs) = port_list(&arena_inputs.iter().map(|&(_, t)| t).collect::<Vec<_>>(), true);
    let (out_elem, all_outputs) = port_list(&g.outputs, false);
    quote! {
        impl Arena {
            #(#input_fns)*
            #(#output_fns)*

            /// Every input in the arena (all but those the caller places itself), in graph order:
            /// write them before [`run_in`].
            #[allow(unused_unsafe)]
            pub fn inputs_mut(&mut self) -> [#in_elem; #n_in] {
                let base = self.0.as_mut_ptr();
                // SAFETY: inside the arena and aligned (verified plan); pairwise disjoint, because the
                // inputs are all live at step 0 and the verified plan gives live buffers disjoint
                // bytes; `&mut self` rules out any other slice of the arena.
                [#(#all_inputs),*]
            }

            /// Every output, in graph order: read them after [`run_in`].
            #[allow(unused_unsafe)]
            pub fn outputs(&self) -> [#out_elem; #n_out] {
                let base = self.0.as_ptr().cast_mut();
                // SAFETY: inside the arena and aligned (verified plan); `&self` rules out any
                // mutable slice of the arena while these live.
                [#(#all_outputs),*]
            }
        }

        #shared
    }
}

/// The body of `run_typed_in` for a model whose ports live in the arena: the checked caller slices
/// (named like the ports) copied into the input accessors, `run_in` (given the inputs `caller`,
/// indices the caller places itself), the outputs copied out. With `len` (a bounded dimension)
/// the accessors take that length (the largest) and return slices.
pub fn copy_through_arena(ports: &super::Ports, caller: &[usize], len: Option<TokenStream>) -> TokenStream {
    // `run_in(arena[, len][, placed inputs..])`, no trailing comma (the expansion without placed
    // inputs is unchanged).
    let mut args = vec![quote!(arena)];
    args.extend(len.clone());
    args.extend(caller.iter().map(|&i| &ports.inputs[i]).map(|id| quote!(#id)));
    let run = quote!(run_in(#(#args),*)?;);
    let at = match &len {
        Some(n) => quote!((#n)?),
        None => quote!(()),
    };
    let copied = ports.inputs.iter().enumerate().filter(|(i, _)| !caller.contains(i));
    let copy_in = copied.map(|(_, id)| quote!(arena.#id #at.copy_from_slice(#id);));
    let copy_out = ports.outputs.iter().map(|id| quote!(#id.copy_from_slice(arena.#id #at);));
    quote! {
        #(#copy_in)*
        #run
        #(#copy_out)*
        Ok(())
    }
}

/// The element type and expressions of an array of ports (`inputs_mut()`, `outputs()`) from each
/// port's element type and slice: ports of one element type come as plain slices, mixed ones as
/// tagged `TensorMut` / `TensorRef`.
pub(crate) fn port_array(slices: Vec<(DType, TokenStream)>, mutable: bool) -> (TokenStream, Vec<TokenStream>) {
    let uniform = slices.windows(2).all(|w| w[0].0 == w[1].0);
    let ty = elem_type(slices.first().map_or(DType::F32, |s| s.0));
    let elem = match (uniform, mutable) {
        (true, true) => quote!(&mut [#ty]),
        (true, false) => quote!(&[#ty]),
        (false, true) => quote!(::sramfit::TensorMut<'_>),
        (false, false) => quote!(::sramfit::TensorRef<'_>),
    };
    let exprs = slices.into_iter().map(|(_, s)| if uniform { s } else { quote!((#s).into()) }).collect();
    (elem, exprs)
}

/// `shared()`: the module's static arena for one caller at a time.
pub fn shared_fn() -> TokenStream {
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
