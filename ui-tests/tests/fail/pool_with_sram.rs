sramfit::model! {
    mod m {
        path: "models/tiny.onnx",
        sram: 64 KiB,
        pools: { sram: 64 KiB, psram: 1 MiB },
    }
}

fn main() {}
