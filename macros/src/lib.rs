//! The `sramfit::model!` procedural macro: a thin shell over `sramfit-planner-core`.
//!
//! It parses the macro input into a planner-core `Request`, resolves the model path, calls the
//! driver (`compile::compile_model`), and turns every failure into a `compile_error!` spanned on
//! the macro argument responsible, inside a placeholder module of the declared name (so that the
//! user sees one error, not one more per use of the module). No planning logic lives here.

mod fallback;
mod group;
mod input;

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use proc_macro::TokenStream;
use proc_macro2::Span;
use quote::quote;
use sramfit_planner_core::codegen::{self, CodegenOptions};
use sramfit_planner_core::compile;
use sramfit_planner_core::error::Argument;
use sramfit_planner_core::pipeline::Program;
use sramfit_planner_core::request::{InputSpec, Request};
use syn::LitStr;

use input::{Budget, Header, ModelInput};

/// Compiles an ONNX model into a module with a statically planned, allocation-free `run` function.
///
/// ```ignore
/// sramfit::model! {
///     /// Keyword spotting, 12 classes.
///     pub mod kws {
///         path: "models/kws.onnx",     // relative to the crate's Cargo.toml
///         sram: 64 KiB,                // arena budget: bytes, KiB, MiB, kB, MB, or a const expression
///         flash: 256 KiB,              // optional weight budget
///         inputs: { "input": [1, 1, 49, 10] }, // optional: fixes symbolic dimensions, or bounds
///                                              // one: [1, 1, "frames <= 49", 10]
///         optimize: { in_place: false },       // optional: switch off a memory-saving rewrite
///         io: arena,                           // optional: inputs and outputs in the arena;
///                                              // `arena { "input": caller }` leaves that input
///                                              // in the caller's buffer (a DMA target)
///         limits: { nodes: 200_000 },          // optional: raise a build-time resource limit
///         target: "thumbv7em-none-eabihf",     // optional: default, the triple rustc compiles for
///         // pools: { sram: 128 KiB, psram: 8 MiB in ".psram" }, // optional, instead of `sram`:
///         //        every buffer in one pool, hot and small ones first, each pool its own static
///     }
/// }
/// ```
///
/// The module contains `ARENA_BYTES`, `LOWER_BOUND_BYTES`, `NAIVE_BYTES`, `WEIGHT_BYTES`,
/// `INPUT_SHAPES`, `OUTPUT_SHAPES`, `struct Arena`, and `run`, `run_in`, `run_dyn`, `run_dyn_in`.
/// With a bounded dimension (`"frames <= 98"`, or `"4 <= frames <= 98"`) the arena is planned for
/// the largest length, `run` / `run_in` run at it, and `run_dyn(n, inputs, outputs)` /
/// `run_dyn_in(arena, n, ..)` run at any length `n` of the range; the module also has
/// `DYNAMIC_DIM`, `MIN_LEN`, `MAX_LEN` and `input_lens(n)`, `output_lens(n)`, `input_dim(i, axis, n)`,
/// `output_dim(i, axis, n)` to size buffers.
/// A model that does not fit `sram` fails the build with the bytes needed, the lower bound, the peak
/// step and what to change. The target also decides what patch-based execution does unasked:
/// microcontrollers tile where it saves 10% of the arena, x86-64 and AArch64 only where `sram` or
/// `pools` need it (`optimize: { tile: true }` asks on any target).
#[proc_macro]
pub fn model(input: TokenStream) -> TokenStream {
    let expanded = match syn::parse::<ModelInput>(input.clone()) {
        Ok(m) => expand(&m, false).map_or_else(
            |e| fallback::module(&m.header, &e),
            |Expanded { module, checks, .. }| quote!(#module #checks),
        ),
        Err(e) => unparsed(input, &e),
    };
    expanded.into()
}

/// The planner-core request the macro input describes.
fn request(m: &ModelInput) -> Request {
    let given = m.path.value();
    let literal = |b: &Option<Budget>| match b {
        Some(Budget::Bytes { bytes, .. }) => Some(*bytes),
        _ => None,
    };
    Request {
        path: resolve(&given),
        shown_path: PathBuf::from(&given),
        inputs: (m.inputs.iter().flat_map(|(_, entries)| entries))
            .map(|e| InputSpec { name: e.name.value(), dims: e.dims.clone() })
            .collect(),
        optimizations: m.optimize,
        io: m.io,
        caller_inputs: m.caller_inputs.1.iter().map(LitStr::value).collect(),
        sram: literal(&m.sram),
        flash: literal(&m.flash),
        limits: m.limits.1,
        target: m.target.clone(),
        use_plan_file: true,
        checked: cfg!(feature = "checked"),
        pools: m.pools.1.clone(),
    }
}

/// The expansion of an input that did not parse: the placeholder module with the error when at
/// least its header (docs, visibility, name) parses, so that uses of the module add no errors.
fn unparsed(input: TokenStream, e: &syn::Error) -> proc_macro2::TokenStream {
    match syn::parse::Parser::parse(Header::parse_leniently, input) {
        Ok(header) => fallback::module(&header, e),
        Err(_) => e.to_compile_error(),
    }
}

/// Several models that never run at the same time, sharing one arena sized to the largest.
///
/// ```ignore
/// sramfit::models! {
///     /// Listen, then look: never both at once.
///     pub mod sensing {
///         /// Keyword spotting.
///         pub mod kws { path: "models/kws.onnx", sram: 64 KiB }
///         /// Visual wake words.
///         pub mod vww { path: "models/vww.onnx", sram: 256 KiB }
///     }
/// }
///
/// sensing::kws::run(&features, &mut scores)?;  // takes the group's arena, then releases it
/// sensing::vww::run(&image, &mut person)?;     // the same bytes
/// ```
///
/// Each member takes every `model!` option and expands to the module `model!` would make, except
/// that its `Arena` is the group's (`sensing::Arena`, `sensing::ARENA_BYTES` bytes: the largest
/// member's `ARENA_BYTES`) and its `run`, `run_dyn`, `run_typed` and `shared()` take the group's
/// one static arena, guarded by one busy flag: while one member runs, another's `run` returns
/// `Error::Busy`. The group module also has `shared()`. At most one member may have `io: arena`.
#[proc_macro]
pub fn models(input: TokenStream) -> TokenStream {
    let expanded = match syn::parse::<group::GroupInput>(input.clone()) {
        Ok(g) => group::expand(&g),
        Err(e) => unparsed(input, &e),
    };
    expanded.into()
}

/// The module of `m`, its budget assertions (naming the module by `path`, from where the
/// assertions are placed) and its plan's arena bytes.
struct Expanded {
    module: proc_macro2::TokenStream,
    checks: proc_macro2::TokenStream,
    arena_bytes: usize,
}

/// Expands `m`; `in_group`: a member of a `models!` group, whose assertions go inside the group
/// module (`self::member`).
fn expand(m: &ModelInput, in_group: bool) -> syn::Result<Expanded> {
    let request = request(m);
    let compiled = compile::compile_model(&request).map_err(|e| error_at(m, e.argument(), e.to_string()))?;
    let program = compiled.program();
    let name = &m.header.name;
    let options = CodegenOptions {
        weights_file: write_weights(program, &name.to_string()),
        track_files: std::iter::once(request.path.clone())
            .chain(program.plan_source.file().map(Path::to_owned))
            .collect(),
        checked: request.checked,
        probe: cfg!(feature = "probe"),
        in_group,
    };
    let items = compiled.emit(&options);
    let (sram, flash) = (m.sram.as_ref().map(budget_tokens), m.flash.as_ref().map(budget_tokens));
    let path = match in_group {
        true => quote!(self::#name),
        false => quote!(#name),
    };
    let checks = codegen::budget_assertions(program, &path, sram.as_ref(), flash.as_ref());
    let Header { attrs, vis, .. } = &m.header;
    let module = quote! {
        #(#attrs)*
        #vis mod #name {
            #items
        }
    };
    Ok(Expanded { module, checks, arena_bytes: program.plan.arena_bytes as usize })
}

/// The model path: absolute as given, or relative to the invoking crate's `CARGO_MANIFEST_DIR`
/// (or to `SRAMFIT_MANIFEST_DIR` when set: test harnesses such as trybuild compile code from a
/// generated crate directory and point this at the real one).
fn resolve(given: &str) -> PathBuf {
    let p = Path::new(given);
    if p.is_absolute() {
        return p.to_owned();
    }
    std::env::var_os("SRAMFIT_MANIFEST_DIR")
        .or_else(|| std::env::var_os("CARGO_MANIFEST_DIR"))
        .map(PathBuf::from)
        .unwrap_or_default()
        .join(p)
}

/// An error on the macro argument `arg` (or on the path when that argument is absent).
fn error_at(m: &ModelInput, arg: Argument, message: String) -> syn::Error {
    let key = match arg {
        Argument::Inputs => m.inputs.as_ref().map(|(span, _)| *span),
        Argument::Limits => m.limits.0,
        Argument::Io => m.caller_inputs.0,
        Argument::Pools => m.pools.0,
        _ => None,
    };
    match (arg, &m.sram, &m.flash, key) {
        (Argument::Sram, Some(b), _, _) | (Argument::Flash, _, Some(b), _) => b.error(message),
        (_, _, _, Some(span)) => syn::Error::new(span, message),
        _ => syn::Error::new(m.path.span(), message),
    }
}

fn budget_tokens(b: &Budget) -> proc_macro2::TokenStream {
    match b {
        Budget::Bytes { bytes, tokens } => {
            let mut n = proc_macro2::Literal::usize_unsuffixed(*bytes as usize);
            n.set_span(tokens.clone().into_iter().next().map_or_else(Span::call_site, |t| t.span()));
            quote!(#n)
        }
        Budget::Expr(e) => quote!(#e),
    }
}

/// Writes the weight blob into `OUT_DIR` (when the user's crate has a build script) so that it can
/// be embedded with `include_bytes!`, which compiles much faster than a literal for large models.
fn write_weights(p: &Program, module: &str) -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("OUT_DIR")?);
    let mut h = std::collections::hash_map::DefaultHasher::new();
    p.weights.bytes.hash(&mut h);
    let stem = format!("sramfit-{module}-{:016x}", h.finish());
    let file = dir.join(format!("{stem}.bin"));
    if std::fs::metadata(&file).map(|m| m.len()).ok() != Some(p.weights.bytes.len() as u64) {
        // Written beside it, then renamed: another rustc expanding the same model at the same time
        // (a binary and its test target, under `cargo clippy --all-targets`) never reads a
        // half-written file, and both renames put the same bytes in place.
        let partial = dir.join(format!("{stem}.{}.partial", std::process::id()));
        std::fs::write(&partial, &p.weights.bytes).ok()?;
        std::fs::rename(&partial, &file).ok()?;
    }
    Some(file)
}
