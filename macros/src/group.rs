//! `models!`: several models that never run at the same time, in one arena.
//!
//! ```text
//! /// docs
//! pub mod sensing {
//!     /// docs
//!     pub mod kws { path: "kws.onnx", sram: 64 KiB }
//!     pub mod vww { path: "vww.onnx" }
//! }
//! ```
//!
//! Every member is a `model!` input, compiled on its own; the group module gets one `Arena` of
//! the largest member's `ARENA_BYTES` and one static arena behind one busy flag, which every
//! member's `run`, `run_typed` and `shared()` take. Sizes are known here, in one expansion: no
//! member depends on another's constants across macro invocations.

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_planner_core::codegen;
use sramfit_planner_core::ir::Io;
use syn::parse::{Parse, ParseStream};
use syn::{braced, Token};

use crate::input::{Header, ModelInput};

/// The parsed `models!` input.
pub struct GroupInput {
    /// Docs, visibility and name of the group module.
    pub header: Header,
    /// The member models, in the order written.
    pub members: Vec<ModelInput>,
}

impl Parse for GroupInput {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let header = Header::parse_start(input)?;
        let body;
        braced!(body in input);
        let mut members: Vec<ModelInput> = Vec::new();
        while !body.is_empty() {
            members.push(body.parse()?);
            if body.peek(Token![,]) {
                body.parse::<Token![,]>()?;
            }
        }
        if members.len() < 2 {
            return Err(syn::Error::new(
                header.name.span(),
                "a `models!` group shares one arena between several models: give it at least two `mod NAME { path: .. }` members (one model alone is `sramfit::model!`)",
            ));
        }
        // With `io: arena` a member's port accessors are methods of the group's one `Arena` type,
        // so two such members would define `inputs_mut` / `outputs` twice.
        let arena_io: Vec<&ModelInput> = members.iter().filter(|m| m.io == Io::Arena).collect();
        if let [_, second, ..] = arena_io.as_slice() {
            return Err(syn::Error::new(
                second.header.name.span(),
                format!(
                    "only one member of a `models!` group can have `io: arena` (its accessors are methods of the group's `Arena`), and `{}` is the second; give it `io: caller`",
                    second.header.name
                ),
            ));
        }
        // A group shares one arena between its members; pools would split it per member.
        if let Some(span) = members.iter().find_map(|m| m.pools.0) {
            return Err(syn::Error::new(
                span,
                "`pools` is not supported in a `models!` group (its members share one arena): declare the model with `sramfit::model!`, or give the member an `sram` budget",
            ));
        }
        Ok(GroupInput { header, members })
    }
}

/// The group module: each member's module (or its placeholder), the group's `ARENA_BYTES`, `Arena`
/// and static arena, and `shared()`.
pub fn expand(g: &GroupInput) -> TokenStream {
    let (mut largest, mut members, mut checks) = (0usize, Vec::new(), Vec::new());
    for m in &g.members {
        match crate::expand(m, true) {
            Ok(e) => {
                largest = largest.max(e.arena_bytes);
                members.push(e.module);
                checks.push(e.checks);
            }
            Err(e) => members.push(crate::fallback::module(&m.header, &e)),
        }
    }
    let arena = codegen::group_arena(
        " the members take turns in one: give each concurrent caller its own and use the member's `run_in`.",
    );
    let shared = codegen::shared_fn();
    let Header { attrs, vis, name } = &g.header;
    quote! {
        #(#attrs)*
        #vis mod #name {
            /// Bytes of the group's arena: the largest `ARENA_BYTES` of its members (each
            /// asserts it fits).
            pub const ARENA_BYTES: usize = #largest;

            #arena
            #shared

            #(#members)*

            // The members' budgets, evaluated where the user wrote the group (its names in scope).
            const _: () = {
                #[allow(unused_imports)]
                use super::*;
                #(#checks)*
            };
        }
    }
}
