sramfit::model! {
    mod m {
        path: "models/tiny.onnx",
        flash: 1 KiB,
    }
}

fn main() {}
