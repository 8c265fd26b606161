sramfit::models! {
    mod pair {
        pub mod a { path: "models/chain.onnx", io: arena }
        pub mod b { path: "models/tiny.onnx", io: arena }
    }
}

fn main() {}
