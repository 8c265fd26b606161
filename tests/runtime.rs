//! Run-time behaviour of generated code: the shared arena's busy guard under two threads, caller-owned
//! arenas, repeated calls, and run_dyn's checks.

use std::sync::atomic::{AtomicUsize, Ordering};

use sramfit::{Error, Port};

sramfit::model! { mod kws { path: "tests/models/kws_dscnn.onnx" } }
sramfit::model! { mod two_io { path: "tests/models/two_inputs_two_outputs.onnx" } }
// Its own module, so its own static arena: tests run in parallel and must not contend for `kws`'s.
sramfit::model! { mod mlp { path: "tests/models/mlp.onnx" } }

mod common;

fn kws_input() -> [f32; 490] {
    common::random(490, 7).try_into().unwrap()
}

fn kws_reference() -> [f32; 12] {
    let mut arena = Box::new(kws::Arena::new());
    let mut out = [0.0; 12];
    kws::run_in(&mut arena, &kws_input(), &mut out).unwrap();
    out
}

#[test]
fn ten_thousand_calls_are_bit_identical() {
    let input: [f32; 64] = common::random(64, 3).try_into().unwrap();
    let mut reference = [0.0f32; 10];
    mlp::run_in(&mut mlp::Arena::new(), &input, &mut reference).unwrap();
    let mut out = [0.0f32; 10];
    for _ in 0..10_000 {
        mlp::run(&input, &mut out).unwrap();
        assert_eq!(out.map(f32::to_bits), reference.map(f32::to_bits));
    }
}

#[test]
fn two_threads_get_correct_results_or_busy() {
    let reference = kws_reference();
    let busy = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let input = kws_input();
                for _ in 0..300 {
                    let mut out = [f32::NAN; 12];
                    match kws::run(&input, &mut out) {
                        Ok(()) => {
                            assert_eq!(out.map(f32::to_bits), reference.map(f32::to_bits), "wrong numbers");
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(Error::Busy) => {
                            assert!(out.iter().all(|v| v.is_nan()), "a Busy call wrote its output");
                            busy.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => panic!("unexpected error {e}"),
                    }
                }
            });
        }
    });
    assert_eq!(done.load(Ordering::Relaxed) + busy.load(Ordering::Relaxed), 600);
    assert!(done.load(Ordering::Relaxed) > 0);
}

#[test]
fn caller_owned_arenas_run_in_parallel() {
    let reference = kws_reference();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                let mut arena = Box::new(kws::Arena::new());
                let mut out = [0.0f32; 12];
                for _ in 0..100 {
                    kws::run_in(&mut arena, &kws_input(), &mut out).unwrap();
                    assert_eq!(out.map(f32::to_bits), reference.map(f32::to_bits));
                }
            });
        }
    });
}

#[test]
fn run_dyn_checks_counts_and_lengths() {
    let a = [1.0f32; 8];
    let mut o0 = [0.0f32; 8];
    let mut o1 = [0.0f32; 4];
    let short = [0.0f32; 7];
    let err = two_io::run_dyn(&[&a], &mut [&mut o0, &mut o1]).unwrap_err();
    assert_eq!(err, Error::Shape { port: Port::InputCount, expected: 2, found: 1 });
    let err = two_io::run_dyn(&[&a, &short], &mut [&mut o0, &mut o1]).unwrap_err();
    assert_eq!(err, Error::Shape { port: Port::Input(1), expected: 8, found: 7 });
    let mut wrong = [0.0f32; 5];
    let err = two_io::run_dyn(&[&a, &a], &mut [&mut o0, &mut wrong]).unwrap_err();
    assert_eq!(err, Error::Shape { port: Port::Output(1), expected: 4, found: 5 });
    let err = two_io::run_dyn(&[&a, &a], &mut [&mut o0]).unwrap_err();
    assert_eq!(err, Error::Shape { port: Port::OutputCount, expected: 2, found: 1 });
    two_io::run_dyn(&[&a, &a], &mut [&mut o0, &mut o1]).unwrap();
    let (mut r0, mut r1) = ([0.0f32; 8], [0.0f32; 4]);
    two_io::run(&a, &a, &mut r0, &mut r1).unwrap();
    assert_eq!((o0, o1), (r0, r1));
}

#[test]
fn constants_describe_the_model() {
    assert_eq!(kws::INPUT_SHAPES, &[&[1usize, 1, 49, 10][..]]);
    assert_eq!(kws::OUTPUT_SHAPES, &[&[1usize, 12][..]]);
    const { assert!(kws::LOWER_BOUND_BYTES <= kws::ARENA_BYTES && kws::ARENA_BYTES <= kws::NAIVE_BYTES) };
    assert_eq!(core::mem::size_of::<kws::Arena>(), kws::ARENA_BYTES.next_multiple_of(16));
    assert_eq!(core::mem::align_of::<kws::Arena>(), 16);
}
