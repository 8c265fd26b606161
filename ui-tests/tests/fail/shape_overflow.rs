sramfit::model! {
    mod m {
        path: "models/huge.onnx",
    }
}

fn main() {}
