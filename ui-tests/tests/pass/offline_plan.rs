//! Offline plan files beside the model (written by `sramfit plan`, see scripts/gen_ui_plans.sh):
//! a matching one is used as written, a stale one is ignored. The same model twice:
//! `used/chain.plan.json` holds a plan without reuse, `stale/chain.plan.json` belongs to another model.
sramfit::model! {
    mod planned {
        path: "models/offline/used/chain.onnx",
    }
}

sramfit::model! {
    mod fresh {
        path: "models/offline/stale/chain.onnx",
    }
}

// The file's plan was used: no reuse at all. (If this fails after a change to sramfit, the plan
// files are stale: rerun scripts/gen_ui_plans.sh.)
const _: () = assert!(planned::ARENA_BYTES == planned::NAIVE_BYTES);
// The stale file was ignored: the build-time planner reaches the lower bound.
const _: () = assert!(fresh::ARENA_BYTES == fresh::LOWER_BOUND_BYTES);
const _: () = assert!(fresh::ARENA_BYTES < planned::ARENA_BYTES);

fn main() {
    let input: [f32; 256] = core::array::from_fn(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0);
    let (mut a, mut b) = ([0.0f32; 256], [0.0f32; 256]);
    planned::run(&input, &mut a).unwrap();
    fresh::run(&input, &mut b).unwrap();
    // Same kernels in the same order on differently placed buffers: bit-identical results.
    assert_eq!(a.map(f32::to_bits), b.map(f32::to_bits));
    assert!(a.iter().any(|&v| v != 0.0));
}
