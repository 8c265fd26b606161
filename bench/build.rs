//! Empty: its presence gives the crate an OUT_DIR, so `model!` embeds weights with include_bytes!.
fn main() {}
