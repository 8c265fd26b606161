//! The typed-port contract every generated module has: `INPUT_TYPES` / `OUTPUT_TYPES` and
//! `run_typed` / `run_typed_in`, which take tagged slices of any element type and refuse a wrong
//! count, element type or length with the exact error naming the port, before anything is touched.

use sramfit::{DType, Error, Port, TensorMut, TensorRef};

sramfit::model! { mod two_io { path: "tests/models/two_inputs_two_outputs.onnx" } }

mod common;

/// The two inputs of the fixture, and the outputs `run_in` gives for them (the reference the typed
/// entry points must match bit for bit; `run` itself is checked against onnxruntime in models.rs),
/// computed in an arena of its own: the tests run in parallel, and only one of them may hold the
/// module's static arena at a time.
fn inputs_and_reference() -> ([f32; 8], [f32; 8], [f32; 8], [f32; 4]) {
    let a: [f32; 8] = common::random(8, 21).try_into().unwrap();
    let b: [f32; 8] = common::random(8, 22).try_into().unwrap();
    let (mut r0, mut r1) = ([0.0f32; 8], [0.0f32; 4]);
    two_io::run_in(&mut Box::new(two_io::Arena::new()), &a, &b, &mut r0, &mut r1).unwrap();
    (a, b, r0, r1)
}

#[test]
fn ports_declare_their_element_types() {
    assert_eq!(two_io::INPUT_TYPES, &[DType::F32, DType::F32]);
    assert_eq!(two_io::OUTPUT_TYPES, &[DType::F32, DType::F32]);
    assert_eq!(two_io::INPUT_SHAPES, &[&[1, 8][..], &[1, 8][..]]);
}

#[test]
fn run_typed_accepts_the_model_ports() {
    let (a, b, r0, r1) = inputs_and_reference();
    let (mut o0, mut o1) = ([f32::NAN; 8], [f32::NAN; 4]);
    let mut outputs = [TensorMut::from(&mut o0[..]), TensorMut::from(&mut o1[..])];
    two_io::run_typed(&[TensorRef::F32(&a), TensorRef::F32(&b)], &mut outputs).unwrap();
    assert_eq!((o0.map(f32::to_bits), o1.map(f32::to_bits)), (r0.map(f32::to_bits), r1.map(f32::to_bits)));

    let mut arena = Box::new(two_io::Arena::new());
    let (mut o0, mut o1) = ([f32::NAN; 8], [f32::NAN; 4]);
    two_io::run_typed_in(&mut arena, &[a[..].into(), b[..].into()], &mut [(&mut o0[..]).into(), (&mut o1[..]).into()])
        .unwrap();
    assert_eq!((o0.map(f32::to_bits), o1.map(f32::to_bits)), (r0.map(f32::to_bits), r1.map(f32::to_bits)));
}

#[test]
fn run_typed_refuses_wrong_ports_before_touching_anything() {
    let (a, b, _, _) = inputs_and_reference();
    let bytes = [0i8; 8];
    let short = [0.0f32; 7];
    let (mut o0, mut o1, mut long, mut ints) = ([f32::NAN; 8], [f32::NAN; 4], [f32::NAN; 5], [7i32; 4]);
    // `run_typed_in` in an arena of its own (`run_typed` takes the static arena, which
    // `run_typed_accepts_the_model_ports` may hold at the same time: `Busy`), the checks being the
    // same code.
    let mut arena = Box::new(two_io::Arena::new());
    let mut refused = |inputs: &[TensorRef<'_>], outputs: &mut [TensorMut<'_>]| {
        two_io::run_typed_in(&mut arena, inputs, outputs).unwrap_err()
    };
    let cases: [(Error, Error); 6] = [
        (
            refused(&[TensorRef::F32(&a)], &mut [TensorMut::F32(&mut o0), TensorMut::F32(&mut o1)]),
            Error::Shape { port: Port::InputCount, expected: 2, found: 1 },
        ),
        (
            refused(&[TensorRef::F32(&a), TensorRef::F32(&b)], &mut [TensorMut::F32(&mut o0)]),
            Error::Shape { port: Port::OutputCount, expected: 2, found: 1 },
        ),
        (
            refused(
                &[TensorRef::F32(&a), TensorRef::I8(&bytes)],
                &mut [TensorMut::F32(&mut o0), TensorMut::F32(&mut o1)],
            ),
            Error::Type { port: Port::Input(1), expected: DType::F32, found: DType::I8 },
        ),
        (
            refused(
                &[TensorRef::F32(&short), TensorRef::F32(&b)],
                &mut [TensorMut::F32(&mut o0), TensorMut::F32(&mut o1)],
            ),
            Error::Shape { port: Port::Input(0), expected: 8, found: 7 },
        ),
        (
            refused(
                &[TensorRef::F32(&a), TensorRef::F32(&b)],
                &mut [TensorMut::F32(&mut o0), TensorMut::I32(&mut ints)],
            ),
            Error::Type { port: Port::Output(1), expected: DType::F32, found: DType::I32 },
        ),
        (
            refused(
                &[TensorRef::F32(&a), TensorRef::F32(&b)],
                &mut [TensorMut::F32(&mut o0), TensorMut::F32(&mut long)],
            ),
            Error::Shape { port: Port::Output(1), expected: 4, found: 5 },
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got, want);
    }
    // Nothing was written by any refused call.
    assert!(o0.iter().chain(&o1).chain(&long).all(|v| v.is_nan()), "{o0:?} {o1:?} {long:?}");
    assert_eq!(ints, [7; 4]);
    // The messages name the port.
    assert_eq!(
        Error::Type { port: Port::Input(1), expected: DType::F32, found: DType::I8 }.to_string(),
        "input 1: expected `f32` elements, found `i8`"
    );
}
