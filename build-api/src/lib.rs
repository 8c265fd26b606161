//! Build-script API for sramfit: compile an ONNX model in `build.rs` into a formatted Rust file in
//! `OUT_DIR`, for crates that prefer generated files to the `sramfit::model!` macro.
//!
//! The model goes through the same planner, the same checks and the same code generation as the
//! macro; only the packaging differs.
//!
//! ```no_run
//! // in build.rs's `fn main`:
//! sramfit_build::Model::new("models/kws.onnx") // relative to CARGO_MANIFEST_DIR
//!     .sram(64 * 1024)                          // optional arena budget, in bytes
//!     .module("kws")                            // default: the file stem, sanitised
//!     .write("kws.rs")                          // into OUT_DIR
//!     .unwrap_or_else(|e| e.fail());            // cargo:warning lines, exit status 1
//! ```
//!
//! and in the crate (which depends on `sramfit` for the kernels the generated code calls):
//!
//! ```ignore
//! include!(concat!(env!("OUT_DIR"), "/kws.rs"));
//! ```
//!
//! The written file holds `pub mod kws { … }` with exactly the items `model!` generates (see the
//! README's contract table), followed by const assertions of the budgets. The weights are written
//! next to it (`kws.weights.bin`) and embedded with `include_bytes!`. `write` prints
//! `cargo:rerun-if-changed=<model>`, so cargo reruns the build script when the model changes.

use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use proc_macro2::{Ident, Literal, TokenStream};
use quote::quote;
use sramfit_planner_core::codegen::{self, CodegenOptions};
use sramfit_planner_core::compile::{self, Compiled};
use sramfit_planner_core::error::FrontEnd;
use sramfit_planner_core::ir::Io;
use sramfit_planner_core::request::{Dim, InputSpec, Request};
use sramfit_planner_core::target::Target;

pub use sramfit_planner_core::error::CompileError;
pub use sramfit_planner_core::import::limits::Limits;
pub use sramfit_planner_core::optimize::Optimizations;

/// A model to compile in a build script: the ONNX file and the options of `sramfit::model!`.
///
/// Built with [`Model::new`] and the chained setters; [`Model::write`] does the work. Every
/// setter mirrors an option of the macro (README: "Build-script API").
#[derive(Clone, Debug)]
#[must_use = "a Model does nothing until `write` is called"]
pub struct Model {
    request: Request,
    /// Option errors found by the setters, reported by `write` / `to_source`.
    bad_options: Vec<CompileError>,
    module: Option<String>,
    out_dir: Option<PathBuf>,
}

