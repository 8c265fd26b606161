//! Benchmark: plans every MiniMalloc instance in `../shared/bench/minimalloc/` and a 20,000-buffer
//! random problem, verifies every plan, and prints a table.
//!
//! ```text
//! cargo run --release -p sramfit-planner-core --no-default-features --example minimalloc_bench \
//!     [-- --long-steps N] [--dir DIR]
//! ```
//!
//! Columns: buffers, live-sum lower bound, greedy by size, the default `plan()` (arena and time),
//! `plan_with` a long search budget (arena and time), and each arena's ratio to the lower bound.
//! `*` marks a plan proven optimal.

use std::path::{Path, PathBuf};
use std::time::Instant;

use sramfit_planner_core::csv::read_problem;
use sramfit_planner_core::plan::{plan, plan_using, plan_with, Algorithm, Options, Plan};
use sramfit_planner_core::problem::{Buffer, Lifetime, Problem};
use sramfit_planner_core::verify::verify;

const DEFAULT_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/bench/minimalloc");

fn main() {
    let mut args = std::env::args().skip(1);
    let mut long = Options { search_steps: 5_000_000_000, ..Options::default() };
    let mut dir = PathBuf::from(DEFAULT_DIR);
    while let Some(arg) = args.next() {
        let value = args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--long-steps" => long.search_steps = value.parse().expect("--long-steps takes a number"),
            "--dir" => dir = value.into(),
            _ => panic!("unknown argument {arg}"),
        }
    }
    println!("long budget: {} steps (default {})", long.search_steps, Options::DEFAULT_SEARCH_STEPS);
    println!(
        "| instance | buffers | lower bound | greedy by size | default | default ms | long budget | long ms | default/LB | long/LB |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for path in instances(&dir) {
        let text = std::fs::read_to_string(&path).expect("readable instance");
        let p = read_problem(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let greedy = plan_using(&p, Algorithm::GreedyBySize, &Options::default());
        let (default, default_ms) = timed(&p, || plan(&p));
        let (long_plan, long_ms) = timed(&p, || plan_with(&p, &long));
        let lb = default.lower_bound.bytes;
        let ratio = |plan: &Plan| plan.arena_bytes as f64 / lb.max(1) as f64;
        println!(
            "| {} | {} | {lb} | {} | {}{} | {default_ms} | {}{} | {long_ms} | {:.4} | {:.4} |",
            path.file_name().unwrap_or_default().to_string_lossy(),
            p.buffers.len(),
            greedy.arena_bytes,
            default.arena_bytes,
            star(&default),
            long_plan.arena_bytes,
            star(&long_plan),
            ratio(&default),
            ratio(&long_plan),
        );
    }
    let p = random_problem(20_000, 0x5eed);
    let (scale, ms) = timed(&p, || plan(&p));
    println!(
        "random 20,000 buffers: arena {} (lower bound {}, ratio {:.4}, {}) in {ms} ms",
        scale.arena_bytes,
        scale.lower_bound.bytes,
        scale.arena_bytes as f64 / scale.lower_bound.bytes as f64,
        scale.algorithm
    );
}

/// The `*.csv` files of `dir`, sorted; empty (with a message) if the folder is absent.
fn instances(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        println!("skipped: no instances at {}", dir.display());
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "csv"))
        .collect();
    paths.sort();
    paths
}

/// Runs `f`, verifies its plan, and returns it with the elapsed milliseconds.
fn timed(p: &Problem, f: impl FnOnce() -> Plan) -> (Plan, u128) {
    let start = Instant::now();
    let plan = f();
    let ms = start.elapsed().as_millis();
    if let Err(v) = verify(p, &plan.offsets, plan.arena_bytes, &[]) {
        panic!("invalid plan: {}", v.describe(p));
    }
    (plan, ms)
}

fn star(plan: &Plan) -> &'static str {
    if plan.optimal {
        "*"
    } else {
        ""
    }
}

/// A model-like random problem: `n` buffers over `n` steps, mostly short-lived (a few steps), some
/// living long, sizes from 16 bytes to 64 KiB in multiples of 16, alignment 16.
fn random_problem(n: usize, seed: u64) -> Problem {
    let mut state = seed;
    let mut next = move || {
        // splitmix64
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let steps = n as u64;
    let buffers = (0..n)
        .map(|i| {
            let first = next() % steps;
            let len = if next() % 20 == 0 { next() % (steps / 10) } else { next() % 8 };
            let last = (first + len).min(steps - 1);
            Buffer {
                name: format!("t{i}"),
                size: 16 * (1 + next() % 4096),
                align: 16,
                lifetime: Lifetime::new(first as u32, last as u32),
            }
        })
        .collect();
    Problem { buffers }
}
