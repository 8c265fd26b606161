//! Patch-based execution's two ways with the rows bands share, and its bound on the
//! multiply-accumulates recomputing them may add (`optimize: { tile: N%, tile_cache }`): the
//! search stays within the bound, a tighter bound never gives a smaller arena, the report says
//! the bound, and caching the shared rows (StreamNet) is measured against recomputing them
//! (`-- --nocapture` prints both).

use std::path::PathBuf;

use sramfit_planner_core::compile::compile_model;
use sramfit_planner_core::error::CompileError;
use sramfit_planner_core::ir::Op;
use sramfit_planner_core::pipeline::Program;
use sramfit_planner_core::pools::PoolSpec;
use sramfit_planner_core::request::Request;
use sramfit_planner_core::target::Target;

/// `name` compiled tiled within `bound` percent extra MACs (untiled for `None`), caching rows
/// where that is better if `cache`.
fn compile(name: &str, bound: Option<u32>, cache: bool) -> Program {
    let mut request = Request::new(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/models").join(name));
    match bound {
        Some(percent) => request.optimizations.set_tile_bound(percent).unwrap(),
        None => request.optimizations.tile = false,
    }
    request.optimizations.tile_cache = cache;
    compile_model(&request).unwrap_or_else(|e| panic!("{name}: {e}")).into_program()
}

/// The extra MACs of `p`'s tiling, in percent, and how many of its chains cache rows.
fn tiling(p: &Program) -> (f64, usize) {
    p.optimizations.1.tiled.map_or((0.0, 0), |t| (100.0 * t.extra_macs as f64 / t.macs as f64, t.cached_chains))
}

/// Bytes the steps of `p` copy (row copies, cached rows and band concatenations among them).
fn copied_bytes(p: &Program) -> u64 {
    let copies = p.graph.nodes.iter().filter(|n| matches!(n.op, Op::Copy(_)));
    copies.map(|n| p.graph.tensors[n.output].bytes()).sum()
}

#[test]
fn tiling_stays_within_its_bound_and_caching_never_loses() {
    for name in ["vww_mobilenetv1.onnx", "mnist_cnn.onnx", "lenet.onnx", "arch/mobilenetv2_035.onnx"] {
        let untiled = compile(name, None, false);
        println!("{name}: untiled {} B, {} B copied", untiled.plan.arena_bytes, copied_bytes(&untiled));
        let mut previous = (untiled.plan.arena_bytes, untiled.plan.arena_bytes);
        for bound in [0, 2, 10, 20] {
            let mut arenas = [0; 2];
            for (cache, arena) in [false, true].into_iter().zip(&mut arenas) {
                let p = compile(name, Some(bound), cache);
                let (o, applied) = &p.optimizations;
                assert_eq!((o.tile_extra_macs_percent, applied.tile_bound_percent), (bound, bound));
                let (extra, cached) = tiling(&p);
                *arena = p.plan.arena_bytes;
                let how = if cache { "recomputing or caching" } else { "recomputing" };
                println!(
                    "  within {bound:>2}%, {how}: arena {arena} B, {extra:.2}% extra MACs, {cached} chain(s) cached, {} B copied",
                    copied_bytes(&p)
                );
                assert!(extra <= bound as f64, "{name}: {extra:.2}% extra MACs over a bound of {bound}%");
                assert!(cache || cached == 0, "{name}: rows cached with caching off");
                let line = applied.summary(o);
                match (applied.tiled, applied.tile_declined) {
                    (None, None) => assert!(line.contains(&format!("within {bound}% extra MACs")), "{line}"),
                    (None, Some(t)) => {
                        assert!(!t.saves(applied.tile_min_gain_percent) && line.contains("worth its time"))
                    }
                    (Some(t), _) => assert!(t.saves(applied.tile_min_gain_percent), "{name}: {line}"),
                }
            }
            assert!(arenas[1] <= arenas[0], "{name}: caching rows gave a larger arena within {bound}%");
            assert!(
                arenas[0] <= previous.0 && arenas[1] <= previous.1,
                "{name}: a looser bound ({bound}%) gave a larger arena"
            );
            previous = (arenas[0], arenas[1]);
        }
    }
}

#[test]
fn a_bound_over_100_percent_is_refused() {
    let mut o = sramfit_planner_core::optimize::Optimizations::default();
    let e = o.set_tile_bound(101).unwrap_err();
    assert!(e.contains("100%"), "{e}");
    assert_eq!(o.tile_extra_macs_percent, 10, "a refused bound changes nothing");
}

#[test]
fn a_small_gain_is_declined_unless_the_sram_budget_needs_it() {
    // The Keras DS-CNN's best tiling saves 320 of 8,000 bytes (4%), for 1.67x the instructions of
    // the untiled build on a Cortex-M0 (README, "On the chip"): not kept by default.
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/models/tflite/keras/ds_cnn_int8.tflite");
    let mut request = Request::new(path);
    request.target = Target::new("thumbv6m-none-eabi");
    let p = compile_model(&request).unwrap().into_program();
    let (o, applied) = &p.optimizations;
    let declined = applied.tile_declined.expect("a tiling was found and declined");
    assert!(applied.tiled.is_none() && !declined.saves(applied.tile_min_gain_percent), "{applied:?}");
    assert_eq!(p.plan.arena_bytes, declined.lower_bounds.0, "the untiled arena, at its lower bound");
    assert!(applied.summary(o).contains("less than the 10% worth its time"), "{}", applied.summary(o));

    // Any gain kept: the tiled arena.
    let mut any = request.clone();
    any.optimizations.tile_min_gain_percent = Some(0);
    let tiled = compile_model(&any).unwrap().into_program();
    let t = tiled.optimizations.1.tiled.expect("tiled with any gain kept");
    assert!(t.saves(0) && tiled.plan.arena_bytes < p.plan.arena_bytes);
    println!("DS-CNN int8: untiled {} B, tiled {} B", p.plan.arena_bytes, tiled.plan.arena_bytes);

    // A budget between the two: the tiling the budget needs is taken.
    let mut budgeted = request.clone();
    budgeted.sram = Some(p.plan.arena_bytes - 1);
    let fitted = compile_model(&budgeted).unwrap().into_program();
    assert_eq!(fitted.plan.arena_bytes, tiled.plan.arena_bytes);
    assert!(fitted.optimizations.1.tiled.is_some());
    // A budget below both: the error reports the tiled attempt.
    budgeted.sram = Some(tiled.plan.arena_bytes - 1);
    match compile_model(&budgeted).unwrap_err() {
        CompileError::SramBudget { needed, .. } => assert_eq!(needed, tiled.plan.arena_bytes),
        other => panic!("not a budget error: {other}"),
    }
}

#[test]
fn application_processors_tile_only_when_asked_or_when_a_budget_needs_it() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/models/vww_mobilenetv1.onnx");
    let on = |triple: &str| {
        let mut request = Request::new(&path);
        request.target = Target::new(triple);
        request
    };
    let arena = |request: &Request| compile_model(request).unwrap().into_program().plan.arena_bytes;
    // A microcontroller tiles unasked.
    let memory_first = compile_model(&on("thumbv7em-none-eabihf")).unwrap().into_program();
    let tiled = memory_first.optimizations.1.tiled.expect("tiled on a Cortex-M").lower_bounds.1;
    assert_eq!(memory_first.plan.arena_bytes, tiled);

    for triple in ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"] {
        // Unasked, the untiled program, the tiling named in the report.
        let speed = compile_model(&on(triple)).unwrap().into_program();
        let (o, applied) = &speed.optimizations;
        let declined = applied.tile_declined.expect("the tiling is found and declined");
        assert!(applied.tiled.is_none() && declined.lower_bounds.1 == tiled, "{triple}: {applied:?}");
        assert_eq!(speed.plan.arena_bytes, declined.lower_bounds.0, "{triple}: the untiled arena");
        assert!(applied.summary(o).contains("speed first on this target"), "{}", applied.summary(o));

        // Asked for (`tile: true`, or a bound on its extra MACs): tiled.
        let mut asked = on(triple);
        asked.optimizations.set("tile", true).unwrap();
        assert_eq!(arena(&asked), tiled, "{triple}: tile: true");
        asked = on(triple);
        asked.optimizations.set_tile_bound(10).unwrap();
        assert_eq!(arena(&asked), tiled, "{triple}: tile: 10%");

        // An sram budget or pools the untiled arena overflows: tiled.
        let mut budget = on(triple);
        budget.sram = Some(speed.plan.arena_bytes - 1);
        assert_eq!(arena(&budget), tiled, "{triple}: sram budget");
        let mut pool = on(triple);
        let half = speed.plan.arena_bytes / 2;
        pool.pools = vec![
            PoolSpec { name: "sram".into(), bytes: half, section: None },
            PoolSpec { name: "psram".into(), bytes: half - 1, section: Some(".psram".into()) },
        ];
        let pooled = compile_model(&pool).unwrap().into_program();
        assert!(pooled.optimizations.1.tiled.is_some(), "{triple}: pools the untiled plan overflows");
        // A budget the untiled arena fits: untiled.
        budget.sram = Some(speed.plan.arena_bytes);
        assert_eq!(arena(&budget), speed.plan.arena_bytes, "{triple}: a budget it fits");
    }
}
