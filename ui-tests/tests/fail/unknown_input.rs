sramfit::model! {
    mod m {
        path: "models/symbolic.onnx",
        inputs: { "image": [1, 4, 16, 16] },
    }
}

fn main() {}
