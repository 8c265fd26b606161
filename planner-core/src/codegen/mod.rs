//! Code generation: a planned, verified [`Program`] becomes the items of the user's model module,
//! as a `proc_macro2::TokenStream`.
//!
//! The emitted code is straight-line: one block per schedule step, each calling one `runtime-min`
//! kernel on slices at constant offsets of the arena, of the caller's buffers, or of the weight blob.
//! Arena slices are built with `unsafe`; every step's doc comment states the verified plan fact that
//! makes those slices sound.

pub(crate) mod checks;
pub(crate) mod docs;
pub(crate) mod io;
pub use docs::plan_source_note;
pub use io::shared_fn;
pub(crate) mod names;
mod weights;

use std::path::PathBuf;

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::ir::{Io, Node};
use crate::liveness::Storage;
use crate::ops::{Overlapped, Step};
use crate::pipeline::Program;
use crate::tensor::DType;

/// Choices the caller of the generator makes.
#[derive(Clone, Debug, Default)]
pub struct CodegenOptions {
    /// Embed the weights with `include_bytes!` of this file (already written) instead of a literal.
    pub weights_file: Option<PathBuf>,
    /// Files to `include_bytes!` into unused constants so that cargo rebuilds when they change
    /// (the model, and its plan file when there is one).
    pub track_files: Vec<PathBuf>,
    /// Checked mode: fill the arena with a canary and check the plan around every step at run
    /// time (`sramfit::Error::PlanViolation` on failure). Off by default; off adds nothing.
    pub checked: bool,
    /// Step probes: after every step that runs code, a call `::sramfit::__private::probe::step_done(i)`
    /// with the step's index in the graph, which calls the application's hook (`sramfit::probe`):
    /// per-step measurements on a board. Off by default; off adds nothing.
    pub probe: bool,
    /// The module is a member of a `models!` group (models that never run at the same time):
    /// its `Arena` and shared arena are the group's, `super::Arena` and `super::SHARED`
    /// ([`group_arena`]), sized to the group's largest plan; nothing else changes.
    pub in_group: bool,
}

/// How generated code reaches each tensor's data.
pub(crate) struct Access<'a> {
    p: &'a Program,
    tensors: &'a [crate::ir::Tensor],
    inputs: Vec<Ident>,
    outputs: Vec<Ident>,
    regions: Vec<Region>,
}

