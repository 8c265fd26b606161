//! A limit lowered below what the model needs: the error names it and is spanned on `limits:`.
sramfit::model! {
    mod m {
        path: "models/chain.onnx",
        limits: { nodes: 2 },
    }
}

fn main() {}