impl Model {
    /// The ONNX model at `path`: absolute, or relative to the crate's `CARGO_MANIFEST_DIR` (the
    /// directory of its `Cargo.toml`; the current directory when that variable is not set).
    ///
    /// It is compiled for the target cargo builds the crate for (the `TARGET` variable of build
    /// scripts; the host outside one), with the plan file beside the model when it matches.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        let given: PathBuf = path.into();
        let resolved = match given.is_absolute() {
            true => given.clone(),
            false => std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from).unwrap_or_default().join(&given),
        };
        let mut request = Request::new(resolved);
        request.shown_path = given;
        request.use_plan_file = true;
        if let Ok(triple) = std::env::var("TARGET") {
            request.target = Target::new(&triple);
        }
        Model { request, bad_options: Vec::new(), module: None, out_dir: None }
    }

    /// The arena budget in bytes: a plan that needs more is an [`Error::Compile`] carrying
    /// [`CompileError::SramBudget`] and its report (bytes over, lower bound, peak step, what to
    /// change).
    pub fn sram(mut self, bytes: u64) -> Self {
        self.request.sram = Some(bytes);
        self
    }

    /// A memory pool (`pools: { NAME: SIZE in "SECTION" }` in `model!`), instead of [`Model::sram`]:
    /// call once per pool, two or more, in order (the first gets the hottest buffers); `section`
    /// is the linker section of its static. A pool that overflows is
    /// [`CompileError::PoolBudget`] naming it.
    pub fn pool(mut self, name: &str, bytes: u64, section: Option<&str>) -> Self {
        let section = section.map(str::to_owned);
        self.request.pools.push(sramfit_planner_core::pools::PoolSpec { name: name.to_owned(), bytes, section });
        self
    }

    /// The weight budget in bytes: weights that need more are [`CompileError::FlashBudget`].
    pub fn flash(mut self, bytes: u64) -> Self {
        self.request.flash = Some(bytes);
        self
    }

    /// Fixes the shape of graph input `name` (needed when the model declares symbolic dimensions).
    /// Call once per input.
    pub fn input(mut self, name: &str, dims: &[usize]) -> Self {
        self.request.inputs.push(InputSpec::fixed(name, dims));
        self
    }

    /// The shape of graph input `name` written as in `model!`'s `inputs:`, one string per
    /// dimension: a number, or one bounded dynamic dimension (`"frames <= 98"`,
    /// `"4 <= frames <= 98"`), e.g. `.input_dims("input", &["1", "40", "frames <= 98"])`.
    pub fn input_dims(mut self, name: &str, dims: &[&str]) -> Self {
        match dims.iter().map(|d| Dim::parse(d)).collect::<Result<Vec<_>, _>>() {
            Ok(dims) => self.request.inputs.push(InputSpec { name: name.to_owned(), dims }),
            Err(message) => self.bad_options.push(CompileError::BadOption { option: "inputs", message }),
        }
        self
    }

    /// Switches the rewrite `key` on or off (`optimize: { key: on }` in `model!`; the keys are
    /// [`Optimizations::REWRITES`], all on by default but `overlap_rows`), e.g. `.optimize("in_place", false)`.
    pub fn optimize(mut self, key: &str, on: bool) -> Self {
        if let Err(message) = self.request.optimizations.set(key, on) {
            self.bad_options.push(CompileError::BadOption { option: "optimize", message });
        }
        self
    }

    /// Patch-based execution within `percent` extra multiply-accumulates (`optimize: { tile: 5% }`
    /// in `model!`; default 10%), e.g. `.tile_extra_macs(5)`.
    pub fn tile_extra_macs(mut self, percent: u32) -> Self {
        if let Err(message) = self.request.optimizations.set_tile_bound(percent) {
            self.bad_options.push(CompileError::BadOption { option: "optimize", message });
        }
        self
    }

    /// Sets the build-time limit `key` (`limits: { key: value }` in `model!`; the keys are
    /// [`Limits::KEYS`], bytes or counts), e.g. `.limit("fold_bytes", 4 << 30)`.
    pub fn limit(mut self, key: &str, value: u64) -> Self {
        if let Err(message) = self.request.limits.set(key, value) {
            self.bad_options.push(CompileError::BadOption { option: "limits", message });
        }
        self
    }

    /// The target triple to compile for (default: cargo's `TARGET` in a build script, else the
    /// host): the plan's scratch and stack figures are that target's.
    pub fn target(mut self, triple: &str) -> Self {
        self.request.target = Target::new(triple);
        self
    }

    /// Puts the graph inputs and outputs into the arena (`io: arena` in `model!`): the module then
    /// has `run_in(&mut Arena)`, accessors on `Arena` for each input and output, and `shared()`.
    pub fn io_in_arena(mut self) -> Self {
        self.request.io = Io::Arena;
        self
    }

    /// With [`Model::io_in_arena`], leaves graph input `name` in the caller's buffer (`io: arena {
    /// "name": caller }` in `model!`; a sensor's DMA target): `run_in` then takes it after the
    /// arena, and the arena has no room or accessor for it. Once per input.
    pub fn caller_input(mut self, name: &str) -> Self {
        self.request.caller_inputs.push(name.to_owned());
        self
    }

    /// The name of the generated module (a Rust identifier). Default: the model's file stem,
    /// lower-cased, with every character that cannot be in an identifier replaced by `_`.
    pub fn module(mut self, name: &str) -> Self {
        self.module = Some(name.to_owned());
        self
    }

    /// Writes into `dir` instead of `OUT_DIR` (for tools and tests that run outside a build script).
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.out_dir = Some(dir.into());
        self
    }

    /// Compiles the model and writes the module to `file` in `OUT_DIR` (or [`Model::out_dir`]), the
    /// weights next to it with the extension `weights.bin`; returns the path of the written file.
    ///
    /// Prints `cargo:rerun-if-changed=<model path>` first (so a build that fails because the file
    /// is missing or broken reruns once it is fixed). Files whose content is unchanged are not
    /// rewritten, so an unchanged model does not make cargo recompile the crate.
    pub fn write(&self, file: impl AsRef<Path>) -> Result<PathBuf, Error> {
        let dir = match &self.out_dir {
            Some(d) => d.clone(),
            None => PathBuf::from(std::env::var_os("OUT_DIR").ok_or(Error::NoOutDir)?),
        };
        let target = dir.join(file.as_ref());
        println!("cargo:rerun-if-changed={}", self.request.path.display());
        let module = self.module_ident()?;
        let compiled = self.compile()?;
        if let Some(plan) = compiled.program().plan_source.file() {
            println!("cargo:rerun-if-changed={}", plan.display());
        }
        let weights = target.with_extension("weights.bin");
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::Io { path: parent.to_owned(), error: e })?;
        }
        write_if_changed(&weights, &compiled.program().weights.bytes)?;
        let source = self.render(&compiled, &module, Some(&weights))?;
        write_if_changed(&target, source.as_bytes())?;
        Ok(target)
    }

    /// The text [`Model::write`] would write, with the weights inline as a byte-string literal
    /// instead of `include_bytes!` of a file (nothing is written, nothing printed).
    pub fn to_source(&self) -> Result<String, Error> {
        let module = self.module_ident()?;
        let compiled = self.compile()?;
        self.render(&compiled, &module, None)
    }

    /// The model path as given, for messages (stable across machines).
    fn given(&self) -> String {
        self.request.shown_path.display().to_string()
    }

    fn module_ident(&self) -> Result<Ident, Error> {
        let name = match &self.module {
            Some(m) => m.clone(),
            None => sanitise(&self.request.shown_path.file_stem().map(|s| s.to_string_lossy()).unwrap_or_default()),
        };
        syn::parse_str::<Ident>(&name).map_err(|_| Error::ModuleName { name })
    }

    /// Imports, plans, verifies and checks the budgets (the driver does all of it).
    fn compile(&self) -> Result<Compiled, Error> {
        let compile_error = |error| Error::Compile { model: self.given(), error: Box::new(error) };
        if let Some(bad) = self.bad_options.first() {
            return Err(compile_error(bad.clone()));
        }
        compile::compile_model(&self.request).map_err(compile_error)
    }

    /// `pub mod name { items }` plus the budget assertions, formatted, under a header comment.
    fn render(&self, compiled: &Compiled, module: &Ident, weights: Option<&Path>) -> Result<String, Error> {
        let options = CodegenOptions { weights_file: weights.map(Path::to_owned), ..Default::default() };
        let items = compiled.emit(&options);
        let literal = |b: u64| {
            let l = Literal::u64_unsuffixed(b);
            quote!(#l)
        };
        let (sram, flash) = (self.request.sram.map(literal), self.request.flash.map(literal));
        let checks = codegen::budget_assertions(compiled.program(), module, sram.as_ref(), flash.as_ref());
        let tokens: TokenStream = quote! {
            pub mod #module {
                #items
            }
            #checks
        };
        let file = syn::parse2::<syn::File>(tokens).map_err(|e| Error::Format { message: e.to_string() })?;
        Ok(format!(
            "// @generated by sramfit-build from `{}`: do not edit (change the model or build.rs instead).\n\n{}",
            self.given(),
            prettyplease::unparse(&file)
        ))
    }
}

