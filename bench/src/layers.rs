//! `cargo run --release -p sramfit-bench --features layers -- --layers`: the time of every step of
//! each model, one line per step (kernel, shapes, MACs, median time, GFLOP/s, share of the FMA
//! peak), so that the layers where the time goes, and the ones a change made faster or slower,
//! are visible one by one.
//!
//! The steps are timed through `sramfit`'s step probes (feature `probe`, which the bench's feature
//! `layers` turns on): the generated code calls a hook after every step that runs code, and the
//! hook set here stamps the time. A step's time is the interval from the previous stamp (or the
//! start of the run) to its own. With the feature off the generated code has no probe calls at
//! all; with it on, the main table's runs call the default hook, which does nothing (one atomic
//! load and one call per step).

use std::time::Duration;

use serde_json::{Value, json};
use sramfit_planner_core::pipeline::Program;

#[cfg(feature = "layers")]
use crate::{ROUND_TIME, ROUNDS, stats};

/// One step's line.
pub struct Layer {
    /// The step's index in the compiled graph (`sramfit inspect`'s `#`).
    pub step: usize,
    pub kernel: String,
    pub node: String,
    /// Input shapes (`x` between extents, `, ` between inputs) and `-> output`.
    pub shape: String,
    pub macs: u64,
    /// (median, 10th percentile, 90th percentile).
    pub time: (Duration, Duration, Duration),
}

#[cfg(feature = "layers")]
mod stamps {
    //! The hook's record: `(step, time)` of each probe call since the last [`start`].
    use std::cell::RefCell;
    use std::time::Instant;

    thread_local! {
        static STAMPS: RefCell<Vec<(usize, Instant)>> = const { RefCell::new(Vec::new()) };
    }

    fn stamp(step: usize) {
        let now = Instant::now();
        STAMPS.with(|s| s.borrow_mut().push((step, now)));
    }

    /// Installs the stamping hook and clears the record.
    pub fn start() -> Instant {
        sramfit::probe::set_hook(stamp);
        STAMPS.with(|s| s.borrow_mut().clear());
        Instant::now()
    }

    /// The record since [`start`].
    pub fn take() -> Vec<(usize, Instant)> {
        STAMPS.with(|s| std::mem::take(&mut *s.borrow_mut()))
    }
}

/// Times every step of `run` (the sramfit engine of model `program`) over [`ROUNDS`] rounds of
/// about [`ROUND_TIME`] each; `None` without the `layers` feature.
#[cfg(feature = "layers")]
pub fn time_layers(program: &Program, run: &mut dyn FnMut(), macs: &[u64]) -> Option<Vec<Layer>> {
    let once = {
        let start = std::time::Instant::now();
        run();
        start.elapsed().max(Duration::from_micros(1))
    };
    let iterations = ((ROUND_TIME.as_secs_f64() / once.as_secs_f64()) as usize).clamp(3, 10_000);
    let mut per_step: Vec<(usize, Vec<Duration>)> = Vec::new();
    for _ in 0..ROUNDS * iterations {
        let start = stamps::start();
        run();
        let record = stamps::take();
        if per_step.is_empty() {
            per_step = record.iter().map(|&(s, _)| (s, Vec::new())).collect();
        }
        let mut previous = start;
        for ((step, samples), (s, at)) in per_step.iter_mut().zip(record) {
            assert_eq!(*step, s, "every run calls the probes of the same steps");
            samples.push(at - previous);
            previous = at;
        }
    }
    sramfit::probe::set_hook(|_| {});
    let g = &program.graph;
    let dims = |t: usize| g.tensors[t].shape.iter().map(usize::to_string).collect::<Vec<_>>().join("x");
    Some(
        per_step
            .into_iter()
            .map(|(step, mut samples)| {
                let n = &g.nodes[step];
                let ins: Vec<String> = n.inputs.iter().map(|&t| dims(t)).collect();
                Layer {
                    step,
                    kernel: n.op.kind().kernel_name().to_owned(),
                    node: n.name.clone(),
                    shape: format!("{} -> {}", ins.join(", "), dims(n.output)),
                    macs: macs[step],
                    time: stats(&mut samples),
                }
            })
            .collect(),
    )
}

/// Without the `layers` feature the generated code has no probes to time steps with.
#[cfg(not(feature = "layers"))]
pub fn time_layers(_: &Program, _: &mut dyn FnMut(), _: &[u64]) -> Option<Vec<Layer>> {
    None
}

/// Prints one model's steps as a table, and returns them as JSON.
pub fn print(model: &str, layers: &[Layer], peak: f64) -> Value {
    let total: Duration = layers.iter().map(|l| l.time.0).sum();
    println!();
    println!("{model}: {} steps, sum of step medians {:.3} ms", layers.len(), total.as_secs_f64() * 1e3);
    println!();
    println!("| # | kernel | node | shapes (inputs -> output) | MMACs | us (p10-p90) | share | GFLOP/s | % of peak |");
    println!("|--:|---|---|---|--:|--:|--:|--:|--:|");
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let rows = layers.iter().map(|l| {
        let (m, lo, hi) = l.time;
        let gflops = 2.0 * l.macs as f64 / m.as_secs_f64().max(1e-12) / 1e9;
        let share = m.as_secs_f64() / total.as_secs_f64().max(1e-12);
        let (gf, pct) = match l.macs {
            0 => ("-".to_owned(), "-".to_owned()),
            _ => (format!("{gflops:.1}"), format!("{:.1}%", 100.0 * gflops / peak)),
        };
        println!(
            "| {} | {} | {} | {} | {:.3} | {:.1} ({:.1}-{:.1}) | {:.1}% | {} | {} |",
            l.step,
            l.kernel,
            l.node,
            l.shape,
            l.macs as f64 / 1e6,
            us(m),
            us(lo),
            us(hi),
            100.0 * share,
            gf,
            pct,
        );
        json!({
            "step": l.step, "kernel": l.kernel, "node": l.node, "shape": l.shape, "macs": l.macs,
            "us": us(m), "us_p10": us(lo), "us_p90": us(hi), "share": share,
            "gflops": (l.macs > 0).then_some(gflops), "peak_share": (l.macs > 0).then_some(gflops / peak),
        })
    });
    Value::Array(rows.collect())
}
