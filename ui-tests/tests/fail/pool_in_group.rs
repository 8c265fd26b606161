sramfit::models! {
    mod g {
        mod a { path: "models/tiny.onnx" }
        mod b { path: "models/tiny.onnx", pools: { sram: 64 KiB, psram: 1 MiB } }
    }
}

fn main() {}
