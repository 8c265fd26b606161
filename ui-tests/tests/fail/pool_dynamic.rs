sramfit::model! {
    mod m {
        path: "models/symbolic.onnx",
        inputs: { "input": [1, 4, "rows <= 16", 16] },
        pools: { sram: 64 KiB, psram: 1 MiB },
    }
}

fn main() {}
