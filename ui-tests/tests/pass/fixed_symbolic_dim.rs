//! `inputs:` fixes a symbolic dimension.
sramfit::model! {
    mod m {
        path: "models/symbolic.onnx",
        inputs: { "input": [1, 4, 16, 16] },
        sram: 17 KiB,
    }
}

fn main() {
    assert_eq!(m::INPUT_SHAPES, &[&[1usize, 4, 16, 16][..]]);
}
