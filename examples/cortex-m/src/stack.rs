//! Stack high-water mark: paint the free stack with a pattern, scan for the deepest overwritten word.
//!
//! The stack grows down from the top of RAM towards the end of `.bss`/`.uninit` (`_stack_end` in
//! cortex-m-rt's `link.x`). [`paint`] fills that gap up to just below its own frame; [`high_water`]
//! finds the lowest word no longer holding the pattern and returns how far below the stack's top it is.

const PATTERN: u32 = 0xDEAD_BEEF;
/// Bytes left unpainted just below the painting function's stack pointer.
const MARGIN: usize = 64;

unsafe extern "C" {
    static mut _stack_end: u32;
    static mut _stack_start: u32;
}

/// What [`high_water`] found.
#[derive(Clone, Copy, Debug)]
pub enum HighWater {
    /// Deepest stack use since [`paint`], in bytes below the initial stack pointer.
    Bytes(usize),
    /// Even the lowest painted word was overwritten: the stack may have run into `.bss`.
    Overflowed,
}

fn bounds() -> (*mut u32, usize) {
    // Only the addresses of the symbols (defined by cortex-m-rt's link.x) are taken.
    (&raw mut _stack_end, (&raw mut _stack_start) as usize)
}

/// Fills the free stack below the caller's frame with the pattern. Call it first thing in `main`.
#[inline(never)]
pub fn paint() {
    let (bottom, _) = bounds();
    let sp = cortex_m::register::msp::read() as usize - MARGIN;
    let mut p = bottom;
    while (p as usize) < sp {
        // SAFETY: between the end of the statics and below the live stack: memory nothing uses.
        unsafe {
            p.write_volatile(PATTERN);
            p = p.add(1);
        }
    }
}

/// The deepest stack use since [`paint`].
#[inline(never)]
pub fn high_water() -> HighWater {
    let (bottom, top) = bounds();
    let mut p = bottom;
    // SAFETY: reads of RAM between the end of the statics and the top of the stack.
    while (p as usize) < top && unsafe { p.read_volatile() } == PATTERN {
        p = unsafe { p.add(1) };
    }
    if p == bottom { HighWater::Overflowed } else { HighWater::Bytes(top - p as usize) }
}
