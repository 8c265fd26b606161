sramfit::model! {
    mod m {
        path: "../tests/models/tflite/keras/attention_int8.tflite",
    }
}

fn main() {}
