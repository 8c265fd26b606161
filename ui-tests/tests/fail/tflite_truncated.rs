sramfit::model! {
    mod m {
        path: "models/truncated.tflite",
    }
}

fn main() {}
