//! Step probes (feature `probe`): code generated with it calls [`step_done`] after every step that
//! runs code, with the step's index in the compiled graph (the `#` column of `sramfit inspect`),
//! and [`step_done`] calls the hook the application set with [`set_hook`]: a per-step measurement
//! (an instruction counter read, a GPIO toggle) without changing the steps themselves.
//!
//! The hook is a plain function pointer in an atomic (loads and stores only: also on cores
//! without compare-and-swap); the default hook does nothing.

use core::sync::atomic::{AtomicPtr, Ordering};

/// What the probe calls: the index of the step that just finished.
pub type Hook = fn(usize);

fn nothing(_: usize) {}

static HOOK: AtomicPtr<()> = AtomicPtr::new(nothing as Hook as *mut ());

/// Makes every following [`step_done`] call `hook`.
pub fn set_hook(hook: Hook) {
    HOOK.store(hook as *mut (), Ordering::Release);
}

/// Called by generated code after step `step`: runs the hook.
#[inline(always)]
pub fn step_done(step: usize) {
    let hook = HOOK.load(Ordering::Acquire);
    // SAFETY: HOOK only ever holds a `Hook` cast to a pointer (its initial value and `set_hook`'s
    // stores), so casting it back gives that function pointer.
    let hook = unsafe { core::mem::transmute::<*mut (), Hook>(hook) };
    hook(step)
}
