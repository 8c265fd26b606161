sramfit::model! {
    mod m {
        path: "models/tiny.onnx",
        pools: { sram: 64 KiB, psram: 1 MiB in psram },
    }
}

fn main() {}
