//! Random valid graphs (`build/random_graphs.rs`) compiled in checked mode must compile, run clean
//! and match tract on the same `.onnx` file, on random inputs. More graphs:
//! `SRAMFIT_RANDOM_GRAPHS=500 cargo test -p sramfit-safety --test random_graphs` (and
//! `SRAMFIT_RANDOM_SEED=N` for another range).

#[path = "../../tests/common/mod.rs"]
mod common;

use common::RunDyn;

/// The compiled module's entry point and shapes, or the compile error.
type Compiled = Result<(RunDyn, &'static [&'static [usize]], &'static [&'static [usize]]), &'static str>;

/// One generated graph.
pub struct Graph {
    seed: u64,
    file: &'static str,
    ops: &'static str,
    compiled: Compiled,
}

include!(concat!(env!("OUT_DIR"), "/random_graphs.rs"));

#[test]
fn random_graphs_compile_and_match_tract() {
    let mut failures = Vec::new();
    for g in GRAPHS {
        let (run, input_shapes, output_shapes) = match g.compiled {
            Ok(c) => c,
            Err(e) => {
                failures.push(format!("seed {} ({}): does not compile: {e}", g.seed, g.ops));
                continue;
            }
        };
        let inputs: Vec<(Vec<usize>, Vec<f32>)> =
            input_shapes.iter().map(|s| (s.to_vec(), common::random(s.iter().product(), g.seed))).collect();
        let want = common::tract_run(g.file, &inputs);
        let mut outs: Vec<Vec<f32>> = output_shapes.iter().map(|s| vec![f32::NAN; s.iter().product()]).collect();
        let mut outs_ref: Vec<&mut [f32]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
        let ins: Vec<&[f32]> = inputs.iter().map(|(_, d)| d.as_slice()).collect();
        if let Err(e) = run(&ins, &mut outs_ref) {
            failures.push(format!("seed {} ({}): {e}", g.seed, g.ops));
            continue;
        }
        for (k, (got, want)) in outs.iter().zip(&want).enumerate() {
            let what = format!("seed {} ({}), output {k}", g.seed, g.ops);
            if std::panic::catch_unwind(|| common::assert_close(&what, got, want, 1e-4, 1e-5)).is_err() {
                failures.push(what);
            }
        }
    }
    eprintln!("{} random graphs, {} failures", GRAPHS.len(), failures.len());
    assert!(
        failures.is_empty(),
        "{} of {} random graphs failed:\n{}",
        failures.len(),
        GRAPHS.len(),
        failures.join("\n")
    );
}
