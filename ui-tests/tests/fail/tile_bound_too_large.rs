sramfit::model! {
    mod m {
        path: "models/chain.onnx",
        optimize: { tile: 150% },
    }
}

fn main() {}
