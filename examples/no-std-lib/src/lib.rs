//! A `#![no_std]` library (edition 2024) that embeds a model, as firmware would. Building this crate
//! (part of `cargo test --workspace`) proves the expansion needs neither `std` nor `alloc` and
//! compiles without warnings under strict lints.
#![no_std]
#![deny(unsafe_op_in_unsafe_fn, warnings, missing_docs)]

sramfit::model! {
    /// The keyword-spotting model, with a budget given as a board constant.
    pub mod kws {
        path: "../models/kws.onnx",
        sram: BOARD_SRAM - STACK_RESERVE,
    }
}

/// SRAM of the target board.
pub const BOARD_SRAM: usize = 128 * 1024;
/// Bytes kept for the stack.
pub const STACK_RESERVE: usize = 16 * 1024;

/// Classifies one window of features; returns the index of the best class.
pub fn classify(features: &[f32; 490]) -> Result<usize, sramfit::Error> {
    let mut scores = [0.0f32; 12];
    kws::run(features, &mut scores)?;
    let mut best = 0;
    for (i, s) in scores.iter().enumerate() {
        if *s > scores[best] {
            best = i;
        }
    }
    Ok(best)
}
