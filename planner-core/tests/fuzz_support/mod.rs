//! The property both the `cargo fuzz` target (`fuzz/fuzz_targets/import_plan.rs`) and the quick
//! test (`tests/fuzz_import.rs`) check on arbitrary bytes: the importer and the planner never
//! panic, and every model they accept has a plan the verifier accepts and an expansion. The import
//! runs with the default build-time limits on (`import::limits`), as every front end does: a
//! mutated dimension that asks for gigabytes is refused before anything is allocated.
//!
//! One exception, measured rather than hidden: tract itself panics on some malformed protobufs
//! (e.g. an output name no node produces: `no entry found for key` in tract-onnx's `model.rs`).
//! Every front end (`model!`, `sramfit-build`, `sramfit inspect`) catches panics of the compiler
//! and reports them as errors, so such an input is [`Outcome::TractPanic`]; a panic anywhere else
//! (sramfit's own code) still breaks the property (and aborts, under libFuzzer).

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

use sramfit_planner_core::codegen::{self, CodegenOptions};
use sramfit_planner_core::{import, pipeline, verify};
use tract_onnx::prelude::Framework;

/// What happened to one input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Not an ONNX protobuf.
    NotOnnx,
    /// Decoded, refused by the importer or the planner with an error.
    Refused,
    /// Compiled: verified plan, code emitted.
    Compiled,
    /// tract panicked (reported as an error by every front end).
    TractPanic,
}

thread_local! {
    /// Whether the last panic on this thread came from tract's sources.
    static IN_TRACT: Cell<bool> = const { Cell::new(false) };
}

/// Installs (once) a panic hook that records whether a panic is tract's, and aborts on any other
/// panic (libFuzzer reports an abort as a crash; the quick test sees it as a failed test).
fn install_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        panic::set_hook(Box::new(|info| {
            let tract = info.location().is_some_and(|l| l.file().contains("/tract-"));
            IN_TRACT.with(|t| t.set(tract));
            if !tract {
                eprintln!("{info}\n{}", std::backtrace::Backtrace::force_capture());
                std::process::abort();
            }
        }));
    });
}

/// Runs one input through decode -> import -> plan -> verify -> codegen. Panics only when the
/// property is broken (a panic below, or an accepted plan the verifier refuses).
pub fn check_bytes(data: &[u8]) -> Outcome {
    install_hook();
    match panic::catch_unwind(AssertUnwindSafe(|| compile_bytes(data))) {
        Ok(outcome) => outcome,
        Err(_) if IN_TRACT.with(Cell::get) => Outcome::TractPanic,
        Err(e) => panic::resume_unwind(e),
    }
}

fn compile_bytes(data: &[u8]) -> Outcome {
    let imported = if import::is_tflite(data) {
        import::import_tflite(data, &[], &Default::default())
    } else {
        let Ok(proto) = tract_onnx::onnx().proto_model_for_read(&mut &data[..]) else { return Outcome::NotOnnx };
        import::import_proto(&proto, &[])
    };
    let Ok(graph) = imported else { return Outcome::Refused };
    let Ok(program) = pipeline::compile_graph(graph, &Default::default()) else { return Outcome::Refused };
    let (problem, plan) = (&program.live.problem, &program.plan);
    if let Err(v) = verify::verify(problem, &plan.offsets, plan.arena_bytes, &[]) {
        panic!("an accepted plan fails verification: {}", v.describe(problem));
    }
    assert!(!codegen::emit(&program, &CodegenOptions::default()).is_empty());
    Outcome::Compiled
}
