//! The `sramfit::model!` procedural macro: a thin shell over `sramfit-planner-core`.
//!
//! It parses the macro input, resolves the model path, calls the planner core, and turns every
//! failure — including a panic inside a dependency — into a `compile_error!` spanned on the macro
//! argument responsible. No planning logic lives here.

mod input;

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use proc_macro::TokenStream;
use proc_macro2::Span;
use quote::quote;
use sramfit_planner_core::budget;
use sramfit_planner_core::codegen::{self, CodegenOptions};
use sramfit_planner_core::compile::{self, ModelSpec, Program};
use sramfit_planner_core::dynamic::{self, Bound};
use sramfit_planner_core::error::Argument;
use sramfit_planner_core::import::InputShape;
use sramfit_planner_core::ir::Io;

use input::{Budget, ModelInput};

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
/// step and what to change.
#[proc_macro]
pub fn model(input: TokenStream) -> TokenStream {
    let parsed = syn::parse_macro_input!(input as ModelInput);
    expand(&parsed).unwrap_or_else(|e| e.to_compile_error()).into()
}

fn expand(m: &ModelInput) -> syn::Result<proc_macro2::TokenStream> {
    let path = resolve(&m.path.value());
    let spec = ModelSpec {
        path: path.clone(),
        inputs: m
            .inputs
            .iter()
            .flat_map(|(_, entries)| entries)
            .map(|e| InputShape { name: e.name.value(), dims: e.dims.clone() })
            .collect(),
        use_plan_file: true,
        optimizations: m.optimize,
        io: m.io,
    };
    let bound = bound(m)?;
    if let (Some(_), Io::Arena, Some((span, _))) = (&bound, m.io, &m.inputs) {
        return Err(syn::Error::new(
            *span,
            "a bounded dimension cannot be combined with `io: arena` yet; keep the default `io: caller` and call `run_dyn(n, ..)`",
        ));
    }
    let compiled = match bound {
        None => compile::compile_model(&spec).map(|p| (p, None)),
        Some(b) => dynamic::compile(&spec, &b).map(|d| (d.program.clone(), Some(d))),
    };
    let (program, dynamic) =
        compiled.map_err(|e| error_at(m, e.argument(), e.with_model_path(Path::new(&m.path.value())).to_string()))?;
    if let Some(b @ Budget::Bytes { bytes, .. }) = &m.sram {
        if program.plan.arena_bytes > *bytes {
            return Err(b.error(budget::sram_overflow_report(&program, *bytes)));
        }
    }
    if let Some(b @ Budget::Bytes { bytes, .. }) = &m.flash {
        let w = program.weights.bytes.len() as u64;
        if w > *bytes {
            return Err(b.error(format!(
                "the model's weights need {w} bytes of flash, but the `flash` budget is {bytes} bytes: {} bytes over",
                w - bytes
            )));
        }
    }
    let options = CodegenOptions {
        weights_file: write_weights(&program, &m.name.to_string()),
        track_files: std::iter::once(path).chain(program.plan_source.file().map(Path::to_owned)).collect(),
        checked: cfg!(feature = "checked"),
    };
    let items = match &dynamic {
        Some(d) => codegen::dynamic::emit(d, &options),
        None => codegen::emit(&program, &options),
    };
    let (sram, flash) = (m.sram.as_ref().map(budget_tokens), m.flash.as_ref().map(budget_tokens));
    let checks = codegen::budget_assertions(&program, &m.name, sram.as_ref(), flash.as_ref());
    let (attrs, vis, name) = (&m.attrs, &m.vis, &m.name);
    Ok(quote! {
        #(#attrs)*
        #vis mod #name {
            #items
        }
        #checks
    })
}

/// The bounded dimension of `inputs:`, if any: one name, with the same range wherever it appears.
fn bound(m: &ModelInput) -> syn::Result<Option<Bound>> {
    let entries = m.inputs.iter().flat_map(|(_, entries)| entries);
    let mut found: Option<(Bound, &input::BoundedDim)> = None;
    for e in entries {
        for (axis, d) in &e.bounded {
            match &mut found {
                None => {
                    let b = Bound { symbol: d.symbol.clone(), min: d.min, max: d.max, axes: Vec::new() };
                    found = Some((b, d));
                }
                Some((b, first)) if first.symbol != d.symbol => {
                    return Err(syn::Error::new(
                        d.lit.span(),
                        format!("a second bounded dimension `{}` (the first is `{}`); sramfit supports one per model: fix the other to a number", d.symbol, b.symbol),
                    ))
                }
                Some((b, _)) if (b.min, b.max) != (d.min, d.max) => {
                    return Err(syn::Error::new(
                        d.lit.span(),
                        format!("`{}` is bounded {}..={} here but {}..={} before; give it one range", d.symbol, d.min, d.max, b.min, b.max),
                    ))
                }
                Some(_) => {}
            }
            if let Some((b, _)) = &mut found {
                b.axes.push((e.name.value(), *axis));
            }
        }
    }
    Ok(found.map(|(b, _)| b))
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
    match (arg, &m.sram, &m.flash, &m.inputs) {
        (Argument::Sram, Some(b), _, _) | (Argument::Flash, _, Some(b), _) => b.error(message),
        (Argument::Inputs, _, _, Some((span, _))) => syn::Error::new(*span, message),
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
    let file = dir.join(format!("sramfit-{module}-{:016x}.bin", h.finish()));
    if std::fs::metadata(&file).map(|m| m.len()).ok() != Some(p.weights.bytes.len() as u64) {
        std::fs::write(&file, &p.weights.bytes).ok()?;
    }
    Some(file)
}
