sramfit::model! {
    mod m {
        path: "models/symbolic.onnx",
    }
}

fn main() {}
