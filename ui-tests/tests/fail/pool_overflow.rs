sramfit::model! {
    mod m {
        path: "models/tiny.onnx",
        pools: { fast: 16 B, slow: 32 B },
    }
}

fn main() {}
