//! The DSP-extension instructions the kernels use, as plain functions on `u32` words of two 16-bit
//! lanes (low lane: bits 0-15). On a DSP target each is one instruction (`asm!`); elsewhere (the
//! host's unit tests) the same arithmetic in Rust, so the kernels' blocking, packing and tails are
//! tested against the portable kernels on any machine.

use crate::quant::QuantElem;

/// `SXTB16`: bytes 0 and 2 of `x`, sign-extended into the low and high lanes.
#[inline(always)]
pub(super) fn sxtb16(x: u32) -> u32 {
    #[cfg(arm_dsp)]
    {
        let r: u32;
        // SAFETY: SXTB16 reads one register and writes another: no memory, no stack, no flags.
        unsafe {
            core::arch::asm!("sxtb16 {r}, {x}", r = lateout(reg) r, x = in(reg) x, options(pure, nomem, nostack, preserves_flags));
        }
        r
    }
    #[cfg(not(arm_dsp))]
    {
        pack(x as u8 as i8 as i32, (x >> 16) as u8 as i8 as i32)
    }
}

/// `SXTB16 ..., ROR #8`: bytes 1 and 3 of `x`, sign-extended into the low and high lanes.
#[inline(always)]
pub(super) fn sxtb16_ror8(x: u32) -> u32 {
    #[cfg(arm_dsp)]
    {
        let r: u32;
        // SAFETY: as `sxtb16`: register to register, no memory, no stack, no flags.
        unsafe {
            core::arch::asm!("sxtb16 {r}, {x}, ror #8", r = lateout(reg) r, x = in(reg) x, options(pure, nomem, nostack, preserves_flags));
        }
        r
    }
    #[cfg(not(arm_dsp))]
    {
        sxtb16(x >> 8)
    }
}

/// `UXTB16`: bytes 0 and 2 of `x`, zero-extended into the low and high lanes.
#[inline(always)]
pub(super) fn uxtb16(x: u32) -> u32 {
    #[cfg(arm_dsp)]
    {
        let r: u32;
        // SAFETY: as `sxtb16`: register to register, no memory, no stack, no flags.
        unsafe {
            core::arch::asm!("uxtb16 {r}, {x}", r = lateout(reg) r, x = in(reg) x, options(pure, nomem, nostack, preserves_flags));
        }
        r
    }
    #[cfg(not(arm_dsp))]
    {
        x & 0x00FF_00FF
    }
}

/// `UXTB16 ..., ROR #8`: bytes 1 and 3 of `x`, zero-extended into the low and high lanes.
#[inline(always)]
pub(super) fn uxtb16_ror8(x: u32) -> u32 {
    #[cfg(arm_dsp)]
    {
        let r: u32;
        // SAFETY: as `sxtb16`: register to register, no memory, no stack, no flags.
        unsafe {
            core::arch::asm!("uxtb16 {r}, {x}, ror #8", r = lateout(reg) r, x = in(reg) x, options(pure, nomem, nostack, preserves_flags));
        }
        r
    }
    #[cfg(not(arm_dsp))]
    {
        (x >> 8) & 0x00FF_00FF
    }
}

/// `SMLAD`: `acc + a.low * b.low + a.high * b.high` (signed 16-bit lanes), wrapping like an `i32`
/// accumulator (the instruction's result is the low 32 bits; it only sets the sticky Q flag on
/// overflow, which nothing reads).
#[inline(always)]
pub(super) fn smlad(a: u32, b: u32, acc: i32) -> i32 {
    #[cfg(arm_dsp)]
    {
        let r: i32;
        // SAFETY: SMLAD reads three registers and writes one; no memory, no stack. It may set
        // APSR.Q (so `preserves_flags` is not claimed); no code here reads Q.
        unsafe {
            core::arch::asm!("smlad {r}, {a}, {b}, {acc}", r = lateout(reg) r, a = in(reg) a, b = in(reg) b, acc = in(reg) acc, options(pure, nomem, nostack));
        }
        r
    }
    #[cfg(not(arm_dsp))]
    {
        let lane = |v: u32, shift: u32| (v >> shift) as u16 as i16 as i32;
        acc.wrapping_add(lane(a, 0) * lane(b, 0)).wrapping_add(lane(a, 16) * lane(b, 16))
    }
}

/// Two 16-bit values as the lanes of one word (`PKHBT`, which the compiler emits for this).
#[inline(always)]
pub(super) fn pack(low: i32, high: i32) -> u32 {
    (low as u32 & 0xFFFF) | ((high as u32) << 16)
}

/// Four consecutive weights as one word (byte `j` = `w[j]`; an unaligned `LDR`).
#[inline(always)]
pub(super) fn word(w: &[i8; 4]) -> u32 {
    // SAFETY: `w` is 4 readable bytes, and `read_unaligned` needs no alignment (the compiler
    // otherwise assembles the word from four byte loads in some loops).
    u32::from_le(unsafe { core::ptr::read_unaligned(w.as_ptr().cast::<u32>()) })
}

/// Four consecutive activations `x0..x3` as the lane pairs `(x0, x2)`, `(x1, x3)`: one `LDR`
/// and two `SXTB16` (int8) or `UXTB16` (uint8).
#[inline(always)]
pub(super) fn pairs<T: QuantElem>(x: &[T; 4]) -> [u32; 2] {
    let v = u32::from_le_bytes(x.map(T::byte));
    if T::MIN < 0 {
        [sxtb16(v), sxtb16_ror8(v)]
    } else {
        [uxtb16(v), uxtb16_ror8(v)]
    }
}
