sramfit::model! {
    mod m {
        path: "models/unsupported.onnx",
    }
}

fn main() {}
