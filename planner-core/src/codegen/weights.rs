//! The weight blob: every constant tensor the schedule reads, little-endian values of its element
//! type, each at a 16-byte-aligned offset of one read-only `static` (flash on a microcontroller).

use std::path::Path;

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use crate::ir::{Graph, TensorKind};
use crate::liveness::{Liveness, Storage};

/// Alignment of every weight tensor in the blob, in bytes.
pub const WEIGHT_ALIGN: usize = 16;

/// Where each constant lives in the blob.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WeightLayout {
    /// Byte offset of each tensor's data (for constants the schedule reads; `None` otherwise).
    pub offsets: Vec<Option<usize>>,
    /// The blob.
    pub bytes: Vec<u8>,
}

/// Lays out the constants that some node reads (directly or through a view).
pub fn layout(g: &Graph, live: &Liveness) -> WeightLayout {
    let mut out = WeightLayout { offsets: vec![None; g.tensors.len()], bytes: Vec::new() };
    for node in &g.nodes {
        for &t in &node.inputs {
            let Storage::Const(root) = live.storage[t] else { continue };
            if out.offsets[root].is_some() {
                continue;
            }
            let TensorKind::Const(data) = &g.tensors[root].kind else { continue };
            out.bytes.resize(out.bytes.len().next_multiple_of(WEIGHT_ALIGN), 0);
            out.offsets[root] = Some(out.bytes.len());
            data.extend_le_bytes(&mut out.bytes);
        }
    }
    out
}

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
    quote! {
        /// The model's weights: little-endian values, each tensor 16-byte aligned, read in place.
        #[repr(C, align(16))]
        #[allow(dead_code)]
        struct Weights([u8; #len]);
        #[allow(dead_code)]
        static WEIGHTS: Weights = Weights(#data);
    }
}
