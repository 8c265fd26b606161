//! Bounded dynamic dimensions with `io: arena`: the inputs and outputs live in the arena at every
//! length, reached through accessors that take the length; compared with tract at every length of
//! the dynamic fixtures (as `tests/dynamic.rs` does for `io: caller`), and a length out of range
//! refused before the arena is touched.

mod common;

use common::{assert_close, random, tract_outputs};
use sramfit::{Error, Port};

sramfit::model! {
    /// 1-D conv + global average over time + Gemm, inputs and outputs in the arena.
    pub mod conv1d_gap {
        path: "tests/models/dynamic/conv1d_gap.onnx",
        inputs: { "input": [1, 40, "frames <= 98"] },
        io: arena,
    }
}

sramfit::model! {
    /// Two stride-2 convolutions: the output's length changes with the input's.
    pub mod strided_conv {
        path: "tests/models/dynamic/strided_conv.onnx",
        inputs: { "input": [1, 8, "frames <= 40"] },
        io: arena,
    }
}

sramfit::model! {
    /// Self-attention over the sequence axis.
    pub mod attention {
        path: "tests/models/dynamic/attention.onnx",
        inputs: { "input": [1, "2 <= seq <= 24", 32] },
        io: arena,
    }
}

/// Writes the input at length `n` through the accessor, runs, reads the output, for every length.
macro_rules! every_length {
    ($m:ident, $path:literal) => {{
        let mut arena = Box::new($m::Arena::new());
        for n in $m::MIN_LEN..=$m::MAX_LEN {
            let shape: Vec<usize> = (0..$m::INPUT_SHAPES[0].len()).map(|a| $m::input_dim(0, a, n)).collect();
            let input = random(shape.iter().product(), n as u64);
            let want = tract_outputs($path, &[(shape, input.clone())]);
            let [slot] = arena.inputs_mut(n).unwrap();
            assert_eq!(slot.len(), input.len(), "{} at length {n}: input slice", $path);
            slot.copy_from_slice(&input);
            $m::run_in(&mut arena, n).unwrap_or_else(|e| panic!("{} at length {n}: {e}", $path));
            let [got] = arena.outputs(n).unwrap();
            assert_eq!(got.len(), $m::output_lens(n)[0]);
            assert_close(&format!("{} at length {n}", $path), got, &want[0].1, 1e-4, 1e-5);
        }
    }};
}

#[test]
fn conv1d_gap_matches_tract_at_every_length() {
    every_length!(conv1d_gap, "tests/models/dynamic/conv1d_gap.onnx");
}

#[test]
fn strided_conv_matches_tract_at_every_length() {
    every_length!(strided_conv, "tests/models/dynamic/strided_conv.onnx");
}

#[test]
fn attention_matches_tract_at_every_length() {
    every_length!(attention, "tests/models/dynamic/attention.onnx");
}

#[test]
fn named_accessors_and_the_shared_arena() {
    let mut arena = conv1d_gap::shared().unwrap();
    let input = random(40 * 10, 5);
    arena.input(10).unwrap().copy_from_slice(&input);
    conv1d_gap::run_in(&mut arena, 10).unwrap();
    let [output] = arena.outputs(10).unwrap();
    assert_eq!(output.len(), conv1d_gap::output_lens(10)[0]);
    assert!(output.iter().all(|v| v.is_finite()));
    assert_eq!(conv1d_gap::shared().err(), Some(Error::Busy));
}

#[test]
fn lengths_out_of_range_are_refused_before_the_arena_is_touched() {
    let mut arena = Box::new(strided_conv::Arena::new());
    // SAFETY: `Arena` is `repr(C)` around exactly `ARENA_BYTES` initialised bytes.
    let bytes = |a: &mut strided_conv::Arena| unsafe {
        std::slice::from_raw_parts_mut((a as *mut strided_conv::Arena).cast::<u8>(), strided_conv::ARENA_BYTES)
    };
    bytes(&mut arena).fill(0xA5);
    let length = |found| Err(Error::Shape { port: Port::Length, expected: 40, found });
    assert_eq!(strided_conv::run_in(&mut arena, 41), length(41));
    assert_eq!(strided_conv::run_in(&mut arena, 0), length(0));
    assert_eq!(arena.inputs_mut(41).err(), length(41).err());
    assert_eq!(arena.outputs(0).err(), length(0).err());
    assert!(bytes(&mut arena).iter().all(|&b| b == 0xA5), "the arena was touched");
}
