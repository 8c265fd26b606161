//! Gives the crate's tests an `OUT_DIR`: `model!` then writes weights there and embeds them with
//! `include_bytes!`, which compiles large models (ResNet-18's 47 MB) far faster than a literal.

fn main() {}
