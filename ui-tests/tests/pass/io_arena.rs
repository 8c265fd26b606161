//! `io: arena` puts chain.onnx's input and output into the arena as well: the accessors are named
//! after them, the run takes the arena alone, and the result matches the caller-buffer build.
sramfit::model! {
    mod in_arena {
        path: "models/chain.onnx",
        io: arena,
    }
}

sramfit::model! {
    mod caller {
        path: "models/chain.onnx",
        io: caller,
    }
}

fn main() {
    let x: Vec<f32> = (0..in_arena::INPUT_SHAPES[0].iter().product::<usize>()).map(|i| (i % 7) as f32 - 3.0).collect();
    let mut arena = in_arena::Arena::new();
    let [input] = arena.inputs_mut();
    input.copy_from_slice(&x);
    in_arena::run_in(&mut arena).unwrap();
    let [got] = arena.outputs();

    let mut want = vec![f32::NAN; got.len()];
    caller::run_dyn(&[&x], &mut [&mut want]).unwrap();
    assert_eq!(got, &want[..]);
}
