sramfit::model! {
    mod m {
        path: "../tests/models/tflite/keras/lenet_f32.tflite",
    }
}

fn main() {}
