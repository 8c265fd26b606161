sramfit::model! {
    mod m {
        path: "../tests/models/tflite/keras/attention_f32.tflite",
    }
}

fn main() {}
