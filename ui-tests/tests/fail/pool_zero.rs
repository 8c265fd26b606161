sramfit::model! {
    mod m {
        path: "models/tiny.onnx",
        pools: { sram: 0 KiB, psram: 1 MiB },
    }
}

fn main() {}
