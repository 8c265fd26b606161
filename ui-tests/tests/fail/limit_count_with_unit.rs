sramfit::model! {
    mod m {
        path: "models/chain.onnx",
        limits: { nodes: 2 KiB },
    }
}

fn main() {}
