sramfit::model! {
    mod m {
        path: "models/tiny.onnx",
        sram: 64 KB2,
    }
}

fn main() {}
