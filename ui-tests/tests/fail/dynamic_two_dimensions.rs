sramfit::model! {
    mod m {
        path: "models/symbolic.onnx",
        inputs: { "input": ["batch <= 2", 4, "rows <= 16", 16] },
    }
}

fn main() {}