/// A module name from a file stem: lower-cased, non-identifier characters as `_`, `model_` before
/// a leading digit, `_` after a keyword.
fn sanitise(stem: &str) -> String {
    let mut s: String =
        stem.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
    if s.is_empty() || s.chars().all(|c| c == '_') {
        return "model".into();
    }
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert_str(0, "model_");
    }
    if syn::parse_str::<Ident>(&s).is_err() {
        s.push('_');
    }
    s
}

/// Writes `bytes` to `path` unless the file already holds exactly them.
fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    std::fs::write(path, bytes).map_err(|e| Error::Io { path: path.to_owned(), error: e })
}

/// Why [`Model::write`] failed. `Display` gives the whole message (several lines for budget
/// overflows); [`Error::fail`] hands it to cargo and ends the build script.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The model did not compile: missing or invalid file, unsupported operators, symbolic input
    /// dimensions not fixed with [`Model::input`], over a budget or a limit, a malformed option…
    Compile {
        /// The model path as given to [`Model::new`].
        model: String,
        /// The driver's error (boxed: it is large).
        error: Box<CompileError>,
    },
    /// The module name (given to [`Model::module`], or derived from the file stem) is not a Rust
    /// identifier.
    ModuleName {
        /// The name.
        name: String,
    },
    /// `OUT_DIR` is not set (not running in a build script) and no [`Model::out_dir`] was given.
    NoOutDir,
    /// Writing an output file failed.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// The generated code did not parse for formatting (a bug in sramfit: please report it).
    Format {
        /// The parser's message.
        message: String,
    },
}

