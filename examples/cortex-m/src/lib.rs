//! The harness shared by this crate's firmware binaries: each binary compiles one model with
//! `sramfit::model!` (as an application would) and calls [`firmware!`] (or, for the same network
//! through CMSIS-NN, [`cmsis_firmware!`]), which runs it on each input of the fixture and reports
//! over semihosting:
//!
//! - every output value next to the expected one (`f32` as exact bit patterns, integers as numbers);
//! - the stack high-water mark (the stack is painted before the runs and scanned after);
//! - the instructions executed by the first inference (SysTick under `qemu -icount shift=0`) and
//!   the model's multiply-accumulates;
//!
//! and exits with success only if every output matches ([`Comparison`]): an f32 model's within
//! [`RELATIVE_TOLERANCE`] of onnxruntime's, an int8 model's bit for bit TFLM's.
//! Nothing here lives in `.bss` or `.data` (except the CMSIS-NN driver's arena), so those sections
//! hold only what the model needs.
#![no_std]

#[cfg(feature = "cmsis-nn")]
pub mod cmsis;
pub mod console;
#[cfg(feature = "probe")]
pub mod probe;
pub mod stack;
pub mod systick;

use console::Console;
use sramfit::{TensorMut, TensorRef};

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

/// A model's `run_typed` (or the CMSIS-NN driver's): taken as a type parameter, not a function
/// pointer, so that each firmware's measured call is a direct one, inlined as an application's
/// would be.
pub trait RunTyped: Fn(&[TensorRef<'_>], &mut [TensorMut<'_>]) -> Result<(), sramfit::Error> {}

impl<F: Fn(&[TensorRef<'_>], &mut [TensorMut<'_>]) -> Result<(), sramfit::Error>> RunTyped for F {}

/// One input of the fixture and the outputs expected for it.
pub struct Sample {
    /// The inputs, in graph order.
    pub inputs: &'static [TensorRef<'static>],
    /// The expected outputs, in graph order.
    pub expected: &'static [TensorRef<'static>],
}

/// What one measured inference produced.
pub struct Measured {
    /// The model's result.
    pub result: Result<(), sramfit::Error>,
    /// Instructions the inference executed.
    pub instructions: systick::Count,
}

/// Runs `run` once on `inputs` into `outputs`, counting the instructions it executes.
#[inline(never)]
pub fn measure(run: &impl RunTyped, inputs: &[TensorRef<'_>], outputs: &mut [TensorMut<'_>]) -> Measured {
    let clock = systick::Clock::start();
    let result = run(inputs, outputs);
    Measured { result, instructions: clock.stop() }
}

/// What a firmware binary reports on: the model's constants and its fixture.
pub struct Check<'a> {
    /// The fixture's name (build.rs's table).
    pub model: &'a str,
    /// What ran the model: `"sramfit"`, or `"cmsis-nn"` for the CMSIS-NN driver.
    pub engine: &'a str,
    /// The model's `ARENA_BYTES`.
    pub arena_bytes: usize,
    /// The model's `WEIGHT_BYTES`.
    pub weight_bytes: usize,
    /// The inputs and their expected outputs; the first one's run is the one counted.
    pub samples: &'a [Sample],
    /// How outputs are compared with them.
    pub comparison: Comparison,
    /// `"f32"` or `"int8"`.
    pub precision: &'a str,
    /// Multiply-accumulates of one inference.
    pub macs: u64,
}

/// One element of a tensor, as [`compare`] prints and compares it.
#[derive(Clone, Copy)]
enum Value {
    /// An `f32`.
    Float(f32),
    /// An integer element.
    Int(i32),
}

/// Element `i` of `t`, or `None` past its end (or for a type the fixtures never hold).
fn element(t: &TensorRef<'_>, i: usize) -> Option<Value> {
    match t {
        TensorRef::F32(s) => s.get(i).map(|&x| Value::Float(x)),
        TensorRef::I8(s) => s.get(i).map(|&x| Value::Int(x.into())),
        TensorRef::U8(s) => s.get(i).map(|&x| Value::Int(x.into())),
        TensorRef::I16(s) => s.get(i).map(|&x| Value::Int(x.into())),
        TensorRef::I32(s) => s.get(i).map(|&x| Value::Int(x)),
    }
}

