sramfit::model! {
    mod m {
        path: "models/no_inputs.onnx",
    }
}

fn main() {}