impl Error {
    /// Reports the error to cargo and ends the build script: prints every non-empty line of the
    /// message as `cargo:warning=…` (cargo shows them even though the script fails) and exits with
    /// status 1.
    pub fn fail(self) -> ! {
        let mut out = std::io::stdout().lock();
        for line in self.warning_lines() {
            let _ = writeln!(out, "cargo:warning={line}");
        }
        let _ = out.flush();
        std::process::exit(1)
    }

    /// The `cargo:warning=` payloads of [`Error::fail`].
    fn warning_lines(&self) -> Vec<String> {
        self.to_string().lines().filter(|l| !l.trim().is_empty()).map(str::to_owned).collect()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Compile { model, error } => match &**error {
                // These name the model themselves.
                CompileError::NotFound { .. }
                | CompileError::NotAFile { .. }
                | CompileError::Io { .. }
                | CompileError::InvalidModel { .. } => write!(f, "sramfit: {}", error.render(FrontEnd::BuildScript)),
                other => write!(f, "sramfit: {model}: {}", other.render(FrontEnd::BuildScript)),
            },
            Error::ModuleName { name } => write!(
                f,
                "sramfit: `{name}` is not a valid module name\n  = help: pass a Rust identifier to `Model::module`, e.g. `.module(\"kws\")`"
            ),
            Error::NoOutDir => write!(
                f,
                "sramfit: OUT_DIR is not set\n  = help: call `Model::write` from a build script (build.rs), or choose a directory with `Model::out_dir`"
            ),
            Error::Io { path, error } => write!(f, "sramfit: cannot write {}: {error}", path.display()),
            Error::Format { message } => write!(
                f,
                "sramfit: internal error: the generated code does not parse ({message}); please report this bug"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Compile { error, .. } => Some(&**error),
            Error::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(rel: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
    }

    /// A fresh scratch directory for one test.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sramfit-build-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn module_names_from_file_stems() {
        assert_eq!(sanitise("kws"), "kws");
        assert_eq!(sanitise("KWS-v2.small"), "kws_v2_small");
        assert_eq!(sanitise("3x3"), "model_3x3");
        assert_eq!(sanitise("type"), "type_");
        assert_eq!(sanitise("self"), "self_");
        assert_eq!(sanitise("--"), "model");
        assert_eq!(sanitise(""), "model");
        assert_eq!(Model::new("models/Tiny Net.onnx").module_ident().unwrap().to_string(), "tiny_net");
    }

    #[test]
    fn invalid_module_name_is_an_error() {
        let e = Model::new("m.onnx").module("not a name").module_ident().unwrap_err();
        assert!(matches!(&e, Error::ModuleName { name } if name == "not a name"), "{e:?}");
        assert!(e.to_string().contains("Model::module"), "{e}");
    }

    #[test]
    fn writes_module_and_weights_deterministically() {
        let dir = scratch("write");
        let model = Model::new(fixture("ui-tests/models/tiny.onnx")).sram(1 << 20).flash(1 << 20).out_dir(&dir);
        let written = model.write("gen/tiny.rs").unwrap();
        assert_eq!(written, dir.join("gen/tiny.rs"));
        let source = std::fs::read_to_string(&written).unwrap();
        assert!(source.starts_with("// @generated by sramfit-build"), "{source}");
        assert!(source.contains("pub mod tiny {"), "{source}");
        assert!(source.contains("pub fn run("), "{source}");
        assert!(source.contains("include_bytes!"), "{source}");
        assert!(source.contains("tiny::ARENA_BYTES <= (1048576)"), "{source}");
        assert!(source.contains("tiny::WEIGHT_BYTES <= (1048576)"), "{source}");
        let compiled = model.compile().unwrap();
        assert_eq!(std::fs::read(dir.join("gen/tiny.weights.bin")).unwrap(), compiled.program().weights.bytes);
        // Same model, same options: same file, byte for byte.
        model.write("gen/tiny.rs").unwrap();
        assert_eq!(std::fs::read_to_string(&written).unwrap(), source);
        // The generated file parses as Rust.
        syn::parse_file(&source).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn to_source_inlines_the_weights() {
        let source = Model::new(fixture("ui-tests/models/tiny.onnx")).module("net").to_source().unwrap();
        assert!(source.contains("pub mod net {"), "{source}");
        assert!(!source.contains("include_bytes!"), "{source}");
        assert!(!source.contains("ARENA_BYTES <= ("), "no budget, no assertion: {source}");
        syn::parse_file(&source).unwrap();
    }

    #[test]
    fn pools_give_one_static_each_and_name_the_one_that_overflows() {
        let model = Model::new(fixture("tests/models/branch_merge.onnx")).module("net");
        let source =
            model.clone().pool("fast", 9 << 10, None).pool("slow", 1 << 20, Some(".psram")).to_source().unwrap();
        for item in
            ["pub const POOL_FAST_BYTES", "static POOL_SLOW", "#[link_section = \".psram\"]", "pub struct Arena<'a>"]
        {
            assert!(source.contains(item), "missing `{item}`:\n{source}");
        }
        let e = model.pool("fast", 4 << 10, None).pool("slow", 16 << 10, None).to_source().unwrap_err();
        assert!(e.to_string().contains("pool `slow` needs 24576 bytes"), "{e}");
    }

    #[test]
    fn io_in_arena_generates_the_accessors() {
        let source = Model::new(fixture("ui-tests/models/chain.onnx")).module("net").io_in_arena().to_source().unwrap();
        for item in ["pub fn inputs_mut", "pub fn outputs", "pub fn shared", "pub fn run_in(arena: &mut Arena)"] {
            assert!(source.contains(item), "missing `{item}`:\n{source}");
        }
        assert!(!source.contains("pub fn run_dyn"), "{source}");
    }

    #[test]
    fn over_sram_budget_carries_the_report() {
        let dir = scratch("sram");
        let e = Model::new(fixture("ui-tests/models/chain.onnx")).sram(8).out_dir(&dir).write("chain.rs").unwrap_err();
        let Error::Compile { error, .. } = &e else { panic!("{e:?}") };
        let CompileError::SramBudget { needed, budget, report } = &**error else { panic!("{e:?}") };
        assert_eq!(*budget, 8);
        assert!(*needed > 8);
        assert!(report.contains("bytes over"), "{report}");
        let message = e.to_string();
        assert!(message.starts_with("sramfit: "), "{message}");
        assert!(message.contains("lower bound"), "{message}");
        let lines = e.warning_lines();
        assert!(lines.len() > 2, "{lines:?}");
        assert!(lines.iter().all(|l| !l.trim().is_empty() && !l.contains('\n')), "{lines:?}");
        assert!(!dir.join("chain.rs").exists(), "nothing written on error");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn over_flash_budget_is_an_error() {
        let e = Model::new(fixture("ui-tests/models/tiny.onnx")).flash(1).to_source().unwrap_err();
        assert!(
            matches!(&e, Error::Compile { error, .. } if matches!(**error, CompileError::FlashBudget { budget: 1, .. })),
            "{e:?}"
        );
        assert!(e.to_string().contains("bytes of flash, but the `.flash(..)` budget is 1 bytes"), "{e}");
    }

    #[test]
    fn missing_model_names_the_given_path() {
        let e = Model::new("no/such/model.onnx").to_source().unwrap_err();
        assert!(
            matches!(&e, Error::Compile { error, .. } if matches!(**error, CompileError::NotFound { .. })),
            "{e:?}"
        );
        let message = e.to_string();
        assert!(message.starts_with("sramfit: model file not found: no/such/model.onnx"), "{message}");
        assert!(message.contains("relative path in `Model::new`"), "{message}");
        assert!(std::error::Error::source(&e).is_some());
    }

    #[test]
    fn symbolic_dimension_suggests_input() {
        let e = Model::new(fixture("ui-tests/models/symbolic.onnx")).to_source().unwrap_err();
        assert!(
            matches!(&e, Error::Compile { error, .. } if matches!(**error, CompileError::SymbolicDim { .. })),
            "{e:?}"
        );
        let message = e.to_string();
        assert!(message.contains("fix it in build.rs with: .input(\"input\", &[1, 4, 16, 16])"), "{message}");
        assert!(message.contains(r#".input_dims("input", &["batch <= MAX", "4", "16", "16"])"#), "{message}");
        assert!(!message.contains("in the macro"), "{message}");
    }

    #[test]
    fn no_out_dir_is_an_error() {
        if std::env::var_os("OUT_DIR").is_some() {
            return; // only meaningful outside a build script
        }
        let e = Model::new(fixture("ui-tests/models/tiny.onnx")).write("tiny.rs").unwrap_err();
        assert!(matches!(e, Error::NoOutDir), "{e:?}");
    }
}

#[cfg(test)]
mod request_tests {
    use super::*;

    fn fixture(rel: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
    }

    #[test]
    fn bounded_dimension_and_rewrite_switches() {
        let model = Model::new(fixture("tests/models/dynamic/strided_conv.onnx"))
            .module("net")
            .input_dims("input", &["1", "8", "frames <= 40"])
            .optimize("in_place", false)
            .optimize("fuse_activations", false);
        let source = model.to_source().unwrap();
        for item in ["pub const MAX_LEN: usize = 40", "pub fn run_dyn(", "pub const fn output_lens("] {
            assert!(source.contains(item), "missing `{item}`:\n{source}");
        }
        let program = model.compile().unwrap().into_program();
        let (o, applied) = program.optimizations;
        assert!(!o.in_place && !o.fuse_activations && o.elide_concat, "{o:?}");
        assert_eq!((applied.in_place_steps, applied.fused_activations), (0, 0));
        let on = Model::new(fixture("tests/models/dynamic/strided_conv.onnx")).input_dims("input", &["1", "8", "40"]);
        let applied = on.compile().unwrap().into_program().optimizations.1;
        assert!(applied.fused_activations + applied.in_place_steps > 0, "the switches changed something: {applied:?}");
    }

    #[test]
    fn bounded_dimension_with_io_in_arena() {
        let source = Model::new(fixture("tests/models/dynamic/conv1d_gap.onnx"))
            .input_dims("input", &["1", "40", "frames <= 12"])
            .io_in_arena()
            .to_source()
            .unwrap();
        for item in ["pub fn run_in(", "frames: usize", "pub fn inputs_mut(", "pub fn shared("] {
            assert!(source.contains(item), "missing `{item}`:\n{source}");
        }
        assert!(!source.contains("pub fn run_dyn"), "{source}");
    }

    #[test]
    fn malformed_options_are_errors_naming_the_option() {
        let e = Model::new(fixture("ui-tests/models/tiny.onnx")).optimize("in_plaice", false).to_source().unwrap_err();
        assert!(
            e.to_string().contains("`optimize`: unknown rewrite `in_plaice`; the rewrites are `fuse_activations`"),
            "{e}"
        );
        let e = Model::new(fixture("ui-tests/models/tiny.onnx")).tile_extra_macs(101).to_source().unwrap_err();
        assert!(e.to_string().contains("`optimize`: a bound of 101% extra multiply-accumulates"), "{e}");
        Model::new(fixture("ui-tests/models/chain.onnx")).tile_extra_macs(3).to_source().unwrap();
        let e = Model::new(fixture("ui-tests/models/tiny.onnx")).limit("fold", 1).to_source().unwrap_err();
        assert!(e.to_string().contains("`limits`: unknown limit `fold`"), "{e}");
        let e = Model::new(fixture("ui-tests/models/tiny.onnx")).input_dims("input", &["n"]).to_source().unwrap_err();
        assert!(e.to_string().contains("dimension `n` has no bound"), "{e}");
    }

    #[test]
    fn limits_are_raisable_and_name_the_setter() {
        let e = Model::new(fixture("ui-tests/models/chain.onnx")).limit("nodes", 1).to_source().unwrap_err();
        let message = e.to_string();
        assert!(message.contains("over the `nodes` limit of 1"), "{message}");
        assert!(message.contains(".limit(\"nodes\", "), "{message}");
        Model::new(fixture("ui-tests/models/chain.onnx")).limit("nodes", 1000).to_source().unwrap();
    }

    #[test]
    fn target_defaults_to_cargos_and_can_be_set() {
        let m = Model::new("m.onnx").target("thumbv7em-none-eabihf");
        assert_eq!(m.request.target, Target::new("thumbv7em-none-eabihf"));
        let expected = std::env::var("TARGET").map_or_else(|_| Target::host(), |t| Target::new(&t));
        assert_eq!(Model::new("m.onnx").request.target, expected);
    }
}
