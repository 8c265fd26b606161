//! Raised limits, a target triple, per-rewrite switches and a bound on tiling are accepted.
sramfit::model! {
    mod m {
        path: "models/tiny.onnx",
        limits: { fold_bytes: 2 GiB, fold_tensor_bytes: 1 GiB, nodes: 200_000, tensor_elements: 1_000_000_000 },
        target: "thumbv7em-none-eabihf",
        optimize: { in_place: false, pack_weights: false, tile: 5% },
    }
}

fn main() {
    // The module works: a ReLU-ended model gives non-negative outputs, in the planned arena.
    let mut out = [f32::NAN; 2048];
    m::run(&[0.5; 1024], &mut out).unwrap();
    assert!(out.iter().all(|v| *v >= 0.0));
    assert!(m::LOWER_BOUND_BYTES <= m::ARENA_BYTES && m::ARENA_BYTES <= m::NAIVE_BYTES);
}
