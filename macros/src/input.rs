//! Parsing of the `model!` input:
//!
//! ```text
//! /// docs
//! pub mod name {
//!     path: "models/x.onnx",
//!     sram: 64 KiB,                 // or 65536, or any const expression of type usize
//!     flash: 1 MiB,                 // optional weight budget
//!     inputs: { "x": [1, 49, 10] }, // optional fixed input shapes
//!     optimize: { in_place: false }, // optional: switch memory-saving rewrites off, or bound
//!                                   // tiling's extra multiply-accumulates: `{ tile: 5% }`
//!     io: arena,                    // optional: inputs and outputs in the arena (default `caller`),
//!                                   // or `arena { "image": caller }`: all but input `image`
//!     limits: { nodes: 200_000 },   // optional: raise a build-time resource limit
//!     target: "thumbv7em-none-eabihf", // optional: default, the triple rustc compiles for
//!     pools: { sram: 128 KiB, psram: 8 MiB in ".psram" }, // optional, instead of `sram`: memory
//!                                   // pools, each `NAME: SIZE` with an optional `in "SECTION"`
//! }
//! ```
//!
//! Units, dimensions, rewrite keys and limit keys are parsed by planner-core (`units`,
//! `request::Dim`, `Optimizations::set`, `Limits::set`): the macro only finds the tokens.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use sramfit_planner_core::import::limits::Limits;
use sramfit_planner_core::ir::Io;
use sramfit_planner_core::optimize::Optimizations;
use sramfit_planner_core::pools::PoolSpec;
use sramfit_planner_core::request::Dim;
use sramfit_planner_core::target::Target;
use sramfit_planner_core::units;
use syn::parse::discouraged::Speculative;
use syn::parse::{Parse, ParseStream};
use syn::{braced, bracketed, Attribute, Expr, Ident, LitBool, LitFloat, LitInt, LitStr, Token, Visibility};

/// A budget as written.
pub enum Budget {
    /// A number of bytes the macro evaluated (literal with an optional unit), and those tokens.
    Bytes { bytes: u64, tokens: TokenStream },
    /// A const expression only the compiler can evaluate.
    Expr(Expr),
}

impl Budget {
    /// An error pointing at the whole budget argument.
    pub fn error(&self, message: impl std::fmt::Display) -> syn::Error {
        match self {
            Budget::Bytes { tokens, .. } => syn::Error::new_spanned(tokens, message),
            Budget::Expr(e) => syn::Error::new_spanned(e, message),
        }
    }
}

/// One `"name": [dims]` entry of `inputs:`.
pub struct InputEntry {
    /// The input's name.
    pub name: LitStr,
    /// Its dimensions: numbers, or `"frames <= 98"`.
    pub dims: Vec<Dim>,
}

/// What precedes the options: the module's docs, visibility and name (also what a failed
/// expansion's placeholder module needs).
pub struct Header {
    /// Outer attributes (doc comments) for the module.
    pub attrs: Vec<Attribute>,
    /// The module's visibility.
    pub vis: Visibility,
    /// The module's name.
    pub name: Ident,
}

impl Header {
    /// Parses `#[attrs] vis mod name` and skips whatever follows (for the placeholder module of
    /// an input whose options do not parse).
    pub fn parse_leniently(input: ParseStream) -> syn::Result<Header> {
        let header = Header::parse_start(input)?;
        input.step(|cursor| {
            let mut rest = *cursor;
            while let Some((_, next)) = rest.token_tree() {
                rest = next;
            }
            Ok(((), rest))
        })?;
        Ok(header)
    }

    pub fn parse_start(input: ParseStream) -> syn::Result<Header> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        input.parse::<Token![mod]>()?;
        Ok(Header { attrs, vis, name: input.parse()? })
    }
}

/// The parsed macro input.
pub struct ModelInput {
    /// Docs, visibility and name of the module.
    pub header: Header,
    /// `path:`.
    pub path: LitStr,
    /// `sram:`.
    pub sram: Option<Budget>,
    /// `flash:`.
    pub flash: Option<Budget>,
    /// `inputs:` (the key's span, and the entries).
    pub inputs: Option<(Span, Vec<InputEntry>)>,
    /// `optimize:` (every rewrite on when absent).
    pub optimize: Optimizations,
    /// `io:` (`caller` when absent).
    pub io: Io,
    /// The inputs `io: arena { "name": caller }` leaves in the caller's buffers, and the span of
    /// the `io` key (for errors about them).
    pub caller_inputs: (Option<Span>, Vec<LitStr>),
    /// `limits:` (the key's span, and the limits; defaults when absent).
    pub limits: (Option<Span>, Limits),
    /// `target:` (the triple rustc compiles for when absent).
    pub target: Target,
    /// `pools:` (the key's span, and the pools; none when absent: one arena).
    pub pools: (Option<Span>, Vec<PoolSpec>),
}

