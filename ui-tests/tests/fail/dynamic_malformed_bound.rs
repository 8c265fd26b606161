sramfit::model! {
    mod m {
        path: "models/dyn_flatten_gemm.onnx",
        inputs: { "input": [1, "frames < 98", 8] },
    }
}

fn main() {}
