//! Parsing of the `model!` input:
//!
//! ```text
//! /// docs
//! pub mod name {
//!     path: "models/x.onnx",
//!     sram: 64 KiB,                 // or 65536, or any const expression of type usize
//!     flash: 1 MiB,                 // optional weight budget
//!     inputs: { "x": [1, 49, 10] }, // optional fixed input shapes
//! }
//! ```

use proc_macro2::{Span, TokenStream};
use quote::quote;
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
    /// Its dimensions.
    pub dims: Vec<usize>,
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
}

const OPTIONS: &str = "`path`, `sram`, `flash`, `inputs`, `optimize`";

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
        Ok(ModelInput { attrs, vis, name, path, sram, flash, inputs, optimize })
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
            other => {
                return Err(syn::Error::new(
                    key.span(),
                    format!("unknown rewrite `{other}`; the rewrites are `fuse_activations`, `in_place`, `fit_scratch`, `schedule`, `elide_concat`, `transpose` (each `true` or `false`)"),
                ))
            }
        }
        if !body.is_empty() {
            body.parse::<Token![,]>()?;
        }
    }
    Ok(o)
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
        let dims = dims_body
            .parse_terminated(LitInt::parse, Token![,])?
            .iter()
            .map(|d| d.base10_parse::<usize>())
            .collect::<syn::Result<Vec<_>>>()?;
        out.push(InputEntry { name, dims });
        if !body.is_empty() {
            body.parse::<Token![,]>()?;
        }
    }
    Ok(out)
}
