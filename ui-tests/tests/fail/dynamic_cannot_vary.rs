// Flatten turns [1, frames, 8] into [1, 8 * frames], and the Gemm's weight has 80 rows: only
// frames = 10 fits, so the dimension cannot vary.
sramfit::model! {
    mod m {
        path: "models/dyn_flatten_gemm.onnx",
        inputs: { "input": [1, "frames <= 10", 8] },
    }
}

fn main() {}
