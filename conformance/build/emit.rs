//! The generated file: one module per compiled case, and `CASES`, the table the test walks.
//!
//! The test file defines the table's types (`Case`, `Status`, `Tensor`); the data of compiled cases
//! is written as little-endian files of their element type next to the generated file and
//! embedded with `include_bytes!`.

use std::path::Path;

use proc_macro2::{Ident, Literal, TokenStream};
use quote::{format_ident, quote};

use crate::case::{Case, Data, Status};

/// The file when the corpus folder is absent: an empty table, and where it was looked for.
pub fn absent(data_dir: &Path) -> String {
    let dir = data_dir.display().to_string();
    quote! {
        /// Where the build looked for the corpus.
        pub const DATA_DIR: &str = #dir;
        /// Whether the corpus was found when the test was built.
        pub const DATA_PRESENT: bool = false;
        /// No cases without the corpus.
        pub static CASES: &[Case] = &[];
    }
    .to_string()
}

/// The file for a corpus that was found.
pub fn file(data_dir: &Path, out_dir: &Path, cases: &[Case]) -> String {
    let dir = data_dir.display().to_string();
    let mut modules = TokenStream::new();
    let mut rows = Vec::new();
    for case in cases {
        let (name, op) = (&case.name, &case.op);
        let status = match &case.status {
            Status::Compiled { items, inputs, outputs, baked } => {
                let m = module_ident(name);
                modules.extend(quote! { pub mod #m { #items } });
                let data = out_dir.join("data").join(name);
                std::fs::create_dir_all(&data).expect("create the data folder");
                let inputs = inputs.iter().map(|(i, d)| tensor(d, &data.join(format!("input_{i}.bin"))));
                let outputs = outputs.iter().enumerate().map(|(j, d)| tensor(d, &data.join(format!("output_{j}.bin"))));
                quote! {
                    Status::Compiled {
                        run: #m::run_typed,
                        input_shapes: #m::INPUT_SHAPES,
                        output_shapes: #m::OUTPUT_SHAPES,
                        inputs: &[#(#inputs),*],
                        outputs: &[#(#outputs),*],
                        baked: &[#(#baked),*],
                    }
                }
            }
            Status::Unsupported(e) => quote!(Status::Unsupported(#e)),
            Status::Skipped(why) => quote!(Status::Skipped(#why)),
        };
        let integer = case.integer;
        rows.push(quote!(Case { name: #name, op: #op, integer: #integer, status: #status }));
    }
    quote! {
        /// Where the build found the corpus.
        pub const DATA_DIR: &str = #dir;
        /// Whether the corpus was found when the test was built.
        pub const DATA_PRESENT: bool = true;
        #modules
        /// Every case of `INDEX.tsv`, in its order.
        pub static CASES: &[Case] = &[#(#rows),*];
    }
    .to_string()
}

/// `case_<name without the test_ prefix>`, lower-cased (some names hold `False`/`2D`).
fn module_ident(case: &str) -> Ident {
    let stem = case.strip_prefix("test_").unwrap_or(case).to_lowercase();
    format_ident!("case_{}", stem)
}

/// Writes `d`'s values to `path` and returns the table entry that embeds them.
fn tensor(d: &Data, path: &Path) -> TokenStream {
    std::fs::write(path, &d.bytes).expect("write tensor data");
    let path = Literal::string(&path.display().to_string());
    let shape = &d.shape;
    let dtype = format_ident!("{}", d.dtype);
    quote!(Tensor { shape: &[#(#shape),*], dtype: sramfit::DType::#dtype, bytes: include_bytes!(#path) })
}
