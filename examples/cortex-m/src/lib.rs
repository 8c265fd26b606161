//! The harness shared by this crate's firmware binaries: each binary compiles one bundled model with
//! `sramfit::model!` (as an application would) and calls [`firmware!`], which runs the model once on
//! the fixture's input and reports over semihosting:
//!
//! - every output value as its exact `f32` bit pattern, next to the expected one;
//! - the stack high-water mark (the stack is painted before the run and scanned after);
//! - the instructions executed by the inference (SysTick under `qemu -icount shift=0`) and the
//!   model's multiply-accumulates;
//!
//! and exits with success only if every output matches ([`Comparison`]): an f32 model's within
//! [`RELATIVE_TOLERANCE`] of onnxruntime's, an int8 model's bit for bit the host build's.
//! Nothing here lives in `.bss` or `.data`, so those sections hold only what the model needs.
#![no_std]

pub mod console;
pub mod stack;
pub mod systick;

use console::Console;

/// The board this build is for (sizes written by build.rs from the same table as `memory.x`).
pub mod board {
    include!(concat!(env!("OUT_DIR"), "/board.rs"));
}

/// Relative tolerance: every output value must satisfy
/// `|got - expected| <= RELATIVE_TOLERANCE * |expected| + FLOOR * max |expected|` (max over its tensor).
pub const RELATIVE_TOLERANCE: f32 = 1e-5;
/// The tolerance's floor, relative to the tensor's largest magnitude, for values near zero (where the
/// rounding of sums that cancel dominates any relative measure).
pub const FLOOR: f32 = 1e-6;

/// How the outputs are checked against the expected ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// Within [`RELATIVE_TOLERANCE`] and [`FLOOR`] (f32 models, against onnxruntime).
    Tolerance,
    /// The same bit patterns (int8 models, against the host build of the same generated code).
    BitExact,
}

/// Signature of a model's `run_dyn`.
pub type RunDyn = fn(&[&[f32]], &mut [&mut [f32]]) -> Result<(), sramfit::Error>;

/// What one measured inference produced.
pub struct Measured {
    /// The model's result.
    pub result: Result<(), sramfit::Error>,
    /// Instructions the inference executed.
    pub instructions: systick::Count,
}

/// Runs `run` once on `inputs` into `outputs`, counting the instructions it executes.
#[inline(never)]
pub fn measure(run: RunDyn, inputs: &[&[f32]], outputs: &mut [&mut [f32]]) -> Measured {
    let clock = systick::Clock::start();
    let result = run(inputs, outputs);
    Measured { result, instructions: clock.stop() }
}

/// What a firmware binary reports on: the model's constants and its expected outputs.
pub struct Check<'a> {
    /// The fixture's name (`tests/models/NAME.onnx`).
    pub model: &'a str,
    /// The model's `ARENA_BYTES`.
    pub arena_bytes: usize,
    /// The model's `WEIGHT_BYTES`.
    pub weight_bytes: usize,
    /// The expected outputs for the fixture's input.
    pub expected: &'a [&'a [f32]],
    /// How outputs are compared with them.
    pub comparison: Comparison,
    /// `"f32"` or `"int8"`.
    pub precision: &'a str,
    /// Multiply-accumulates of one inference.
    pub macs: u64,
}

/// Whether each output buffer has its expected length.
fn got_lengths_match(outputs: &[&mut [f32]], expected: &[&[f32]]) -> bool {
    outputs.iter().zip(expected).all(|(g, w)| g.len() == w.len())
}

