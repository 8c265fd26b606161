sramfit::model! {
    mod m {
        path: "models/tiny.onnx",
        sram: "64k",
    }
}

fn main() {}
