//! The bound on the multiply-accumulates patch-based execution may add (`optimize: { tile: N% }`):
//! the search stays within it, a tighter bound never gives a smaller arena, and the report says
//! the bound.

use std::path::PathBuf;

use sramfit_planner_core::compile::compile_model;
use sramfit_planner_core::pipeline::Program;
use sramfit_planner_core::request::Request;

fn compile(name: &str, bound: Option<u32>) -> Program {
    let mut request = Request::new(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/models").join(name));
    match bound {
        Some(percent) => request.optimizations.set_tile_bound(percent).unwrap(),
        None => request.optimizations.tile = false,
    }
    compile_model(&request).unwrap_or_else(|e| panic!("{name}: {e}")).into_program()
}

#[test]
fn tiling_stays_within_its_bound() {
    for name in ["vww_mobilenetv1.onnx", "mnist_cnn.onnx", "lenet.onnx"] {
        let untiled = compile(name, None).plan.arena_bytes;
        let mut previous = untiled;
        println!("{name}: untiled {untiled} B");
        for bound in [0, 1, 2, 5, 10, 20] {
            let p = compile(name, Some(bound));
            let (o, applied) = &p.optimizations;
            assert_eq!((o.tile_extra_macs_percent, applied.tile_bound_percent), (bound, bound));
            let line = applied.summary(o);
            let extra = applied.tiled.map_or(0.0, |t| 100.0 * t.extra_macs as f64 / t.macs as f64);
            println!("  within {bound:>2}%: arena {} B, {extra:.2}% extra MACs", p.plan.arena_bytes);
            assert!(extra <= bound as f64, "{name}: {extra:.2}% extra MACs over a bound of {bound}%");
            assert!(p.plan.arena_bytes <= previous, "{name}: a looser bound ({bound}%) gave a larger arena");
            if applied.tiled.is_none() {
                assert!(line.contains(&format!("within {bound}% extra MACs")), "{line}");
            }
            previous = p.plan.arena_bytes;
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
