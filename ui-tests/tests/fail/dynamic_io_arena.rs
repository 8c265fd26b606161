sramfit::model! {
    mod m {
        path: "models/symbolic.onnx",
        inputs: { "input": ["batch <= 3", 4, 16, 16] },
        io: arena,
    }
}

fn main() {}
