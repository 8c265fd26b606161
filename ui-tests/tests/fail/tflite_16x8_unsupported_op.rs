sramfit::model! {
    mod m {
        path: "models/int16_logistic.tflite",
    }
}

fn main() {}
