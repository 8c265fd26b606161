sramfit::model! {
    mod m {
        path: "models/tiny.onnx",
        io: arena,
        pools: { sram: 64 KiB, psram: 1 MiB },
    }
}

fn main() {}
