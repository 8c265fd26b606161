//! Bounded dynamic shapes: models whose time or sequence axis is `"NAME <= MAX"` in `inputs:`,
//! run through `run_dyn` at every length of the range and compared with tract running the same
//! ONNX file at that exact length; and every malformed call refused before the arena is touched.

mod common;

use common::{assert_close, random, tract_outputs};
use sramfit::{Error, Port};

sramfit::model! {
    /// 1-D conv (same padding) + Relu + pointwise conv + global average over time + Gemm.
    pub mod conv1d_gap {
        path: "tests/models/dynamic/conv1d_gap.onnx",
        inputs: { "input": [1, 40, "frames <= 98"] },
    }
}

sramfit::model! {
    /// Two stride-2 convolutions along time: the output has ceil(ceil(n / 2) / 2) frames.
    pub mod strided_conv {
        path: "tests/models/dynamic/strided_conv.onnx",
        inputs: { "input": [1, 8, "frames <= 40"] },
    }
}

sramfit::model! {
    /// Self-attention over a sequence axis: MatMul, Softmax over the sequence, LayerNormalization.
    pub mod attention {
        path: "tests/models/dynamic/attention.onnx",
        inputs: { "input": [1, "2 <= seq <= 24", 32] },
    }
}

/// A generated module's length-taking entry point.
type RunLen = fn(usize, &[&[f32]], &mut [&mut [f32]]) -> Result<(), Error>;

/// What a test needs of one generated module.
struct Dynamic {
    path: &'static str,
    lens: std::ops::RangeInclusive<usize>,
    input_shape: fn(usize) -> Vec<usize>,
    output_shape: fn(usize) -> Vec<usize>,
    run: RunLen,
}

/// `run_dyn` at every length of the range against tract at that length, the output extent the
/// module reports against tract's output shape.
fn every_length(m: &Dynamic) {
    for n in m.lens.clone() {
        let shape = (m.input_shape)(n);
        let input = random(shape.iter().product(), n as u64);
        let want = tract_outputs(m.path, &[(shape, input.clone())]);
        let (want_shape, want) = &want[0];
        assert_eq!(&(m.output_shape)(n), want_shape, "{} at length {n}: output shape", m.path);
        let mut got = vec![f32::NAN; want.len()];
        (m.run)(n, &[&input], &mut [&mut got]).unwrap_or_else(|e| panic!("{} at length {n}: {e}", m.path));
        assert_close(&format!("{} at length {n}", m.path), &got, want, 1e-4, 1e-5);
    }
}

macro_rules! dynamic {
    ($m:ident, $path:literal) => {
        Dynamic {
            path: $path,
            lens: $m::MIN_LEN..=$m::MAX_LEN,
            input_shape: |n| (0..$m::INPUT_SHAPES[0].len()).map(|a| $m::input_dim(0, a, n)).collect(),
            output_shape: |n| (0..$m::OUTPUT_SHAPES[0].len()).map(|a| $m::output_dim(0, a, n)).collect(),
            run: $m::run_dyn,
        }
    };
}

#[test]
fn conv1d_gap_matches_tract_at_every_length() {
    assert_eq!((conv1d_gap::DYNAMIC_DIM, conv1d_gap::MIN_LEN, conv1d_gap::MAX_LEN), ("frames", 1, 98));
    every_length(&dynamic!(conv1d_gap, "tests/models/dynamic/conv1d_gap.onnx"));
}

#[test]
fn strided_conv_matches_tract_at_every_length() {
    // The output length is the strided-window formula, applied twice.
    for n in 1..=40usize {
        assert_eq!(strided_conv::output_dim(0, 2, n), n.div_ceil(2).div_ceil(2));
        assert_eq!(strided_conv::output_lens(n), [12 * n.div_ceil(2).div_ceil(2)]);
    }
    every_length(&dynamic!(strided_conv, "tests/models/dynamic/strided_conv.onnx"));
}

#[test]
fn attention_matches_tract_at_every_length() {
    assert_eq!((attention::MIN_LEN, attention::MAX_LEN), (2, 24));
    every_length(&dynamic!(attention, "tests/models/dynamic/attention.onnx"));
}

#[test]
fn run_at_the_bound_is_run_dyn_at_the_bound() {
    let input = random(98 * 40, 7);
    let (mut a, mut b) = ([0f32; 12], [0f32; 12]);
    // Caller-owned arenas: other tests use the shared one in parallel.
    let mut arena = conv1d_gap::Arena::new();
    conv1d_gap::run_in(&mut arena, input.as_slice().try_into().unwrap(), &mut a).unwrap();
    conv1d_gap::run_dyn_in(&mut conv1d_gap::Arena::new(), 98, &[&input], &mut [&mut b]).unwrap();
    assert_eq!(a, b);
}

/// The arena's bytes (a `#[repr(C, align(16))]` newtype of `[u8; ARENA_BYTES]`).
fn bytes(arena: &mut conv1d_gap::Arena) -> &mut [u8] {
    // SAFETY: `Arena` is `repr(C)` around exactly `ARENA_BYTES` initialised bytes.
    unsafe { std::slice::from_raw_parts_mut((arena as *mut conv1d_gap::Arena).cast::<u8>(), conv1d_gap::ARENA_BYTES) }
}

#[test]
fn malformed_calls_are_refused_before_the_arena_is_touched() {
    let mut arena = conv1d_gap::Arena::new();
    bytes(&mut arena).fill(0xA5);
    let shape = |port, expected, found| Err(Error::Shape { port, expected, found });
    let mut out = [f32::NAN; 12];
    let cases: [(usize, usize, usize, Result<(), Error>); 5] = [
        (99, 99 * 40, 12, shape(Port::Length, 98, 99)), // one frame over the bound
        (0, 0, 12, shape(Port::Length, 98, 0)),         // no frames
        (10, 10 * 39, 12, shape(Port::Input(0), 400, 390)), // 39 channels instead of 40
        (10, 11 * 40, 12, shape(Port::Input(0), 400, 440)), // buffer longer than the length says
        (10, 400, 11, shape(Port::Output(0), 12, 11)),  // output buffer too short
    ];
    for (n, in_len, out_len, want) in cases {
        let input = random(in_len, 3);
        let got = conv1d_gap::run_dyn_in(&mut arena, n, &[&input], &mut [&mut out[..out_len]]);
        assert_eq!(got, want, "length {n}, input {in_len}, output {out_len}");
        assert!(bytes(&mut arena).iter().all(|&b| b == 0xA5), "the arena was touched");
        assert!(out.iter().all(|v| v.is_nan()), "the output was written");
    }
    let input = random(400, 3);
    assert_eq!(conv1d_gap::run_dyn_in(&mut arena, 10, &[], &mut [&mut out]), shape(Port::InputCount, 1, 0));
    assert_eq!(
        conv1d_gap::run_dyn_in(&mut arena, 10, &[&input, &input], &mut [&mut out]),
        shape(Port::InputCount, 1, 2)
    );
    assert!(bytes(&mut arena).iter().all(|&b| b == 0xA5), "the arena was touched");
    // And the same arena then runs a valid call.
    conv1d_gap::run_dyn_in(&mut arena, 10, &[&input], &mut [&mut out]).unwrap();
    assert!(out.iter().all(|v| v.is_finite()));
}
