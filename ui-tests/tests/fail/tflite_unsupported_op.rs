sramfit::model! {
    mod m {
        path: "models/unsupported.tflite",
    }
}

fn main() {}
