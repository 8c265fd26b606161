//! What `model!` expands to when it fails: the compile error inside a placeholder module of the
//! declared name, holding every item the generated module would (`run`, `run_in`, `run_dyn`,
//! `Arena`, `ARENA_BYTES`, ...), so that the user sees one error, not one more per use of the
//! module (the idea of thiserror's fallback expansion, `impl/src/expand.rs`).
//!
//! The placeholders cannot be mistaken for a working model: their type is a path that does not
//! resolve. rustc reports no unresolved path inside a module whose own expansion failed (the
//! `compile_error!` is in it), so every use of a placeholder, whatever its arguments, has an
//! error type and adds no message of its own (pinned by the ui-test `missing_file_used`).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::input::Header;

/// Every item of a generated module (see the README's contract table), as a placeholder.
const ITEMS: &[&str] = &[
    "ARENA_BYTES",
    "LOWER_BOUND_BYTES",
    "NAIVE_BYTES",
    "WEIGHT_BYTES",
    "INPUT_SHAPES",
    "OUTPUT_SHAPES",
    "DYNAMIC_DIM",
    "MIN_LEN",
    "MAX_LEN",
    "run",
    "run_in",
    "run_dyn",
    "run_dyn_in",
    "shared",
    "input_lens",
    "output_lens",
    "input_dim",
    "output_dim",
];

/// `error` as a compile error inside a placeholder module named as in `header`.
pub fn module(header: &Header, error: &syn::Error) -> TokenStream {
    let Header { attrs, vis, name } = header;
    let error = error.to_compile_error();
    let items = ITEMS.iter().map(|item| {
        let id = format_ident!("{item}");
        quote!(pub const #id: Arena = self::model_did_not_compile::PLACEHOLDER;)
    });
    quote! {
        #(#attrs)*
        #vis mod #name {
            //! `sramfit::model!` failed (see the compile error): a placeholder with the generated
            //! module's item names, none of which runs a model.
            #![allow(non_upper_case_globals, dead_code)]
            #error
            /// Placeholder: the model did not compile.
            pub type Arena = self::model_did_not_compile::Placeholder;
            #(#items)*
        }
    }
}
