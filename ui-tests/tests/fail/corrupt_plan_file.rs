//! A plan file that matches the model but places every buffer at offset 0: the verifier rejects it
//! and the build fails, naming the file (never code from an unverified plan).
sramfit::model! {
    mod m {
        path: "models/offline/corrupt/chain.onnx",
    }
}

fn main() {}
