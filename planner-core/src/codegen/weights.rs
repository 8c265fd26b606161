//! The `WEIGHTS` static of the expansion: the weight blob ([`crate::weights`]) as bytes.

use std::path::Path;

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use crate::weights::WeightLayout;

/// The `WEIGHTS` static: `include_bytes!` of `file` when given (fast to compile for large models),
/// else a byte-string literal.
pub fn emit_static(layout: &WeightLayout, file: Option<&Path>) -> TokenStream {
    let len = layout.bytes.len();
    let data = match file {
        Some(path) => {
            let path = path.to_string_lossy().into_owned();
            quote!(*::core::include_bytes!(#path))
        }
        None => {
            let lit = Literal::byte_string(&layout.bytes);
            quote!(*#lit)
        }
    };
    let align = Literal::usize_unsuffixed(layout.align.0);
    let doc = format!(
        " The model's weights: little-endian values, each tensor {}-byte aligned, read in place.",
        layout.align.0
    );
    quote! {
        #[doc = #doc]
        #[repr(C, align(#align))]
        #[allow(dead_code)]
        struct Weights([u8; #len]);
        #[allow(dead_code)]
        static WEIGHTS: Weights = Weights(#data);
    }
}
