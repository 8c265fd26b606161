sramfit::model! {
    mod m {
        path: "models/chain.onnx",
        io: arena { "image": caller },
    }
}

fn main() {}
