//! Memory pools (`pools:`): ResNet-18 64x64 with a 128 KiB first pool, and a small model in two
//! pools (run in checked mode by CI, `--features checked`): each planned and verified per pool,
//! bit-identical to the single-arena build of the same file, and within the fixture's tolerance
//! of onnxruntime.

mod common;

const RESNET: &str = "tests/models/arch/resnet18.onnx";
const SMALL: &str = "tests/models/mobilenetv2_block.onnx";

sramfit::model! { pub mod resnet_single { path: "tests/models/arch/resnet18.onnx" } }
sramfit::model! {
    pub mod resnet_pools {
        path: "tests/models/arch/resnet18.onnx",
        pools: { sram: 128 KiB, psram: 8 MiB in ".data.sramfit_psram" },
    }
}

sramfit::model! { pub mod small_single { path: "tests/models/mobilenetv2_block.onnx" } }
sramfit::model! {
    pub mod small_pools {
        path: "tests/models/mobilenetv2_block.onnx",
        pools: { fast: 48 KiB, slow: 1 MiB },
    }
}

/// Runs `run` on `inputs`, with outputs of `shapes` (filled with NaN first).
fn outputs(run: common::RunDyn, shapes: &[&[usize]], inputs: &[Vec<f32>]) -> Vec<Vec<f32>> {
    let mut outs: Vec<Vec<f32>> = shapes.iter().map(|s| vec![f32::NAN; s.iter().product()]).collect();
    let ins: Vec<&[f32]> = inputs.iter().map(Vec::as_slice).collect();
    let mut outs_ref: Vec<&mut [f32]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
    run(&ins, &mut outs_ref).expect("run_dyn");
    outs
}

/// The pooled build against onnxruntime (the fixture, within its tolerance) and bit for bit against
/// the single-arena build, on the fixture's inputs and two random ones.
fn check(model: &str, shapes: &[&[usize]], pooled: common::RunDyn, single: common::RunDyn) {
    let fx = common::fixture(model);
    let fixture_inputs: Vec<Vec<f32>> = fx.inputs.iter().map(|t| t.data.clone()).collect();
    let got = outputs(pooled, shapes, &fixture_inputs);
    for (o, want) in got.iter().zip(&fx.outputs) {
        common::assert_close(&format!("{model} in pools vs onnxruntime, {}", want.name), o, &want.data, 1e-4, 1e-5);
    }
    for seed in 0..3u64 {
        let inputs = match seed {
            0 => fixture_inputs.clone(),
            _ => fx.inputs.iter().enumerate().map(|(i, t)| common::random(t.data.len(), seed * 7 + i as u64)).collect(),
        };
        let (a, b) = (outputs(pooled, shapes, &inputs), outputs(single, shapes, &inputs));
        for (k, (a, b)) in a.iter().zip(&b).enumerate() {
            let (a, b): (Vec<u32>, Vec<u32>) =
                (a.iter().map(|x| x.to_bits()).collect(), b.iter().map(|x| x.to_bits()).collect());
            assert!(a == b, "{model} (input {seed}), output {k}: the pooled build differs from the single arena");
        }
    }
}

#[test]
fn resnet18_with_a_128_kib_first_pool() {
    const { assert!(resnet_pools::POOL_SRAM_BYTES <= 128 * 1024) };
    // The first pool is used, and the second holds what the first cannot.
    const { assert!(resnet_pools::POOL_SRAM_BYTES > 64 * 1024) };
    const { assert!(resnet_pools::POOL_PSRAM_BYTES > 0 && resnet_pools::POOL_PSRAM_BYTES <= 8 << 20) };
    // Splitting the buffers never needs fewer bytes than one arena of them all.
    const { assert!(resnet_pools::POOL_SRAM_BYTES + resnet_pools::POOL_PSRAM_BYTES >= resnet_single::ARENA_BYTES) };
    println!(
        "resnet18: single arena {} B; pools: sram {} B, psram {} B",
        resnet_single::ARENA_BYTES,
        resnet_pools::POOL_SRAM_BYTES,
        resnet_pools::POOL_PSRAM_BYTES
    );
    check(RESNET, resnet_pools::OUTPUT_SHAPES, resnet_pools::run_dyn, resnet_single::run_dyn);
}

#[test]
fn small_model_in_two_pools() {
    const { assert!(small_pools::POOL_FAST_BYTES <= 48 * 1024) };
    const { assert!(small_pools::POOL_FAST_BYTES > 0 && small_pools::POOL_SLOW_BYTES > 0) };
    check(SMALL, small_pools::OUTPUT_SHAPES, small_pools::run_dyn, small_single::run_dyn);
}

#[test]
fn run_in_takes_the_callers_pools() {
    let fx = common::fixture(SMALL);
    assert_eq!(
        (small_pools::INPUT_SHAPES, small_pools::OUTPUT_SHAPES),
        (&[&[1, 16, 24, 24][..]][..], &[&[1, 24, 12, 12][..]][..])
    );
    let input: &[f32; 9216] = fx.inputs[0].data.as_slice().try_into().unwrap();
    let (mut fast, mut slow) = (Box::new(small_pools::PoolFast::new()), Box::new(small_pools::PoolSlow::new()));
    let mut arena = small_pools::Arena::new(&mut fast, &mut slow);
    let (mut a, mut b) = ([0f32; 3456], [0f32; 3456]);
    small_pools::run_in(&mut arena, input, &mut a).unwrap();
    small_pools::run(input, &mut b).unwrap();
    assert_eq!(a.map(f32::to_bits), b.map(f32::to_bits));
}