/// Prints every output's bit pattern next to the expected one; returns whether all match
/// (`comparison`) and the largest error relative to the allowed one, in parts per thousand (0 when
/// bit-exact outputs match).
fn compare(out: &mut Console, outputs: &[&mut [f32]], expected: &[&[f32]], comparison: Comparison) -> (bool, u64) {
    let (mut ok, mut worst) = (outputs.len() == expected.len(), 0.0f32);
    for (k, (got, want)) in outputs.iter().zip(expected).enumerate() {
        let scale = want.iter().fold(0.0f32, |m, w| m.max(w.abs()));
        for (i, (&g, &w)) in got.iter().zip(want.iter()).enumerate() {
            let close = match comparison {
                Comparison::Tolerance => {
                    let allowed = RELATIVE_TOLERANCE * w.abs() + FLOOR * scale;
                    worst = worst.max((g - w).abs() / allowed);
                    (g - w).abs() <= allowed
                }
                Comparison::BitExact => g.to_bits() == w.to_bits(),
            };
            ok &= close;
            let mark = if close { "" } else { "  MISMATCH" };
            out.line(format_args!("out{k}[{i}] = {:#010x} expected {:#010x}{mark}", g.to_bits(), w.to_bits()));
        }
    }
    (ok && got_lengths_match(outputs, expected), (worst * 1000.0) as u64)
}

/// Prints the report (outputs, footprint line, verdict) and exits QEMU: success only if the model
/// ran, every output is within tolerance, and the stack stayed inside its painted region.
pub fn finish(check: &Check, m: &Measured, outputs: &[&mut [f32]]) -> ! {
    let mut out = Console::open();
    let stack = stack::high_water();
    out.line(format_args!("model {} on {}", check.model, board::NAME));
    let (mut ok, worst_permille) = compare(&mut out, outputs, check.expected, check.comparison);
    if let Err(e) = &m.result {
        out.line(format_args!("FAIL: run_dyn returned {e:?}"));
        ok = false;
    }
    let (instructions, per_tick) = match m.instructions {
        systick::Count::Instructions { count, per_tick } => (count, per_tick),
        other => {
            out.line(format_args!("FAIL: no instruction count: {other:?}"));
            ok = false;
            (0, 0)
        }
    };
    let stack_bytes = match stack {
        stack::HighWater::Bytes(n) => n,
        stack::HighWater::Overflowed => {
            out.line(format_args!("FAIL: the stack grew past its painted region (into .bss)"));
            ok = false;
            0
        }
    };
    out.line(format_args!(
        "FOOTPRINT model={} board={} precision={} arena={} weights={} stack={stack_bytes} instructions={instructions} per_tick={per_tick} macs={} error_vs_tolerance_permille={worst_permille}",
        check.model,
        board::NAME,
        check.precision,
        check.arena_bytes,
        check.weight_bytes,
        check.macs
    ));
    out.line(format_args!("{}", if ok { "PASS" } else { "FAIL" }));
    use cortex_m_semihosting::debug;
    debug::exit(if ok { debug::EXIT_SUCCESS } else { debug::EXIT_FAILURE });
    #[allow(clippy::empty_loop)]
    loop {}
}

/// The whole firmware for one model: `firmware!(module, "fixture")` after the module's
/// `sramfit::model!`, with `fixture` the model's name in build.rs's table (`tests/models/FIXTURE.onnx`,
/// or `tests/models/quant/FIXTURE.onnx` for an int8 one).
///
/// `main` paints the stack first, then calls a separate function that owns the output buffers, so
/// that everything the inference puts on the stack is below the paint line and counted.
#[macro_export]
macro_rules! firmware {
    ($model:ident, $fixture:literal) => {
        /// The fixture: input, expected outputs, how to compare them, the model's MACs.
        mod reference {
            include!(concat!(env!("OUT_DIR"), "/", $fixture, ".ref.rs"));
        }

        #[cortex_m_rt::entry]
        fn main() -> ! {
            $crate::stack::paint();
            run_once()
        }

        #[inline(never)]
        fn run_once() -> ! {
            let mut outputs = reference::Outputs::new();
            let mut slices = outputs.slices();
            let measured = $crate::measure($model::run_dyn, &reference::INPUTS, &mut slices);
            let check = $crate::Check {
                model: $fixture,
                arena_bytes: $model::ARENA_BYTES,
                weight_bytes: $model::WEIGHT_BYTES,
                expected: &reference::EXPECTED,
                comparison: reference::COMPARISON,
                precision: reference::PRECISION,
                macs: reference::MACS,
            };
            $crate::finish(&check, &measured, &slices)
        }

        #[panic_handler]
        fn panic(info: &core::panic::PanicInfo) -> ! {
            $crate::console::panicked(info)
        }
    };
}