const OPTIONS: &str = "`path`, `sram`, `flash`, `inputs`, `optimize`, `io`, `limits`, `target`, `pools`";

impl Parse for ModelInput {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let header = Header::parse_start(input)?;
        let body;
        braced!(body in input);
        let (mut path, mut sram, mut flash, mut inputs) = (None, None, None, None);
        let mut optimize = Optimizations::default();
        let mut io = Io::Caller;
        let mut caller_inputs = (None, Vec::new());
        let mut limits = (None, Limits::default());
        let mut target = None;
        let mut pools = (None, Vec::new());
        let mut seen: Vec<String> = Vec::new();
        while !body.is_empty() {
            let key: Ident = body.parse()?;
            let k = key.to_string();
            if seen.contains(&k) {
                return Err(syn::Error::new(key.span(), format!("option `{k}` is given twice; keep one")));
            }
            seen.push(k.clone());
            body.parse::<Token![:]>()?;
            match k.as_str() {
                "path" => path = Some(body.parse::<LitStr>()?),
                "sram" => sram = Some(parse_budget(&body, "sram")?),
                "flash" => flash = Some(parse_budget(&body, "flash")?),
                "inputs" => inputs = Some((key.span(), parse_inputs(&body)?)),
                "optimize" => optimize = parse_optimize(&body)?,
                "io" => (io, caller_inputs) = (parse_io(&body)?, (Some(key.span()), parse_io_ports(&body)?)),
                "limits" => limits = (Some(key.span()), parse_limits(&body)?),
                "target" => target = Some(Target::new(&body.parse::<LitStr>()?.value())),
                "pools" => pools = (Some(key.span()), parse_pools(&body)?),
                _ => {
                    return Err(syn::Error::new(key.span(), format!("unknown option `{k}`; the options are {OPTIONS}")))
                }
            }
            if !body.is_empty() {
                body.parse::<Token![,]>()?;
            }
        }
        let path = path.ok_or_else(|| {
            syn::Error::new(
                header.name.span(),
                "missing `path: \"model.onnx\"` (the ONNX file, relative to Cargo.toml)",
            )
        })?;
        // A proc macro runs inside rustc: its command line names the target being compiled for.
        let target = target.unwrap_or_else(|| Target::from_rustc_args(std::env::args()));
        Ok(ModelInput { header, path, sram, flash, inputs, optimize, io, caller_inputs, limits, target, pools })
    }
}

