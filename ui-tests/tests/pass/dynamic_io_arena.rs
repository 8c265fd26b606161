//! A bounded dimension with `io: arena`: the accessors and `run_in` take the length.
sramfit::model! {
    mod m {
        path: "models/symbolic.onnx",
        inputs: { "input": ["batch <= 3", 4, 16, 16] },
        io: arena,
    }
}

fn main() {
    let mut arena = m::shared().unwrap();
    arena.input(2).unwrap().fill(0.5);
    m::run_in(&mut arena, 2).unwrap();
    assert_eq!(arena.outputs(2).unwrap()[0].len(), m::output_lens(2)[0]);
    assert_eq!(m::run_in(&mut arena, 4), Err(sramfit::Error::Shape { port: sramfit::Port::Length, expected: 3, found: 4 }));
    assert!(arena.input(0).is_err());
}
