//! Per-step instruction counts of sramfit's generated code (cargo feature `probe`, which turns on
//! `sramfit/probe`: the generated code calls a hook after every step). [`profile`] runs the model
//! once with a hook that prints `LAYER engine=sramfit index=STEP instructions=N` after each step,
//! the printing itself not counted. The counts include the probe call (a load and an indirect
//! call, a few instructions per step); the totals of a probe build are not the ones reported.

use core::sync::atomic::{AtomicU32, Ordering};

use crate::console::Console;
use crate::{RunTyped, Sample, systick};
use sramfit::TensorMut;

/// The counter's value when the previous step ended (after its line was printed).
static LAST: AtomicU32 = AtomicU32::new(0);
/// Instructions per tick (exact on mps2-an386, the board the probes run on: 40).
static PER_TICK: AtomicU32 = AtomicU32::new(0);

fn step_done(step: usize) {
    let ticks = systick::ticks_between(LAST.load(Ordering::Relaxed), systick::now());
    let instructions = u64::from(ticks) * u64::from(PER_TICK.load(Ordering::Relaxed));
    Console::open().line(format_args!("LAYER engine=sramfit index={step} instructions={instructions}"));
    LAST.store(systick::now(), Ordering::Relaxed);
}

/// Runs `run` once on `sample`'s inputs, printing each step's instruction count.
pub fn profile(sample: &Sample, run: impl RunTyped, outputs: &mut [TensorMut<'_>]) {
    let clock = systick::Clock::start();
    PER_TICK.store(clock.per_tick(), Ordering::Relaxed);
    sramfit::probe::set_hook(step_done);
    LAST.store(systick::now(), Ordering::Relaxed);
    let _ = run(sample.inputs, outputs);
    sramfit::probe::set_hook(|_| {});
}