/// A number with an optional unit (`64 MiB`, `100_000`) as bytes (`bytes`) or a count, or the
/// error to report on its tokens.
fn parse_quantity(input: ParseStream, what: &str, bytes: bool) -> syn::Result<(u64, TokenStream)> {
    let lit: LitInt = input.parse()?;
    let unit: Option<Ident> = if input.peek(Ident) { Some(input.parse()?) } else { None };
    let tokens = quote!(#lit #unit);
    let n: u64 = lit.base10_parse()?;
    let unit_name = unit.as_ref().map(Ident::to_string).unwrap_or_default();
    let value = match bytes {
        true => units::bytes_of(n, &unit_name),
        false if unit.is_none() => Ok(n),
        false => Err(units::UnitError::UnknownUnit(unit_name)),
    };
    value.map(|v| (v, tokens.clone())).map_err(|e| {
        let message = match e {
            units::UnitError::UnknownUnit(u) if !bytes => format!("`{what}` is a count and takes no unit (`{u}`)"),
            units::UnitError::UnknownUnit(u) => format!("unknown unit `{u}` in `{what}`; use {}", units::unit_list()),
            units::UnitError::Overflow => format!("`{what}` does not fit in 64 bits"),
            units::UnitError::Malformed => format!("malformed `{what}`"),
        };
        match &unit {
            Some(u) => syn::Error::new(u.span(), message),
            None => syn::Error::new_spanned(&tokens, message),
        }
    })
}

/// `{ sram: 128 KiB, psram: 8 MiB in ".psram" }`: the memory pools, in order (the first gets the
/// hottest buffers), each a name, a size, and optionally the linker section of its static. What is
/// wrong with them beyond the syntax (a name twice, a zero size) planner-core's `check_pools` says.
fn parse_pools(input: ParseStream) -> syn::Result<Vec<PoolSpec>> {
    let body;
    braced!(body in input);
    let mut pools = Vec::new();
    while !body.is_empty() {
        let name: Ident = body.parse().map_err(|e| {
            syn::Error::new(e.span(), "expected a pool: `NAME: SIZE` or `NAME: SIZE in \".section\"`, e.g. `pools: { sram: 128 KiB, psram: 8 MiB in \".psram\" }`")
        })?;
        body.parse::<Token![:]>()?;
        let what = format!("pools: {name}");
        let (bytes, _) = parse_quantity(&body, &what, true)?;
        let section = match body.peek(Token![in]) {
            true => {
                body.parse::<Token![in]>()?;
                let section = body.parse::<LitStr>().map_err(|e| {
                    syn::Error::new(
                        e.span(),
                        format!("the section of pool `{name}` is a string: `{name}: .. in \".{name}\"`"),
                    )
                })?;
                Some(section.value())
            }
            false => None,
        };
        pools.push(PoolSpec { name: name.to_string(), bytes, section });
        if !body.is_empty() {
            body.parse::<Token![,]>()?;
        }
    }
    Ok(pools)
}

/// `{ fold_bytes: 64 MiB, nodes: 200_000 }`: raised (or lowered) build-time limits.
fn parse_limits(input: ParseStream) -> syn::Result<Limits> {
    let body;
    braced!(body in input);
    let mut limits = Limits::default();
    while !body.is_empty() {
        let key: Ident = body.parse()?;
        body.parse::<Token![:]>()?;
        let k = key.to_string();
        let Some(spec) = Limits::key(&k) else {
            let unknown = limits.set(&k, 0).unwrap_err();
            return Err(syn::Error::new(
                key.span(),
                format!("{unknown} (e.g. `limits: {{ nodes: 200_000, fold_bytes: 2 GiB }}`)"),
            ));
        };
        let (value, _) = parse_quantity(&body, &k, spec.bytes)?;
        limits.set(&k, value).map_err(|e| syn::Error::new(key.span(), e))?;
        if !body.is_empty() {
            body.parse::<Token![,]>()?;
        }
    }
    Ok(limits)
}

/// `65536`, `64 KiB`, `1 MiB`, `64 kB`, `1 MB`, `512 B`, or a const expression.
fn parse_budget(input: ParseStream, what: &str) -> syn::Result<Budget> {
    let fork = input.fork();
    if fork.peek(LitInt) {
        let (bytes, tokens) = parse_quantity(&fork, what, true)?;
        if fork.is_empty() || fork.peek(Token![,]) {
            if bytes == 0 {
                return Err(syn::Error::new_spanned(
                    &tokens,
                    format!("`{what}` budget is zero; give the bytes the model may use"),
                ));
            }
            input.advance_to(&fork);
            return Ok(Budget::Bytes { bytes, tokens });
        }
    }
    let expr: Expr = input.parse().map_err(|e| {
        syn::Error::new(
            e.span(),
            format!(
                "malformed `{what}` budget: expected bytes such as `65536`, `64 KiB`, `1 MiB`, or a const expression"
            ),
        )
    })?;
    if let Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(_) | syn::Lit::Float(_) | syn::Lit::Bool(_), .. }) = &expr {
        return Err(syn::Error::new_spanned(
            &expr,
            format!(
                "malformed `{what}` budget: expected bytes such as `65536`, `64 KiB`, `1 MiB`, or a const expression"
            ),
        ));
    }
    Ok(Budget::Expr(expr))
}