/// `t` read-only.
fn view<'a>(t: &'a TensorMut<'_>) -> TensorRef<'a> {
    match t {
        TensorMut::F32(s) => TensorRef::F32(s),
        TensorMut::I8(s) => TensorRef::I8(s),
        TensorMut::U8(s) => TensorRef::U8(s),
        TensorMut::I16(s) => TensorRef::I16(s),
        TensorMut::I32(s) => TensorRef::I32(s),
    }
}

/// The largest magnitude of a float tensor (0 for an integer one).
fn magnitude(t: &TensorRef<'_>) -> f32 {
    match t {
        TensorRef::F32(s) => s.iter().fold(0.0f32, |m, w| m.max(w.abs())),
        _ => 0.0,
    }
}

/// Prints every output next to the expected one (`f32` as bit patterns, integers as numbers);
/// returns whether all match (`comparison`; integers always bit for bit) and the largest error
/// relative to the allowed one, in parts per thousand (0 when bit-exact outputs match).
fn compare(
    out: &mut Console,
    sample: usize,
    outputs: &[TensorMut<'_>],
    expected: &[TensorRef<'_>],
    comparison: Comparison,
) -> (bool, u64) {
    let (mut ok, mut worst) = (outputs.len() == expected.len(), 0.0f32);
    for (k, (got, want)) in outputs.iter().zip(expected).enumerate() {
        let got = view(got);
        ok &= got.dtype() == want.dtype() && got.len() == want.len();
        let scale = magnitude(want);
        for i in 0..want.len() {
            let (Some(g), Some(w)) = (element(&got, i), element(want, i)) else { break };
            let close = match (g, w) {
                (Value::Float(g), Value::Float(w)) if comparison == Comparison::Tolerance => {
                    let allowed = RELATIVE_TOLERANCE * w.abs() + FLOOR * scale;
                    worst = worst.max((g - w).abs() / allowed);
                    (g - w).abs() <= allowed
                }
                (Value::Float(g), Value::Float(w)) => g.to_bits() == w.to_bits(),
                (Value::Int(g), Value::Int(w)) => g == w,
                _ => false,
            };
            ok &= close;
            let mark = if close { "" } else { "  MISMATCH" };
            match (g, w) {
                (Value::Float(g), Value::Float(w)) => out.line(format_args!(
                    "out{sample}.{k}[{i}] = {:#010x} expected {:#010x}{mark}",
                    g.to_bits(),
                    w.to_bits()
                )),
                (Value::Int(g), Value::Int(w)) => {
                    out.line(format_args!("out{sample}.{k}[{i}] = {g} expected {w}{mark}"))
                }
                _ => out.line(format_args!("out{sample}.{k}[{i}]: element types differ  MISMATCH")),
            }
        }
    }
    (ok, (worst * 1000.0) as u64)
}

/// What the runs of one model's samples gave ([`run_samples`]).
pub struct Outcome {
    /// Every run succeeded and every output matched.
    pub ok: bool,
    /// Instructions of the first sample's run.
    pub instructions: u64,
    /// Instructions per SysTick tick of that count.
    pub per_tick: u32,
    /// The largest error relative to the allowed one, in parts per thousand.
    pub worst_permille: u64,
    /// How many samples ran.
    pub samples: usize,
}

/// Runs `run` on every sample of `check` into `outputs`, printing the outputs and every failure;
/// the first sample's run is the one counted.
pub fn run_samples(out: &mut Console, check: &Check, run: impl RunTyped, outputs: &mut [TensorMut<'_>]) -> Outcome {
    out.line(format_args!("model {} ({}) on {}", check.model, check.engine, board::NAME));
    let (mut ok, mut worst_permille, mut first) = (!check.samples.is_empty(), 0, None);
    for (s, sample) in check.samples.iter().enumerate() {
        let m = measure(&run, sample.inputs, outputs);
        if let Err(e) = &m.result {
            out.line(format_args!("FAIL: sample {s}: run_typed returned {e:?}"));
            ok = false;
        }
        let (same, worst) = compare(out, s, outputs, sample.expected, check.comparison);
        ok &= same;
        worst_permille = worst_permille.max(worst);
        first.get_or_insert(m.instructions);
    }
    let (instructions, per_tick) = match first {
        Some(systick::Count::Instructions { count, per_tick }) => (count, per_tick),
        other => {
            out.line(format_args!("FAIL: no instruction count: {other:?}"));
            ok = false;
            (0, 0)
        }
    };
    Outcome { ok, instructions, per_tick, worst_permille, samples: check.samples.len() }
}

/// Prints the footprint line of `check` (`outcome`'s counts, the stack's high-water mark) and the
/// verdict, and exits QEMU: success only if `outcome` is and the stack stayed inside its painted
/// region.
pub fn finish(out: &mut Console, check: &Check, outcome: Outcome) -> ! {
    let Outcome { mut ok, instructions, per_tick, worst_permille, samples } = outcome;
    let stack_bytes = match stack::high_water() {
        stack::HighWater::Bytes(n) => n,
        stack::HighWater::Overflowed => {
            out.line(format_args!("FAIL: the stack grew past its painted region (into .bss)"));
            ok = false;
            0
        }
    };
    out.line(format_args!(
        "FOOTPRINT model={} engine={} board={} precision={} arena={} weights={} stack={stack_bytes} instructions={instructions} per_tick={per_tick} macs={} samples={} error_vs_tolerance_permille={worst_permille}",
        check.model,
        check.engine,
        board::NAME,
        check.precision,
        check.arena_bytes,
        check.weight_bytes,
        check.macs,
        samples
    ));
    out.line(format_args!("{}", if ok { "PASS" } else { "FAIL" }));
    use cortex_m_semihosting::debug;
    debug::exit(if ok { debug::EXIT_SUCCESS } else { debug::EXIT_FAILURE });
    #[allow(clippy::empty_loop)]
    loop {}
}

/// Runs `run` on every sample of `check` into `outputs`, prints the report (outputs, footprint line
/// with the first sample's instruction count, verdict) and exits QEMU: success only if every run
/// succeeded, every output matches, and the stack stayed inside its painted region.
pub fn run_and_finish(check: &Check, run: impl RunTyped, outputs: &mut [TensorMut<'_>]) -> ! {
    let mut out = Console::open();
    let outcome = run_samples(&mut out, check, run, outputs);
    finish(&mut out, check, outcome)
}

/// The firmware for the members of one `sramfit::models!` group, run one after the other in the
/// group's one arena: `group_firmware!(group, "name", (member, "fixture"), ..)` after the group.
/// Each member's samples are run and checked like [`firmware!`]'s; one footprint line, named
/// `name`, gives the group's `ARENA_BYTES` (the largest member's), the weights, instructions
/// (each member's first sample), MACs and samples of all members summed, and the stack's
/// high-water mark over all runs.
#[macro_export]
macro_rules! group_firmware {
    ($group:ident, $name:literal, $(($model:ident, $fixture:literal)),+ $(,)?) => {
        /// The members' fixtures.
        mod reference {
            $(
                pub mod $model {
                    include!(concat!(env!("OUT_DIR"), "/", $fixture, ".ref.rs"));
                }
            )+
        }

        $crate::__firmware_entry!();

        #[inline(never)]
        fn run_once() -> ! {
            let mut out = $crate::console::Console::open();
            let mut all = $crate::Outcome { ok: true, instructions: 0, per_tick: 0, worst_permille: 0, samples: 0 };
            let (mut weights, mut macs) = (0, 0);
            $(
                let mut outputs = reference::$model::Outputs::new();
                let check = $crate::Check {
                    model: $fixture,
                    engine: "sramfit",
                    arena_bytes: $group::$model::ARENA_BYTES,
                    weight_bytes: $group::$model::WEIGHT_BYTES,
                    samples: &reference::$model::SAMPLES,
                    comparison: reference::$model::COMPARISON,
                    precision: reference::$model::PRECISION,
                    macs: reference::$model::MACS,
                };
                let o = $crate::run_samples(&mut out, &check, $group::$model::run_typed, &mut outputs.slices());
                all.ok &= o.ok;
                all.instructions += o.instructions;
                all.per_tick = o.per_tick;
                all.worst_permille = all.worst_permille.max(o.worst_permille);
                all.samples += o.samples;
                (weights, macs) = (weights + check.weight_bytes, macs + check.macs);
            )+
            let precision = [$(reference::$model::PRECISION),+][0];
            let check = $crate::Check {
                model: $name,
                engine: "sramfit",
                arena_bytes: $group::ARENA_BYTES,
                weight_bytes: weights,
                samples: &[],
                comparison: $crate::Comparison::BitExact,
                precision,
                macs,
            };
            $crate::finish(&mut out, &check, all)
        }

    };
}

/// The whole firmware for one model: `firmware!(module, "fixture")` after the module's
/// `sramfit::model!`, with `fixture` the model's name in build.rs's table.
///
/// `main` paints the stack first, then calls a separate function that owns the output buffers, so
/// that everything the inference puts on the stack is below the paint line and counted. With the
/// crate's feature `probe`, a first run prints each step's instruction count ([`probe::profile`]).
#[macro_export]
macro_rules! firmware {
    ($model:ident, $fixture:literal) => {
        $crate::__firmware_main!(
            $fixture,
            "sramfit",
            ($model::ARENA_BYTES, $model::WEIGHT_BYTES),
            $model::run_typed,
            |_outputs: &mut [sramfit::TensorMut<'_>]| {
                #[cfg(feature = "probe")]
                $crate::probe::profile(&reference::SAMPLES[0], $model::run_typed, _outputs);
            }
        );
    };
}

/// The firmware that runs one `.tflite` model through CMSIS-NN: `cmsis_firmware!(layers,
/// "fixture")` after a module `layers` that includes build.rs's `FIXTURE.cmsis.rs`. `main` prints
/// each layer's instruction count from a first run ([`cmsis::profile`]), then runs and checks
/// every sample of the fixture like [`firmware!`] (engine `cmsis-nn`; `arena` is the driver's
/// activation arena, one region per tensor, not a planned one).
#[macro_export]
macro_rules! cmsis_firmware {
    ($layers:ident, $fixture:literal) => {
        /// The activations and scratch of the CMSIS-NN run.
        static MEMORY: $crate::cmsis::Memory<{ $layers::ARENA_BYTES }, { $layers::SCRATCH_BYTES / 4 }> =
            $crate::cmsis::Memory::new();

        /// The network through CMSIS-NN, as a `run_typed`.
        fn run(
            inputs: &[sramfit::TensorRef<'_>],
            outputs: &mut [sramfit::TensorMut<'_>],
        ) -> Result<(), sramfit::Error> {
            $crate::cmsis::run_typed(&$layers::LAYERS, &MEMORY, inputs, outputs, |_| {})
        }

        $crate::__firmware_main!(
            $fixture,
            "cmsis-nn",
            ($layers::ARENA_BYTES, 0),
            run,
            |outputs: &mut [sramfit::TensorMut<'_>]| {
                $crate::cmsis::profile(&$layers::LAYERS, &MEMORY, &reference::SAMPLES[0], outputs)
            }
        );
    };
}

/// What [`firmware!`] and [`cmsis_firmware!`] share: the fixture module `reference`, `main`, the
/// measured runs of `run` (after `profile` on the output buffers) and the panic handler.
#[doc(hidden)]
#[macro_export]
macro_rules! __firmware_main {
    ($fixture:literal, $engine:literal, ($arena:expr, $weights:expr), $run:expr, $profile:expr) => {
        /// The fixture: inputs, expected outputs, how to compare them, the model's MACs.
        mod reference {
            include!(concat!(env!("OUT_DIR"), "/", $fixture, ".ref.rs"));
        }

        $crate::__firmware_entry!();

        #[inline(never)]
        fn run_once() -> ! {
            let mut outputs = reference::Outputs::new();
            ($profile)(&mut outputs.slices());
            let check = $crate::Check {
                model: $fixture,
                engine: $engine,
                arena_bytes: $arena,
                weight_bytes: $weights,
                samples: &reference::SAMPLES,
                comparison: reference::COMPARISON,
                precision: reference::PRECISION,
                macs: reference::MACS,
            };
            $crate::run_and_finish(&check, $run, &mut outputs.slices())
        }
    };
}

/// `main` (paints the stack, then calls the firmware's `run_once`, so that everything the
/// inference puts on the stack is below the paint line) and the panic handler, for
/// [`group_firmware!`] and `__firmware_main!`.
#[doc(hidden)]
#[macro_export]
macro_rules! __firmware_entry {
    () => {
        #[cortex_m_rt::entry]
        fn main() -> ! {
            $crate::stack::paint();
            run_once()
        }

        #[panic_handler]
        fn panic(info: &core::panic::PanicInfo) -> ! {
            $crate::console::panicked(info)
        }
    };
}
