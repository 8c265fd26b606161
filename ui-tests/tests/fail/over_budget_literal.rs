sramfit::model! {
    mod m {
        path: "models/chain.onnx",
        sram: 1 KiB,
    }
}

fn main() {}
