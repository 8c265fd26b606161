//! A tiny file whose constant subgraph would allocate gigabytes at build time: refused before
//! anything is allocated, naming the node, the quantity and the limit (scripts/gen_limit_models.py).
sramfit::model! {
    mod m {
        path: "models/limits/expand.onnx",
    }
}

fn main() {}
