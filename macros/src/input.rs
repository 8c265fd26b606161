//! Parsing of the `model!` input:
//!
//! ```text
//! /// docs
//! pub mod name {
//!     path: "models/x.onnx",
//!     sram: 64 KiB,                 // or 65536, or any const expression of type usize
//!     flash: 1 MiB,                 // optional weight budget
//!     inputs: { "x": [1, 49, 10] }, // optional fixed input shapes
//!     optimize: { in_place: false }, // optional: switch memory-saving rewrites off
//!     io: arena,                    // optional: inputs and outputs in the arena (default `caller`)
//! }
//! ```

use proc_macro2::{Span, TokenStream};
use quote::quote;
use sramfit_planner_core::ir::Io;
use sramfit_planner_core::optimize::Optimizations;
use syn::parse::discouraged::Speculative;
use syn::parse::{Parse, ParseStream};
use syn::{braced, bracketed, Attribute, Expr, Ident, LitBool, LitInt, LitStr, Token, Visibility};

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
    /// Its dimensions (a bounded one at its largest length).
    pub dims: Vec<usize>,
    /// Its bounded dimensions (`"frames <= 98"`): axis and bound.
    pub bounded: Vec<(usize, BoundedDim)>,
}

/// A dimension written `"NAME <= MAX"` or `"MIN <= NAME <= MAX"`.
#[derive(Clone)]
pub struct BoundedDim {
    /// The string literal, for error spans.
    pub lit: LitStr,
    /// The dimension's name.
    pub symbol: String,
    /// Smallest length (1 when not written).
    pub min: usize,
    /// Largest length.
    pub max: usize,
}

/// The parsed macro input.
pub struct ModelInput {
    /// Outer attributes (doc comments) for the module.
    pub attrs: Vec<Attribute>,
    /// The module's visibility.
    pub vis: Visibility,
    /// The module's name.
    pub name: Ident,
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
}

const OPTIONS: &str = "`path`, `sram`, `flash`, `inputs`, `optimize`, `io`";

impl Parse for ModelInput {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        input.parse::<Token![mod]>()?;
        let name: Ident = input.parse()?;
        let body;
        braced!(body in input);
        let (mut path, mut sram, mut flash, mut inputs) = (None, None, None, None);
        let mut optimize = Optimizations::default();
        let mut io = Io::Caller;
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
                "io" => io = parse_io(&body)?,
                _ => {
                    return Err(syn::Error::new(key.span(), format!("unknown option `{k}`; the options are {OPTIONS}")))
                }
            }
            if !body.is_empty() {
                body.parse::<Token![,]>()?;
            }
        }
        let path = path.ok_or_else(|| {
            syn::Error::new(name.span(), "missing `path: \"model.onnx\"` (the ONNX file, relative to Cargo.toml)")
        })?;
        Ok(ModelInput { attrs, vis, name, path, sram, flash, inputs, optimize, io })
    }
}

/// `65536`, `64 KiB`, `1 MiB`, `64 kB`, `1 MB`, `512 B`, or a const expression.
fn parse_budget(input: ParseStream, what: &str) -> syn::Result<Budget> {
    let fork = input.fork();
    if let Ok(lit) = fork.parse::<LitInt>() {
        let unit: Option<Ident> = if fork.peek(Ident) { fork.parse().ok() } else { None };
        if fork.is_empty() || fork.peek(Token![,]) {
            let tokens = quote!(#lit #unit);
            let span = lit.span();
            let n: u64 = lit.base10_parse()?;
            let scale: u64 = match unit.as_ref().map(|u| u.to_string()).as_deref() {
                None | Some("B") | Some("bytes") => 1,
                Some("KiB") => 1 << 10,
                Some("MiB") => 1 << 20,
                Some("kB") | Some("KB") => 1000,
                Some("MB") => 1_000_000,
                Some(other) => {
                    return Err(syn::Error::new(
                        unit.as_ref().map_or(span, Ident::span),
                        format!("unknown unit `{other}` in `{what}`; use bytes, B, KiB, MiB, kB or MB"),
                    ))
                }
            };
            let bytes = n
                .checked_mul(scale)
                .ok_or_else(|| syn::Error::new_spanned(&tokens, format!("`{what}` budget does not fit in 64 bits")))?;
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
/// rewrites (each defaults to on).
fn parse_optimize(input: ParseStream) -> syn::Result<Optimizations> {
    let body;
    braced!(body in input);
    let mut o = Optimizations::default();
    while !body.is_empty() {
        let key: Ident = body.parse()?;
        body.parse::<Token![:]>()?;
        let on = body.parse::<LitBool>()?.value;
        match key.to_string().as_str() {
            "fuse_activations" => o.fuse_activations = on,
            "in_place" => o.in_place = on,
            "fit_scratch" => o.fit_scratch = on,
            "schedule" => o.schedule = on,
            "elide_concat" => o.elide_concat = on,
            "transpose" => o.transpose = on,
            "pack_weights" => o.pack_weights = on,
            other => {
                return Err(syn::Error::new(
                    key.span(),
                    format!("unknown rewrite `{other}`; the rewrites are `fuse_activations`, `in_place`, `fit_scratch`, `schedule`, `elide_concat`, `transpose`, `pack_weights` (each `true` or `false`)"),
                ))
            }
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

/// `"frames <= 98"` or `"1 <= frames <= 98"`.
fn parse_bounded(lit: &LitStr) -> syn::Result<BoundedDim> {
    let text = lit.value();
    let parts: Vec<&str> = text.split("<=").map(str::trim).collect();
    let is_name = |s: &str| {
        s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let number = |s: &str| s.replace('_', "").parse::<usize>().ok().filter(|&v| v > 0);
    let (min, symbol, max) = match parts.as_slice() {
        [name, max] if is_name(name) => (Some(1), *name, number(max)),
        [min, name, max] if is_name(name) => (number(min), *name, number(max)),
        [name] if is_name(name) => {
            return Err(syn::Error::new(
                lit.span(),
                format!("dimension `{name}` has no bound: sramfit plans memory for the largest length; write \"{name} <= MAX\", e.g. \"{name} <= 98\""),
            ))
        }
        _ => (None, "", None),
    };
    match (min, max) {
        (Some(min), Some(max)) if min <= max => Ok(BoundedDim { lit: lit.clone(), symbol: symbol.to_string(), min, max }),
        _ => Err(syn::Error::new(
            lit.span(),
            format!("malformed bounded dimension \"{text}\": write \"NAME <= MAX\" or \"MIN <= NAME <= MAX\" with NAME an identifier and 1 <= MIN <= MAX, e.g. \"frames <= 98\""),
        )),
    }
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
        let (mut dims, mut bounded) = (Vec::new(), Vec::new());
        for (axis, d) in dims_body.parse_terminated(syn::Lit::parse, Token![,])?.iter().enumerate() {
            match d {
                syn::Lit::Int(i) => dims.push(i.base10_parse::<usize>()?),
                syn::Lit::Str(s) => {
                    let b = parse_bounded(s)?;
                    dims.push(b.max);
                    bounded.push((axis, b));
                }
                other => {
                    return Err(syn::Error::new_spanned(
                        other,
                        "expected a dimension: a number, or a bounded dimension such as \"frames <= 98\"",
                    ))
                }
            }
        }
        out.push(InputEntry { name, dims, bounded });
        if !body.is_empty() {
            body.parse::<Token![,]>()?;
        }
    }
    Ok(out)
}
