sramfit::model! {
    mod m {
        path: "models/chain.onnx",
        io: heap,
    }
}

fn main() {}
