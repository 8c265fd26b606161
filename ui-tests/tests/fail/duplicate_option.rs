sramfit::model! {
    mod m {
        path: "models/tiny.onnx",
        sram: 64 KiB,
        sram: 32 KiB,
    }
}

fn main() {}
