sramfit::model! {
    mod m {
        path: "models/does_not_exist.onnx",
    }
}

fn main() {}
