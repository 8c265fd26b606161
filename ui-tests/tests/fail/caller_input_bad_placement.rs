sramfit::model! {
    mod m {
        path: "models/chain.onnx",
        io: arena { "input": heap },
    }
}

fn main() {}
