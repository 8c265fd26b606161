sramfit::model! {
    mod m {
        path: "models/tiny.onnx",
        pools: { sram: 64 KiB, SRAM: 1 MiB },
    }
}

fn main() {}