impl Access<'_> {
    /// A slice of `len` elements of `dtype` at byte `offset` of arena buffer `buffer` (in its
    /// pool, with pools).
    fn arena_slice(&self, buffer: usize, offset: u64, len: usize, dtype: DType, mutable: bool) -> TokenStream {
        let off = self.p.plan.offsets[buffer] + offset;
        match &self.p.pools {
            None => arena_slice_expr(quote!(base), off as usize, len, dtype, mutable),
            Some(pools) => {
                let (k, off) = pools.locate(buffer, off);
                let Region { base, bytes, .. } = &self.regions[k];
                arena_slice_in(quote!(#base), quote!(#bytes), off as usize, len, dtype, mutable)
            }
        }
    }

    /// A `&[T]` expression for tensor `t`.
    fn read(&self, t: usize) -> TokenStream {
        let tensor = &self.tensors[t];
        let len = tensor.len();
        match self.p.live.storage[t] {
            Storage::Input(i) => {
                let id = &self.inputs[i];
                quote!(&#id[..])
            }
            Storage::Output(j) => {
                let id = &self.outputs[j];
                quote!(&#id[..])
            }
            Storage::Const(root) => {
                let off = self.p.weights.offsets[root].unwrap_or(0);
                let ty = elem_type(tensor.dtype);
                quote!(::sramfit::__private::weights_slice::<#ty>(&WEIGHTS.0, #off, #len))
            }
            Storage::Arena(b) => self.arena_slice(b, self.p.live.offset_in_buffer[t], len, tensor.dtype, false),
        }
    }

    /// A `&mut [T]` expression for tensor `t` (an activation: in the arena or a caller's output).
    fn write(&self, t: usize) -> TokenStream {
        let tensor = &self.tensors[t];
        match self.p.live.storage[t] {
            Storage::Output(j) => {
                let id = &self.outputs[j];
                quote!(&mut #id[..])
            }
            Storage::Arena(b) => self.arena_slice(b, self.p.live.offset_in_buffer[t], tensor.len(), tensor.dtype, true),
            Storage::Input(_) | Storage::Const(_) => {
                unreachable!("boundary::bind_outputs makes every written tensor an activation")
            }
        }
    }

    /// The step's scratch slice of `dtype`, if the plan gives it one.
    fn scratch(&self, step: usize, dtype: DType) -> Option<TokenStream> {
        self.p.live.scratch[step].map(|b| {
            let len = (self.p.live.problem.buffers[b].size / dtype.size() as u64) as usize;
            self.arena_slice(b, 0, len, dtype, true)
        })
    }

    /// The statements of one step: its operator's kernel call on the step's slices.
    fn step(&self, node: &Node, step: usize) -> TokenStream {
        let kind = node.op.kind();
        let s = Step {
            operands: node.operands(self.tensors),
            inputs: node.inputs.iter().map(|&t| self.read(t)).collect(),
            output: self.write(node.output),
            scratch: self.scratch(step, kind.scratch().dtype),
            in_place: self.p.live.in_place[step],
            overlap: self.p.live.overlap[step].map(|k| self.overlapped(node, k)),
        };
        kind.emit(&s)
    }

    /// The shared buffer of an overlapped step reading input `k` of `node`.
    fn overlapped(&self, node: &Node, k: usize) -> Overlapped {
        let y = node.output;
        let Storage::Arena(b) = self.p.live.storage[y] else {
            unreachable!("the storage verifier accepts overlapped steps only in the arena")
        };
        let dtype = self.tensors[y].dtype;
        let len = (self.p.live.problem.buffers[b].size / dtype.size() as u64) as usize;
        let (input_at, output_at) = overlap_offsets(self.p, node, k);
        Overlapped { region: self.arena_slice(b, 0, len, dtype, true), input_at, output_at }
    }
}

/// The element offsets of an overlapped step's input `k` and output in their shared buffer.
pub(crate) fn overlap_offsets(p: &Program, node: &Node, k: usize) -> (usize, usize) {
    let es = p.graph.tensors[node.output].dtype.size() as u64;
    let at = |t: usize| (p.live.offset_in_buffer[t] / es) as usize;
    (at(node.inputs[k]), at(node.output))
}

/// The element type `dtype` as a Rust type.
pub(crate) fn elem_type(dtype: DType) -> Ident {
    format_ident!("{}", dtype.rust_name())
}

/// `unsafe { arena_slice[_mut]::<T>(base, ARENA_BYTES, off, len) }`: a checked slice of the arena
/// whose first byte `base` evaluates to.
pub(crate) fn arena_slice_expr(base: TokenStream, off: usize, len: usize, dtype: DType, mutable: bool) -> TokenStream {
    arena_slice_in(base, quote!(ARENA_BYTES), off, len, dtype, mutable)
}

/// [`arena_slice_expr`] in a memory of `bytes` bytes (a pool's constant).
fn arena_slice_in(
    base: TokenStream,
    bytes: TokenStream,
    off: usize,
    len: usize,
    dtype: DType,
    mutable: bool,
) -> TokenStream {
    let ty = elem_type(dtype);
    if mutable {
        quote!(unsafe { ::sramfit::__private::arena_slice_mut::<#ty>(#base, #bytes, #off, #len) })
    } else {
        quote!(unsafe { ::sramfit::__private::arena_slice::<#ty>(#base, #bytes, #off, #len) })
    }
}

/// One memory generated code addresses: the single arena, or one pool.
pub(crate) struct Region {
    /// The local holding its first byte in `run_in` (`base`, `base_sram`).
    pub base: Ident,
    /// The constant of its size (`ARENA_BYTES`, `POOL_SRAM_BYTES`).
    pub bytes: Ident,
    /// Where `run_in` finds its bytes (`arena.0`, `arena.sram.0`).
    pub bytes_of_arena: TokenStream,
    /// Checked mode's checker of it (`checker`, `checker_sram`).
    pub checker: Ident,
    /// Checked mode's buffer table of it (`CHECKED_BUFFERS`, `CHECKED_BUFFERS_SRAM`).
    pub table: Ident,
    /// The pool's index, `None` for the single arena.
    pub pool: Option<usize>,
}

/// The memories of `p`: one arena, or one per pool.
pub(crate) fn regions(p: &Program) -> Vec<Region> {
    let Some(pools) = &p.pools else {
        return vec![Region {
            base: format_ident!("base"),
            bytes: format_ident!("ARENA_BYTES"),
            bytes_of_arena: quote!(arena.0),
            checker: format_ident!("checker"),
            table: format_ident!("CHECKED_BUFFERS"),
            pool: None,
        }];
    };
    (pools.pools.iter().enumerate())
        .map(|(k, pool)| {
            let (lower, upper) = (pool.spec.name.to_ascii_lowercase(), pool.spec.name.to_ascii_uppercase());
            let field = format_ident!("{lower}");
            Region {
                base: format_ident!("base_{lower}"),
                bytes: pool_bytes_ident(&pool.spec.name),
                bytes_of_arena: quote!(arena.#field.0),
                checker: format_ident!("checker_{lower}"),
                table: format_ident!("CHECKED_BUFFERS_{upper}"),
                pool: Some(k),
            }
        })
        .collect()
}

/// `POOL_SRAM_BYTES`: the constant of pool `name`'s size.
pub(crate) fn pool_bytes_ident(name: &str) -> Ident {
    format_ident!("POOL_{}_BYTES", name.to_ascii_uppercase())
}

/// The statement of `run`, `run_dyn` and `run_typed` that takes the module's static arena as
/// `arena` (`Error::Busy` when another call holds it); with pools, every pool's static behind the
/// model's one busy flag.
pub(crate) fn lock_arena(p: &Program) -> TokenStream {
    match p.pools {
        None => quote!(let mut arena = SHARED.try_lock()?;),
        Some(_) => quote! {
            let mut __busy = SHARED.try_lock()?;
            let mut arena = statics(&mut __busy);
        },
    }
}

/// Emits the items of the model module (to be placed inside `mod name { ... }`).
pub fn emit(p: &Program, o: &CodegenOptions) -> TokenStream {
    let g = &p.graph;
    let ports = Ports::of(g, &g.inputs, &g.outputs);
    let header = module_header(p, o, None);
    let body = run_body(p, o, step_bodies(p));
    let run_in_doc = docs::schedule_doc(p);
    if g.io == Io::Arena {
        // The inputs and outputs are in the arena: `run_in` takes the arena, and the inputs the
        // caller places itself.
        let accessors = io::items(p, &ports.inputs, &ports.outputs);
        let typed = ports.typed_entries(&lock_arena(p), io::copy_through_arena(&ports, &g.caller_inputs, None));
        // The arena, then the inputs the caller places (no trailing comma: an unchanged
        // expansion for models without them).
        let params =
            std::iter::once(quote!(arena: &mut Arena)).chain(g.caller_inputs.iter().map(|&i| ports.input_param(i)));
        return quote! {
            #header
            #accessors
            #typed

            #[doc = #run_in_doc]
            #[allow(unused_doc_comments, unused_unsafe, unused_variables, clippy::all)]
            pub fn run_in(#(#params),*) -> ::core::result::Result<(), ::sramfit::Error> {
                #body
            }
        };
    }
    let params = ports.params();
    let args = ports.args();
    let lock = lock_arena(p);
    let typed = ports.typed_entries(&lock, quote!(run_in(arena, #(#args),*)));
    // `run_dyn` takes plain `f32` slices: only models whose ports are all `f32` have it.
    let untyped = ports.all_f32().then(|| {
        let (dyn_in, dyn_out) = (ports.slice_names(true), ports.slice_names(false));
        let counts = ports.counts();
        let in_checks = ports.inputs.iter().enumerate().zip(&ports.in_lens).map(|((i, id), n)| {
            let d = &dyn_in[i];
            quote! {
                let #id: &[f32; #n] = (*#d).try_into().map_err(|_| ::sramfit::Error::Shape {
                    port: ::sramfit::Port::Input(#i), expected: #n, found: #d.len() })?;
            }
        });
        let out_checks = ports.outputs.iter().enumerate().zip(&ports.out_lens).map(|((i, id), n)| {
            let d = &dyn_out[i];
            quote! {
                let __found = #d.len();
                let #id: &mut [f32; #n] = (&mut **#d).try_into().map_err(|_| ::sramfit::Error::Shape {
                    port: ::sramfit::Port::Output(#i), expected: #n, found: __found })?;
            }
        });
        quote! {
            /// Like [`run`], with slices whose count and lengths are checked at run time
            /// ([`Error::Shape`](::sramfit::Error::Shape) before anything is touched).
            pub fn run_dyn(inputs: &[&[f32]], outputs: &mut [&mut [f32]]) -> ::core::result::Result<(), ::sramfit::Error> {
                #lock
                run_dyn_in(&mut arena, inputs, outputs)
            }

            /// Like [`run_dyn`], in a caller-owned arena.
            pub fn run_dyn_in(arena: &mut Arena, inputs: &[&[f32]], outputs: &mut [&mut [f32]]) -> ::core::result::Result<(), ::sramfit::Error> {
                #counts
                #(#in_checks)*
                #(#out_checks)*
                run_in(arena, #(#args),*)
            }
        }
    });

    quote! {
        #header

        /// Runs the model in the module's shared arena: inputs, then outputs, in graph order, as
        /// flat row-major arrays.
        ///
        /// Returns [`Error::Busy`](::sramfit::Error::Busy) if another call is using the shared
        /// arena (another thread, or an interrupt that preempted a call); nothing is written then.
        pub fn run(#(#params),*) -> ::core::result::Result<(), ::sramfit::Error> {
            #lock
            run_in(&mut arena, #(#args),*)
        }

        #untyped
        #typed

        #[doc = #run_in_doc]
        #[allow(unused_doc_comments, unused_unsafe, unused_variables, clippy::all)]
        pub fn run_in(arena: &mut Arena, #(#params),*) -> ::core::result::Result<(), ::sramfit::Error> {
            #body
        }
    }
}

/// A model's ports as generated code names and types them: identifiers (the parameters of `run`),
/// element types and lengths (at the bound, for a bounded dimension).
pub(crate) struct Ports {
    /// Input identifiers, graph order.
    pub inputs: Vec<Ident>,
    /// Output identifiers, graph order.
    pub outputs: Vec<Ident>,
    /// Input element types.
    pub in_dtypes: Vec<DType>,
    /// Output element types.
    pub out_dtypes: Vec<DType>,
    /// Input element counts.
    pub in_lens: Vec<usize>,
    /// Output element counts.
    pub out_lens: Vec<usize>,
}

impl Ports {
    /// The ports `inputs` / `outputs` of `g` (tensor ids) at their shapes in `g`.
    pub fn of(g: &crate::ir::Graph, inputs: &[usize], outputs: &[usize]) -> Ports {
        let (in_ids, out_ids) = port_idents(g);
        let dtypes = |ts: &[usize]| ts.iter().map(|&t| g.tensors[t].dtype).collect();
        let lens = |ts: &[usize]| ts.iter().map(|&t| g.tensors[t].len()).collect();
        Ports {
            inputs: in_ids,
            outputs: out_ids,
            in_dtypes: dtypes(inputs),
            out_dtypes: dtypes(outputs),
            in_lens: lens(inputs),
            out_lens: lens(outputs),
        }
    }

    /// Whether every port is `f32` (the models that have `run_dyn`).
    pub fn all_f32(&self) -> bool {
        self.in_dtypes.iter().chain(&self.out_dtypes).all(|&d| d == DType::F32)
    }

    /// `input: &[T; N]`: the parameter of `run` for input `i`.
    pub fn input_param(&self, i: usize) -> TokenStream {
        let (id, n, ty) = (&self.inputs[i], self.in_lens[i], elem_type(self.in_dtypes[i]));
        quote!(#id: &[#ty; #n])
    }

    /// `input: &[T; N], .., output: &mut [U; M], ..`: the parameters of `run`.
    pub fn params(&self) -> Vec<TokenStream> {
        let ins = (0..self.inputs.len()).map(|i| self.input_param(i));
        let outs = (self.outputs.iter().zip(&self.out_lens).zip(&self.out_dtypes)).map(|((id, n), &d)| {
            let ty = elem_type(d);
            quote!(#id: &mut [#ty; #n])
        });
        ins.chain(outs).collect()
    }

    /// The port identifiers, inputs then outputs (the arguments of `run_in`).
    pub fn args(&self) -> Vec<&Ident> {
        self.inputs.iter().chain(&self.outputs).collect()
    }

    /// `__in_0, ..` or `__out_0, ..`: the names of the caller's slices in the checking entry points.
    pub fn slice_names(&self, inputs: bool) -> Vec<Ident> {
        match inputs {
            true => (0..self.inputs.len()).map(|i| format_ident!("__in_{i}")).collect(),
            false => (0..self.outputs.len()).map(|i| format_ident!("__out_{i}")).collect(),
        }
    }

    /// Destructures `inputs` and `outputs` into [`Ports::slice_names`], returning
    /// `Error::Shape` with `InputCount` / `OutputCount` when a count is wrong.
    pub fn counts(&self) -> TokenStream {
        let (dyn_in, dyn_out) = (self.slice_names(true), self.slice_names(false));
        let (n_in, n_out) = (dyn_in.len(), dyn_out.len());
        quote! {
            let [#(#dyn_in),*] = inputs else {
                return Err(::sramfit::Error::Shape { port: ::sramfit::Port::InputCount, expected: #n_in, found: inputs.len() });
            };
            let __outputs = outputs.len();
            let [#(#dyn_out),*] = outputs else {
                return Err(::sramfit::Error::Shape { port: ::sramfit::Port::OutputCount, expected: #n_out, found: __outputs });
            };
        }
    }

    /// `run_typed` and `run_typed_in`: every tagged slice checked (count, element type, length)
    /// into an array named like its port, then `call` (an expression of type `Result<(), Error>`
    /// using those names and `arena`); `run_typed` takes the static arena with `lock`
    /// ([`lock_arena`]).
    pub fn typed_entries(&self, lock: &TokenStream, call: TokenStream) -> TokenStream {
        let counts = self.counts();
        let (dyn_in, dyn_out) = (self.slice_names(true), self.slice_names(false));
        let typed_in =
            (self.inputs.iter().zip(&self.in_dtypes).zip(&self.in_lens)).enumerate().map(|(i, ((id, &d), n))| {
                let (s, ty) = (&dyn_in[i], elem_type(d));
                quote!(let #id: &[#ty; #n] = ::sramfit::__private::port_ref(#s, #i)?;)
            });
        let typed_out =
            (self.outputs.iter().zip(&self.out_dtypes).zip(&self.out_lens)).enumerate().map(|(i, ((id, &d), n))| {
                let (s, ty) = (&dyn_out[i], elem_type(d));
                quote!(let #id: &mut [#ty; #n] = ::sramfit::__private::port_mut(#s, #i)?;)
            });
        quote! {
            /// Like [`run`], with tagged slices of any element type whose count, types and lengths
            /// are checked at run time against [`INPUT_TYPES`] / [`INPUT_SHAPES`] and
            /// [`OUTPUT_TYPES`] / [`OUTPUT_SHAPES`] ([`Error::Shape`](::sramfit::Error::Shape) or
            /// [`Error::Type`](::sramfit::Error::Type) naming the port, before anything is touched).
            pub fn run_typed(inputs: &[::sramfit::TensorRef<'_>], outputs: &mut [::sramfit::TensorMut<'_>]) -> ::core::result::Result<(), ::sramfit::Error> {
                #lock
                run_typed_in(&mut arena, inputs, outputs)
            }

            /// Like [`run_typed`], in a caller-owned arena.
            pub fn run_typed_in(arena: &mut Arena, inputs: &[::sramfit::TensorRef<'_>], outputs: &mut [::sramfit::TensorMut<'_>]) -> ::core::result::Result<(), ::sramfit::Error> {
                #counts
                #(#typed_in)*
                #(#typed_out)*
                #call
            }
        }
    }
}

/// The identifiers generated code gives the graph inputs and outputs (parameter names of `run`).
pub(crate) fn port_idents(g: &crate::ir::Graph) -> (Vec<Ident>, Vec<Ident>) {
    // With `io: arena` the names become `Arena` methods, which must not clash with its own.
    let mut taken: Vec<String> = match g.io {
        Io::Arena => io::RESERVED.iter().map(|s| s.to_string()).collect(),
        Io::Caller => Vec::new(),
    };
    let inputs = g.inputs.iter().map(|&t| names::unique_ident(&g.tensors[t].name, "input", &mut taken)).collect();
    let outputs = g.outputs.iter().map(|&t| names::unique_ident(&g.tensors[t].name, "output", &mut taken)).collect();
    (inputs, outputs)
}

/// Whether node `i` runs code (views and elided concatenations run none).
fn runs(p: &Program, i: usize) -> bool {
    !p.graph.nodes[i].op.is_view() && !p.live.elided[i]
}

/// The kernel call of every node that runs code (`None` for the others), in schedule order.
pub(crate) fn step_bodies(p: &Program) -> Vec<Option<TokenStream>> {
    let g = &p.graph;
    let (inputs, outputs) = port_idents(g);
    let access = Access { p, tensors: &g.tensors, inputs, outputs, regions: regions(p) };
    g.nodes.iter().enumerate().map(|(i, n)| runs(p, i).then(|| access.step(n, i))).collect()
}

/// The body of `run_in`: the arena base pointer, then every step that runs code (`bodies`, from
/// [`step_bodies`] or an equivalent) with its doc comment, in checked mode wrapped in its checks.
pub(crate) fn run_body(p: &Program, o: &CodegenOptions, bodies: Vec<Option<TokenStream>>) -> TokenStream {
    let uses_arena = p.live.problem.buffers.iter().any(|b| b.size > 0);
    let checked = o.checked && uses_arena;
    let live = if checked { checks::live_buffers(p) } else { Vec::new() };
    let steps = bodies.into_iter().enumerate().filter_map(|(i, body)| {
        let body = body?;
        let doc = docs::step_doc(p, i);
        let body = if checked { checks::wrap(p, i, &live[i], body) } else { body };
        let probe = if o.probe { quote!(::sramfit::__private::probe::step_done(#i);) } else { TokenStream::new() };
        Some(quote! { #[doc = #doc] { #body } #probe })
    });
    let check_start = if checked { checks::start(p) } else { TokenStream::new() };
    let base = match uses_arena {
        true => regions(p)
            .into_iter()
            .map(|Region { base, bytes_of_arena, .. }| quote!(let #base: *mut u8 = #bytes_of_arena.as_mut_ptr();))
            .collect(),
        false => quote!(let _ = arena;),
    };
    quote! {
        #base
        #check_start
        #(#steps)*
        Ok(())
    }
}

/// The module items every expansion has: the summary docs, constants, tracked files, weights,
/// checked mode's tables, `Arena` and the shared arena; `note` is appended to the module docs.
pub(crate) fn module_header(p: &Program, o: &CodegenOptions, note: Option<&str>) -> TokenStream {
    let g = &p.graph;
    let arena_bytes = p.plan.arena_bytes as usize;
    let lower_bound = p.plan.lower_bound.bytes as usize;
    let naive = p.naive_bytes() as usize;
    let weight_bytes = p.weights.bytes.len();
    let in_shapes = g.inputs.iter().map(|&t| params_slice(&g.tensors[t].shape));
    let out_shapes = g.outputs.iter().map(|&t| params_slice(&g.tensors[t].shape));
    let dtype = |t: &usize| {
        let v = format_ident!("{}", g.tensors[*t].dtype.variant_name());
        quote!(::sramfit::DType::#v)
    };
    let (in_types, out_types) = (g.inputs.iter().map(dtype), g.outputs.iter().map(dtype));
    let (in_quant, out_quant) =
        (g.inputs.iter().map(|&t| port_quant(g, t)), g.outputs.iter().map(|&t| port_quant(g, t)));
    let uses_arena = p.live.problem.buffers.iter().any(|b| b.size > 0);
    let check_items = if o.checked && uses_arena { checks::items(p) } else { TokenStream::new() };
    let weights_static = weights::emit_static(&p.weights, o.weights_file.as_deref());
    let track = o.track_files.iter().map(|f| {
        let f = f.to_string_lossy().into_owned();
        quote!(
            const _: &[u8] = ::core::include_bytes!(#f);
        )
    });
    let summary = docs::module_doc(p) + note.unwrap_or_default();
    let arena_use = match g.io {
        Io::Arena => " give each concurrent caller its own and use [`run_in`] (inputs and outputs are in the arena: see its accessors).",
        Io::Caller => " give each concurrent caller its own and use [`run_in`] / [`run_typed_in`].",
    };
    let arena = match (&p.pools, o.in_group) {
        (Some(pools), _) => pool_items(pools),
        (None, in_group) => match in_group {
            // The group's arena holds the largest plan of its members: at least this one's.
            true => quote! {
                /// The group's arena (the enclosing module's), sized to its largest member's plan and
                /// guarded by one busy flag for all of them: run one member at a time.
                pub use super::Arena;
                use super::SHARED;
                const _: () = ::core::assert!(ARENA_BYTES <= super::ARENA_BYTES);
            },
            false => group_arena(arena_use),
        },
    };

    quote! {
        #![doc = #summary]

        /// Bytes of the arena this model's plan needs (what `sram:` is checked against).
        pub const ARENA_BYTES: usize = #arena_bytes;
        /// The live-bytes lower bound for this schedule: no plan of it can use fewer arena bytes.
        pub const LOWER_BOUND_BYTES: usize = #lower_bound;
        /// Arena bytes without any reuse (every buffer its own region), for comparison.
        pub const NAIVE_BYTES: usize = #naive;
        /// Bytes of weights kept in read-only memory (flash).
        pub const WEIGHT_BYTES: usize = #weight_bytes;
        /// Shapes of the graph inputs, in graph order.
        pub const INPUT_SHAPES: &[&[usize]] = &[#(#in_shapes),*];
        /// Shapes of the graph outputs, in graph order.
        pub const OUTPUT_SHAPES: &[&[usize]] = &[#(#out_shapes),*];
        /// Element types of the graph inputs, in graph order.
        pub const INPUT_TYPES: &[::sramfit::DType] = &[#(#in_types),*];
        /// Element types of the graph outputs, in graph order.
        pub const OUTPUT_TYPES: &[::sramfit::DType] = &[#(#out_types),*];
        /// How each integer graph input's integers map to reals (`real = scale * (q -
        /// zero_point)`), in graph order; `None` for a float input and for integers the model
        /// does not quantize (or quantizes per axis).
        pub const INPUT_QUANT: &[::core::option::Option<::sramfit::Quantization>] = &[#(#in_quant),*];
        /// As [`INPUT_QUANT`], for the graph outputs.
        pub const OUTPUT_QUANT: &[::core::option::Option<::sramfit::Quantization>] = &[#(#out_quant),*];

        #(#track)*
        #weights_static
        #check_items

        #arena
    }
}

/// With pools: per pool its size constant (`POOL_SRAM_BYTES`), its type (`PoolSram`, exactly that
/// many bytes, 16-byte aligned) and its `static` (`#[link_section]` when it has a section); the
/// `Arena` of one `&mut` per pool, `SHARED` (the model's one busy flag) and `statics`, which lends
/// the static pools as an `Arena` to the holder of that flag.
fn pool_items(pools: &crate::pools::Pools) -> TokenStream {
    let mut fields = Vec::new();
    let mut types = Vec::new();
    let mut statics = Vec::new();
    let items = pools.pools.iter().map(|pool| {
        let name = &pool.spec.name;
        let bytes_id = pool_bytes_ident(name);
        let camel: String = name
            .split('_')
            .filter(|w| !w.is_empty())
            .map(|w| w[..1].to_ascii_uppercase() + &w[1..].to_ascii_lowercase())
            .collect();
        let ty = format_ident!("Pool{camel}");
        let static_id = format_ident!("POOL_{}", name.to_ascii_uppercase());
        let field = format_ident!("{}", name.to_ascii_lowercase());
        let bytes = pool.bytes() as usize;
        let (declared, count) = (pool.spec.bytes, pool.buffers.len());
        let section = pool.spec.section.as_ref().map(|sec| quote!(#[link_section = #sec]));
        let where_ = pool.spec.section.as_ref().map_or(String::new(), |sec| format!(", in section `{sec}`"));
        let const_doc = format!(" Bytes of pool `{name}` its plan uses (declared {declared} bytes; {count} buffers{where_}).");
        let ty_doc = format!(" The memory of pool `{name}`: exactly [`{bytes_id}`], 16-byte aligned.");
        let static_doc = format!(" Pool `{name}` of the module's static arena{where_}; reached only through `statics`.");
        fields.push(field.clone());
        types.push(ty.clone());
        statics.push(static_id.clone());
        quote! {
            #[doc = #const_doc]
            pub const #bytes_id: usize = #bytes;

            #[doc = #ty_doc]
            #[repr(C, align(16))]
            pub struct #ty([u8; #bytes_id]);

            impl #ty {
                /// A zeroed pool.
                pub const fn new() -> Self {
                    #ty([0; #bytes_id])
                }
            }

            impl ::core::default::Default for #ty {
                fn default() -> Self {
                    Self::new()
                }
            }

            #[doc = #static_doc]
            #section
            static #static_id: ::sramfit::__private::StaticPool<#ty> = ::sramfit::__private::StaticPool::new(#ty::new());
        }
    });
    let items: Vec<TokenStream> = items.collect();
    quote! {
        #(#items)*

        /// The working memory of one inference: one pool of each kind, wherever they live (the
        /// module's statics, behind [`run`], or pools of the caller's, for [`run_in`]).
        pub struct Arena<'a> {
            #(#fields: &'a mut #types),*
        }

        impl<'a> Arena<'a> {
            /// An arena of the caller's pools (each may be placed in any memory).
            pub fn new(#(#fields: &'a mut #types),*) -> Self {
                Arena { #(#fields),* }
            }
        }

        /// The model's one busy flag, guarding all of its static pools.
        static SHARED: ::sramfit::__private::StaticArena<()> = ::sramfit::__private::StaticArena::new(());

        /// The static pools as an `Arena`, for as long as the busy flag's guard `busy` is borrowed.
        fn statics<'a>(busy: &'a mut ::sramfit::__private::ArenaGuard<'static, ()>) -> Arena<'a> {
            let _ = busy;
            // SAFETY: `busy` is the guard of `SHARED`, which admits one holder at a time, and only
            // this function, through a mutable borrow of that guard for as long as the `Arena`
            // lives, makes references to the pool statics: no other reference to them exists
            // meanwhile.
            unsafe { Arena { #(#fields: &mut *#statics.as_ptr()),* } }
        }
    }
}

/// `Arena` (exactly `ARENA_BYTES`, 16-byte aligned; `doc` appended to its docs) and `SHARED`, the
/// static one behind `run` and `shared()`: a model's own, or a `models!` group's, whose members
/// share them.
pub fn group_arena(doc: &str) -> TokenStream {
    quote! {
        /// The working memory of one inference: exactly [`ARENA_BYTES`], 16-byte aligned.
        ///
        /// `Arena::new()` is a `const fn`, so an arena can be a `static` or live on a thread's stack;
        #[doc = #doc]
        #[repr(C, align(16))]
        pub struct Arena([u8; ARENA_BYTES]);

        impl Arena {
            /// A zeroed arena.
            pub const fn new() -> Self {
                Arena([0; ARENA_BYTES])
            }
        }

        impl ::core::default::Default for Arena {
            fn default() -> Self {
                Self::new()
            }
        }

        static SHARED: ::sramfit::__private::StaticArena<Arena> = ::sramfit::__private::StaticArena::new(Arena::new());
    }
}

/// `Some(Quantization { .. })` for an integer port quantized per tensor, else `None`.
fn port_quant(g: &crate::ir::Graph, t: usize) -> TokenStream {
    let tensor = &g.tensors[t];
    match (&tensor.quant, tensor.dtype) {
        (Some(crate::tensor::Quant::PerTensor { scale, zero_point }), d) if d != DType::F32 => {
            let scale = crate::ops::literal::f32_expr(*scale);
            quote!(::core::option::Option::Some(::sramfit::Quantization { scale: #scale, zero_point: #zero_point }))
        }
        _ => quote!(::core::option::Option::None),
    }
}

fn params_slice(shape: &[usize]) -> TokenStream {
    quote!(&[#(#shape),*])
}

/// Const assertions, placed next to the module (so that the budget expressions resolve where the
/// user wrote them), that `module::ARENA_BYTES <= sram` and `module::WEIGHT_BYTES <= flash`
/// (`module`: the module's name, or its path from there, `group::member`). The assertions carry
/// the budget expressions' spans, so a failure points at them.
pub fn budget_assertions(
    p: &Program,
    module: &impl quote::ToTokens,
    sram: Option<&TokenStream>,
    flash: Option<&TokenStream>,
) -> TokenStream {
    let assertion = |budget: &TokenStream, constant: TokenStream, msg: String| {
        let span = budget.clone().into_iter().next().map_or_else(proc_macro2::Span::call_site, |t| t.span());
        quote::quote_spanned!(span=> const _: () = ::core::assert!(#module::#constant <= (#budget), #msg);)
    };
    let sram = sram.map(|b| assertion(b, quote!(ARENA_BYTES), docs::sram_assert_message(p)));
    let flash = flash.map(|b| {
        let msg = format!(
            "sramfit: the model's weights need {} bytes of flash, more than the `flash` budget",
            p.weights.bytes.len()
        );
        assertion(b, quote!(WEIGHT_BYTES), msg)
    });
    quote!(#sram #flash)
}
