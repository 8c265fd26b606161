//! Counting executed instructions with SysTick.
//!
//! Under `qemu-system-arm -icount shift=0` every instruction advances virtual time by exactly 1 ns,
//! and SysTick (core clock source) ticks once per core-clock period, so ticks are a deterministic
//! count of instructions. Instructions per tick (40 at the 25 MHz of mps2-an386) are measured, not
//! assumed: a loop of known instruction count is timed first. No interrupt is used (nothing is
//! pushed on the stack, nothing lives in `.bss`); a run longer than the 24-bit counter is reported.

use core::ptr::{read_volatile, write_volatile};

const SYST_CSR: *mut u32 = 0xE000_E010 as *mut u32;
const SYST_RVR: *mut u32 = 0xE000_E014 as *mut u32;
const SYST_CVR: *mut u32 = 0xE000_E018 as *mut u32;
const ENABLE_CORE_CLOCK: u32 = 0b101;
const COUNTFLAG: u32 = 1 << 16;
const RELOAD: u32 = 0x00FF_FFFF;
/// Iterations of the calibration loop (two instructions each).
const CALIBRATION_LOOPS: u32 = 100_000;

/// Instructions counted between [`Clock::start`] and [`Clock::stop`].
#[derive(Clone, Copy, Debug)]
pub enum Count {
    /// This many instructions (to within one tick's worth), measured at `per_tick` instructions per
    /// SysTick tick.
    Instructions { count: u64, per_tick: u32 },
    /// The counter wrapped: the run was longer than 2^24 ticks.
    Overflowed,
    /// SysTick does not advance on this machine.
    NoClock,
}

/// A running measurement.
pub struct Clock {
    start: u32,
    overhead: u32,
    per_tick: u32,
    /// Ticks the calibration loop took (its instructions: `2 * CALIBRATION_LOOPS`).
    loop_ticks: u32,
}

/// The counter's current value (it counts down; see [`ticks_between`]).
pub fn now() -> u32 {
    // SAFETY: SysTick's current-value register, always present on Armv7-M; reading has no effect.
    unsafe { read_volatile(SYST_CVR) }
}

fn wrapped() -> bool {
    // SAFETY: SysTick's control register; reading it only clears COUNTFLAG.
    unsafe { read_volatile(SYST_CSR) & COUNTFLAG != 0 }
}

/// Ticks the counter went down by between two readings of [`now`] (less than 2^24 apart).
pub fn ticks_between(from: u32, to: u32) -> u32 {
    elapsed(from, to)
}

/// Ticks the counter went down by between two readings (it counts down).
fn elapsed(from: u32, to: u32) -> u32 {
    from.wrapping_sub(to) & RELOAD
}

impl Clock {
    /// Starts SysTick from the core clock, measures instructions per tick and the cost of reading
    /// the counter, then starts counting.
    #[inline(never)]
    pub fn start() -> Clock {
        // SAFETY: SysTick registers; nothing else in this firmware uses SysTick.
        unsafe {
            write_volatile(SYST_CSR, 0);
            write_volatile(SYST_RVR, RELOAD);
            write_volatile(SYST_CVR, 0);
            write_volatile(SYST_CSR, ENABLE_CORE_CLOCK);
        }
        let (a, b) = (now(), now());
        let overhead = elapsed(a, b);
        let before = now();
        // SAFETY: a register-only countdown loop: `subs` and `bne`, 2 instructions per iteration.
        unsafe {
            core::arch::asm!("2:", "subs {n}, #1", "bne 2b", n = inout(reg) CALIBRATION_LOOPS => _, options(nomem, nostack));
        }
        let loop_ticks = elapsed(before, now()).saturating_sub(overhead);
        let per_tick = if loop_ticks == 0 { 0 } else { (2 * CALIBRATION_LOOPS + loop_ticks / 2) / loop_ticks };
        wrapped();
        Clock { start: now(), overhead, per_tick, loop_ticks }
    }

    /// Instructions since [`Clock::start`] (to within one tick's worth), without stopping: for
    /// the differences between consecutive laps (a run shorter than 2^24 ticks).
    pub fn lap(&self) -> u64 {
        self.instructions(elapsed(self.start, now()).saturating_sub(self.overhead))
    }

    /// `ticks` in instructions, at the calibration loop's exact rate (not the rounded
    /// [`Clock::per_tick`]: 62.5 on the micro:bit's 16 MHz).
    pub fn instructions(&self, ticks: u32) -> u64 {
        u64::from(ticks) * u64::from(2 * CALIBRATION_LOOPS) / u64::from(self.loop_ticks.max(1))
    }

    /// Instructions per tick, as calibrated by [`Clock::start`] (0: no clock).
    pub fn per_tick(&self) -> u32 {
        self.per_tick
    }

    /// Stops counting.
    #[inline(never)]
    pub fn stop(self) -> Count {
        let end = now();
        if self.per_tick == 0 {
            return Count::NoClock;
        }
        if wrapped() {
            return Count::Overflowed;
        }
        let ticks = elapsed(self.start, end).saturating_sub(self.overhead);
        Count::Instructions { count: self.instructions(ticks), per_tick: self.per_tick }
    }
}
