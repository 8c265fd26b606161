//! The quick, deterministic version of the `import_plan` fuzz target: committed models (ONNX and
//! TFLite) mutated
//! (bytes flipped, cut short, spliced, varints rewritten) and run through `fuzz_support`'s
//! property. `SRAMFIT_FUZZ_ITERATIONS` (default 200 per seed model) runs it longer; the real,
//! coverage-guided fuzzer is `cargo +nightly fuzz run import_plan` in this crate (see fuzz/README.md).
#![cfg(feature = "onnx")]

mod fuzz_support;

use std::path::Path;

use fuzz_support::{check_bytes, Outcome};

/// Small committed models the mutations start from.
const SEEDS: &[&str] = &[
    "../ui-tests/models/tiny.onnx",
    "../tests/models/branch_merge.onnx",
    "../tests/models/ops/layernorm_last.onnx",
    "../tests/models/ops/split_uneven.onnx",
    "../tests/models/ops/where_less.onnx",
    "../tests/models/ops/concat_axis1_4d.onnx",
    // Quantized models (read from the protobuf by `import::quant`): QDQ and QOperator.
    "../tests/models/quant/ops/qdq_conv3x3_s8.onnx",
    "../tests/models/quant/ops/qdq_conv_depthwise_mult2_s8.onnx",
    "../tests/models/quant/ops/qop_softmax_u8.onnx",
    "../tests/models/quant/ops/qop_globalavgpool_s8.onnx",
    "../tests/models/quant/ops/qop_add_bcast_s8.onnx",
    "../tests/models/quant/ops/qdq_avgpool_s8.onnx",
    "../tests/models/quant/ops/qdq_concat_s8.onnx",
    "../tests/models/quant/ops/qop_convinteger_u8.onnx",
    "../tests/models/quant/ops/qop_matmulinteger_act_s8.onnx",
    // TFLite flatbuffers (read by `import::tflite`): fully connected layers; most operator kinds.
    "../tests/models/tflite/keras/fc_autoencoder_int8.tflite",
    "../tests/models/tflite/keras/misc_ops_int8.tflite",
    // TFLite's 16x8 mode: int64 biases, the int16 softmax tables, SUB / MUL / LEAKY_RELU on int16.
    "../tests/models/tflite/keras/arith_a16w8.tflite",
    "../tests/models/tflite/keras/ds_cnn_a16w8.tflite",
];

/// xorshift64: deterministic, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One mutation of `seed`: a few of flip / cut / splice / small-integer overwrite.
fn mutate(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut d = seed.to_vec();
    for _ in 0..1 + rng.below(3) {
        if d.is_empty() {
            break;
        }
        let at = rng.below(d.len());
        match rng.below(4) {
            0 => d[at] ^= 1 << rng.below(8),
            1 => d.truncate(at),
            2 => {
                let from = rng.below(seed.len());
                let len = rng.below(32).min(seed.len() - from);
                d.splice(at..at, seed[from..from + len].iter().copied());
            }
            // Small integers are dimensions, counts, indices and lengths in a protobuf.
            _ => d[at] = [0, 1, 2, 3, 0x7f, 0x80, 0xff][rng.below(7)],
        }
    }
    d
}

#[test]
fn mutated_models_never_panic_and_accepted_plans_verify() {
    let per_seed: usize = std::env::var("SRAMFIT_FUZZ_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
    let mut counts = [0usize; 4];
    for (s, seed) in SEEDS.iter().enumerate() {
        let bytes = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(seed)).unwrap();
        assert_eq!(check_bytes(&bytes), Outcome::Compiled, "{seed} itself compiles");
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (s as u64 + 1));
        for _ in 0..per_seed {
            let input = mutate(&bytes, &mut rng);
            counts[check_bytes(&input) as usize] += 1;
        }
    }
    let [not_onnx, refused, compiled, tract_panics] = counts;
    eprintln!(
        "\n{} inputs: {not_onnx} not ONNX, {refused} refused with an error, {compiled} compiled and verified, \
         {tract_panics} panics inside tract (caught by every front end)",
        counts.iter().sum::<usize>()
    );
    assert!(compiled > 0 && refused > 0, "the mutations should reach both the importer's errors and the planner");
}
