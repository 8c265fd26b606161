sramfit::model! {
    mod m {
        path: "models/tiny.onnx",
        pools: { sram: 64 KiB },
    }
}

fn main() {}
