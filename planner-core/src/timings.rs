//! Time and peak memory of each phase of a compilation (load, declutter, fold, lower, rewrites,
//! liveness, plan, verify, codegen), for `sramfit inspect --timings`.
//!
//! The driver wraps each phase in [`phase`]; outside [`record`] that costs nothing but the call.
//! Inside it, each phase's wall time is added up by name (a bounded dimension compiles the model
//! at every length, so its phases run many times), and, when the caller gives a [`MemoryProbe`]
//! (the CLI counts its heap allocations), the peak heap bytes reached during any run of the phase.
//! Phases do not nest.

use std::cell::RefCell;
use std::time::Instant;

/// The heap of the process, as the program that links planner-core measures it.
pub trait MemoryProbe: Sync {
    /// Starts a new measurement: the peak becomes what is allocated now.
    fn reset_peak(&self);
    /// Peak bytes allocated since the last [`MemoryProbe::reset_peak`].
    fn peak(&self) -> u64;
}

/// One phase's totals.
#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    /// Its name (`load`, `declutter`, ...).
    pub name: &'static str,
    /// Wall-clock seconds, over all its runs.
    pub seconds: f64,
    /// How many times it ran.
    pub runs: usize,
    /// Peak heap bytes during any of its runs (with a [`MemoryProbe`]).
    pub peak_bytes: Option<u64>,
}

/// The phases of one compilation, in the order they first ran.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timings {
    /// Each phase once.
    pub phases: Vec<Phase>,
}

struct Recorder {
    timings: Timings,
    probe: Option<&'static dyn MemoryProbe>,
}

thread_local! {
    static RECORDER: RefCell<Option<Recorder>> = const { RefCell::new(None) };
}

/// Runs `f`, recording every [`phase`] it runs on this thread.
pub fn record<T>(probe: Option<&'static dyn MemoryProbe>, f: impl FnOnce() -> T) -> (T, Timings) {
    let outer = RECORDER.with(|r| r.borrow_mut().replace(Recorder { timings: Timings::default(), probe }));
    let out = f();
    let recorder = RECORDER.with(|r| std::mem::replace(&mut *r.borrow_mut(), outer));
    (out, recorder.map(|r| r.timings).unwrap_or_default())
}

/// Runs phase `name` of the compilation.
pub fn phase<T>(name: &'static str, f: impl FnOnce() -> T) -> T {
    let probe = RECORDER.with(|r| r.borrow().as_ref().map(|r| r.probe));
    let Some(probe) = probe else { return f() };
    if let Some(p) = probe {
        p.reset_peak();
    }
    let start = Instant::now();
    let out = f();
    let seconds = start.elapsed().as_secs_f64();
    let peak = probe.map(|p| p.peak());
    RECORDER.with(|r| {
        if let Some(r) = r.borrow_mut().as_mut() {
            match r.timings.phases.iter_mut().find(|p| p.name == name) {
                Some(p) => {
                    p.seconds += seconds;
                    p.runs += 1;
                    p.peak_bytes = p.peak_bytes.max(peak);
                }
                None => r.timings.phases.push(Phase { name, seconds, runs: 1, peak_bytes: peak }),
            }
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A probe whose peak the test sets.
    struct Fake(AtomicU64);

    impl MemoryProbe for Fake {
        fn reset_peak(&self) {
            self.0.store(0, Ordering::SeqCst);
        }
        fn peak(&self) -> u64 {
            self.0.load(Ordering::SeqCst)
        }
    }

    static PROBE: Fake = Fake(AtomicU64::new(0));

    #[test]
    fn phases_add_up_by_name_in_first_run_order() {
        let ((), t) = record(Some(&PROBE), || {
            phase("load", || PROBE.0.store(100, Ordering::SeqCst));
            phase("plan", || PROBE.0.store(10, Ordering::SeqCst));
            phase("load", || PROBE.0.store(300, Ordering::SeqCst));
        });
        let names: Vec<(&str, usize, Option<u64>)> = t.phases.iter().map(|p| (p.name, p.runs, p.peak_bytes)).collect();
        assert_eq!(names, [("load", 2, Some(300)), ("plan", 1, Some(10))]);
    }

    #[test]
    fn nothing_is_recorded_outside_record() {
        assert_eq!(phase("load", || 7), 7);
        let (v, t) = record(None, || phase("lower", || 8));
        assert_eq!((v, t.phases.len(), t.phases[0].peak_bytes), (8, 1, None));
    }
}
