sramfit::model! {
    mod m {
        path: "models/tiny.onnx",
        sram: 0,
    }
}

fn main() {}
