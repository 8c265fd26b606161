//! Present so that cargo gives this crate an `OUT_DIR`: `model!` then writes the weights there and
//! embeds them with `include_bytes!` (faster to compile than a byte-string literal).
fn main() {}
