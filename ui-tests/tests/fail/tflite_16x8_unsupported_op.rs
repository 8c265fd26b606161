sramfit::model! {
    mod m {
        path: "../tests/models/tflite/keras/ds_cnn_a16w8.tflite",
    }
}

fn main() {}
