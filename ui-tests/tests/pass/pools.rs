// Two pools, the second in a section of its own: the module has one static per pool and an
// `Arena` of one `&mut` per pool for `run_in`.
sramfit::model! {
    mod m {
        path: "models/tiny.onnx",
        pools: { fast: 1 KiB, slow: 64 KiB in ".data.sramfit_slow" },
    }
}

fn main() {
    const { assert!(m::POOL_FAST_BYTES <= 1024 && m::POOL_SLOW_BYTES <= 64 * 1024) };
    let (mut fast, mut slow) = (m::PoolFast::new(), m::PoolSlow::new());
    let _arena = m::Arena::new(&mut fast, &mut slow);
}
