//! Builds, through planner-core's real code generation path, programs that the `model!` macro can
//! never produce, and writes them as modules into `OUT_DIR`:
//!
//! - `corrupted.rs`: committed models compiled in checked mode, then given a deliberately wrong
//!   plan (an offset moved onto a live tensor, a lifetime cut short) *after* the verifier ran,
//!   with the `sramfit::Error::PlanViolation` the checked run must return (`tests/checked_plans.rs`);
//! - `random_graphs.rs`: random valid models (random DAGs of supported operators), compiled in
//!   checked mode, to be compared with tract (`tests/random_graphs.rs`);
//! - `rewrite_graphs.rs`: random models shaped for the memory-saving rewrites, each compiled with
//!   every rewrite on and with none, to be compared bit for bit (`tests/rewrite_graphs.rs`).

#[path = "build/corrupt.rs"]
mod corrupt;
#[path = "build/out.rs"]
mod out;
#[path = "build/random_graphs.rs"]
mod random_graphs;
#[path = "build/rewrite_graphs.rs"]
mod rewrite_graphs;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build");
    let out = out::Out::new();
    corrupt::write(&out);
    random_graphs::write(&out);
    rewrite_graphs::write(&out);
}
