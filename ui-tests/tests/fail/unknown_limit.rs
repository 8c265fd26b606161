sramfit::model! {
    mod m {
        path: "models/chain.onnx",
        limits: { fold: 1 GiB },
    }
}

fn main() {}
