//! Raised limits, a target triple and per-rewrite switches are accepted.
sramfit::model! {
    mod m {
        path: "models/tiny.onnx",
        limits: { fold_bytes: 2 GiB, fold_tensor_bytes: 1 GiB, nodes: 200_000, tensor_elements: 1_000_000_000 },
        target: "thumbv7em-none-eabihf",
        optimize: { in_place: false, pack_weights: false },
    }
}

fn main() {
    assert!(m::ARENA_BYTES > 0);
}
