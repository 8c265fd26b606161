sramfit::model! {
    mod m {
        path: "models/not_onnx.onnx",
    }
}

fn main() {}