/// `{ fuse_activations: false, in_place: true, fit_scratch: false }`: switches for the memory-saving
/// rewrites (each defaults to on); `tile` also takes a bound on the multiply-accumulates it may add,
/// `tile: 5%`, and `tile: true` or a bound asks for tiling where the target puts speed first
/// (x86-64, AArch64: [`Optimizations::for_target`]).
fn parse_optimize(input: ParseStream) -> syn::Result<Optimizations> {
    let body;
    braced!(body in input);
    let mut o = Optimizations::default();
    while !body.is_empty() {
        let key: Ident = body.parse()?;
        body.parse::<Token![:]>()?;
        let name = key.to_string();
        if body.peek(LitFloat) {
            let percent: LitFloat = body.parse()?;
            return Err(syn::Error::new(
                percent.span(),
                "the bound on tiling's extra multiply-accumulates is a whole percentage, such as `tile: 5%`",
            ));
        }
        if body.peek(LitInt) {
            let percent: LitInt = body.parse()?;
            body.parse::<Token![%]>()?;
            if name != "tile" {
                let message = match Optimizations::default().set(&name, true) {
                    Err(unknown) => unknown,
                    Ok(()) => format!("`{name}` takes `true` or `false`; only `tile` also takes a bound on extra multiply-accumulates, such as `tile: 5%`"),
                };
                return Err(syn::Error::new(key.span(), message));
            }
            let bound = percent.base10_parse::<u32>()?;
            o.set_tile_bound(bound).map_err(|e| syn::Error::new(percent.span(), format!("{e}: use 0% to 100%")))?;
        } else {
            let on = body.parse::<LitBool>()?.value;
            o.set(&name, on).map_err(|e| {
                syn::Error::new(
                    key.span(),
                    format!("{e} (each `true` or `false`; `tile` also takes a bound such as `5%`)"),
                )
            })?;
        }
        if !body.is_empty() {
            body.parse::<Token![,]>()?;
        }
    }
    Ok(o)
}

/// `caller` (inputs and outputs are the caller's buffers, passed to `run`) or `arena` (they live in
/// the arena, planned with everything else, and are reached through `Arena` accessors).
fn parse_io(input: ParseStream) -> syn::Result<Io> {
    let value: Ident = input.parse()?;
    match value.to_string().as_str() {
        "caller" => Ok(Io::Caller),
        "arena" => Ok(Io::Arena),
        other => Err(syn::Error::new(
            value.span(),
            format!("unknown `io` placement `{other}`; use `caller` (inputs and outputs passed to `run`) or `arena` (they live in the arena: the smallest total RAM)"),
        )),
    }
}

/// After `io: arena`, an optional `{ "name": caller, ... }`: the inputs that stay in the caller's
/// buffers (passed to `run_in`).
fn parse_io_ports(input: ParseStream) -> syn::Result<Vec<LitStr>> {
    if !input.peek(syn::token::Brace) {
        return Ok(Vec::new());
    }
    let body;
    braced!(body in input);
    let mut ports = Vec::new();
    while !body.is_empty() {
        let name: LitStr = body.parse()?;
        body.parse::<Token![:]>()?;
        let place: Ident = body.parse()?;
        if place != "caller" {
            return Err(syn::Error::new(
                place.span(),
                format!("unknown placement `{place}` for input `{}`; the inputs named here stay in the caller's buffer: write `\"{}\": caller`", name.value(), name.value()),
            ));
        }
        ports.push(name);
        if !body.is_empty() {
            body.parse::<Token![,]>()?;
        }
    }
    Ok(ports)
}

/// `{ "name": [1, 2, 3], ... }`.
fn parse_inputs(input: ParseStream) -> syn::Result<Vec<InputEntry>> {
    let body;
    braced!(body in input);
    let mut out = Vec::new();
    while !body.is_empty() {
        let name: LitStr = body.parse()?;
        body.parse::<Token![:]>()?;
        let dims_body;
        bracketed!(dims_body in body);
        let mut dims = Vec::new();
        for d in dims_body.parse_terminated(syn::Lit::parse, Token![,])?.iter() {
            match d {
                syn::Lit::Int(i) => dims.push(Dim::Fixed(i.base10_parse::<usize>()?)),
                syn::Lit::Str(s) => dims.push(match Dim::parse(&s.value()) {
                    Ok(d @ Dim::Bounded { .. }) => d,
                    Ok(Dim::Fixed(_)) => {
                        return Err(syn::Error::new(
                            s.span(),
                            "a fixed dimension is a number, not a string: write it without quotes",
                        ))
                    }
                    Err(message) => return Err(syn::Error::new(s.span(), message)),
                }),
                other => {
                    return Err(syn::Error::new_spanned(
                        other,
                        "expected a dimension: a number, or a bounded dimension such as \"frames <= 98\"",
                    ))
                }
            }
        }
        out.push(InputEntry { name, dims });
        if !body.is_empty() {
            body.parse::<Token![,]>()?;
        }
    }
    Ok(out)
}
