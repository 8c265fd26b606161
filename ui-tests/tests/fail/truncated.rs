sramfit::model! {
    mod m {
        path: "models/truncated.onnx",
    }
}

fn main() {}
