sramfit::model! {
    mod m {
        path: "models/tiny.onnx",
        inputs: { "input": [4, 16, 16] },
    }
}

fn main() {}
