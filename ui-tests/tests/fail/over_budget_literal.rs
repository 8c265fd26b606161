sramfit::model! {
    mod m {
        path: "models/tiny.onnx",
        sram: 16 KiB,
    }
}

fn main() {}
