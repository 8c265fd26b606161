//! Memory pools on a whole network: ResNet-18 64x64 with a 128 KiB first pool, compiled through the
//! driver as `model!` does. The figures it prints are the README's
//! (`cargo test -p sramfit-planner-core --test pools -- --nocapture`).
#![cfg(feature = "onnx")]

use std::path::Path;

use sramfit_planner_core::compile;
use sramfit_planner_core::pools::{verify_pools, PoolSpec};
use sramfit_planner_core::report::PlanReport;
use sramfit_planner_core::request::Request;

fn resnet() -> Request {
    Request::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/models/arch/resnet18.onnx"))
}

#[test]
fn resnet18_in_a_128_kib_pool_and_a_second_one() {
    let single = compile::compile_model(&resnet()).unwrap().into_program();
    let mut request = resnet();
    request.pools = vec![PoolSpec::parse("sram=128KiB").unwrap(), PoolSpec::parse("psram=8MiB@.psram").unwrap()];
    let pooled = compile::compile_model(&request).unwrap().into_program();
    let pools = pooled.pools.as_ref().expect("planned in pools");
    verify_pools(&pooled.live.problem, pools).unwrap();
    let (sram, psram) = (&pools.pools[0], &pools.pools[1]);
    assert!(sram.bytes() <= 128 * 1024 && psram.bytes() <= 8 << 20);
    // The same program, only its buffers placed apart.
    assert_eq!(pooled.live.problem, single.live.problem);
    println!(
        "resnet18 64x64: single arena {} B ({} buffers, lower bound {} B); pool sram {} B ({} buffers), pool psram {} B ({} buffers)",
        single.plan.arena_bytes,
        single.live.problem.buffers.len(),
        single.plan.lower_bound.bytes,
        sram.bytes(),
        sram.buffers.len(),
        psram.bytes(),
        psram.buffers.len()
    );
    // The report names every arena tensor's pool, and has one device-map line per pool.
    let report = PlanReport::from_program(&pooled, "resnet18", &request.target);
    assert!(report.tensors.iter().filter(|t| t.buffer.is_some()).all(|t| t.pool.is_some()));
    let lines: Vec<&str> = report.device.sram.iter().map(|e| e.name.as_str()).collect();
    assert!(lines.starts_with(&["pool `sram`", "pool `psram`"]), "{lines:?}");
    // Deterministic.
    assert_eq!(compile::compile_model(&request).unwrap().into_program().pools.as_ref(), Some(pools));
}
