//! Arbitrary bytes through ONNX decode -> import -> plan -> verify -> codegen: no panic, and every
//! accepted model's plan verifies (the property of `tests/fuzz_support`).
#![no_main]

#[path = "../../tests/fuzz_support/mod.rs"]
mod fuzz_support;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz_support::check_bytes(data);
});
