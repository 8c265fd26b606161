sramfit::model! {
    mod m {
        path: "models/chain.onnx",
        optimize: { fuse_activations: false, fold_everything: true },
    }
}

fn main() {}
