sramfit::model! {
    mod m {
        path: "models/chain.onnx",
        optimize: { in_place: 5% },
    }
}

fn main() {}
