sramfit::model! {
    mod m {
        path: "models/tiny.onnx",
        budget: 65536,
    }
}

fn main() {}
