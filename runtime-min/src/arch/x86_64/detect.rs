//! Which kernel path this x86-64 CPU runs: CPUID for the instructions, XGETBV for whether the
//! operating system saves the registers they use, checked once and cached in an atomic; and the
//! path in force, which [`force`] may lower for tests.
//!
//! The checks follow what the Intel SDM (vol. 1, 14.3 and 15.2) asks before using AVX and
//! AVX-512, as std's `is_x86_feature_detected!` does (`std_detect`'s `os/x86.rs`): CPUID.1:ECX
//! has FMA (bit 12), OSXSAVE (27) and AVX (28); XCR0 has the XMM and YMM state (bits 1, 2);
//! CPUID.(7,0):EBX has AVX2 (bit 5) and, for AVX-512, AVX512F (16) with XCR0's opmask and ZMM
//! state (bits 5, 6, 7). `core::arch` has CPUID and XGETBV, so this works without `std`.

use core::arch::x86_64::{__cpuid, __cpuid_count, _xgetbv};
use core::sync::atomic::{AtomicU8, Ordering};

use crate::arch::path::KernelPath;

/// The detected path plus one; 0 until the first detection.
static DETECTED: AtomicU8 = AtomicU8::new(0);
/// The path [`force`] set plus one; 0 for none (the detected path is in force).
static FORCED: AtomicU8 = AtomicU8::new(0);
/// Whether the CPU has AVX-512 VNNI, BW and VL ([`int8_vnni`]): 0 until checked, 1 no, 2 yes.
static VNNI: AtomicU8 = AtomicU8::new(0);

/// `path` as stored in the atomics.
const fn code(path: KernelPath) -> u8 {
    path as u8 + 1
}

/// The path stored as `code` (non-zero).
fn path_of(code: u8) -> KernelPath {
    KernelPath::ALL[usize::from(code) - 1]
}

/// The best path this build runs on this CPU (cached after the first call).
#[inline]
pub(crate) fn detected() -> KernelPath {
    match DETECTED.load(Ordering::Relaxed) {
        0 => {
            let path = detect();
            DETECTED.store(code(path), Ordering::Relaxed);
            path
        }
        c => path_of(c),
    }
}

/// The path in force.
#[inline]
pub(crate) fn current() -> KernelPath {
    match FORCED.load(Ordering::Relaxed) {
        0 => detected(),
        c => path_of(c),
    }
}

/// Puts `path` (supported: the caller checked) in force; returns the path it replaces.
pub(crate) fn force(path: KernelPath) -> KernelPath {
    let before = current();
    FORCED.store(code(path), Ordering::Relaxed);
    before
}

/// Whether the int8 kernels of the AVX-512 path run on AVX-512 VNNI (`VPDPBUSD`, with AVX512BW
/// and AVX512VL for its 256-bit form): CPUID.(7,0):EBX bits 30 (BW) and 31 (VL), ECX bit 11
/// (VNNI), checked once and cached; no check where the build enables the features. Only asked
/// on the AVX-512 path, whose detection already found that the OS saves the AVX-512 state.
#[inline]
pub(crate) fn int8_vnni() -> bool {
    if cfg!(all(target_feature = "avx512vnni", target_feature = "avx512bw", target_feature = "avx512vl")) {
        return true;
    }
    match VNNI.load(Ordering::Relaxed) {
        0 => {
            let leaf7 = __cpuid_count(7, 0);
            let has = leaf7.ebx >> 30 == 0b11 && leaf7.ecx >> 11 & 1 == 1;
            VNNI.store(1 + has as u8, Ordering::Relaxed);
            has
        }
        c => c == 2,
    }
}

/// The best path: none but the portable one with the crate's `portable` feature; no run-time
/// check where the build enables the features for the whole crate.
fn detect() -> KernelPath {
    if cfg!(feature = "portable") {
        KernelPath::Portable
    } else if cfg!(all(target_feature = "avx512f", target_feature = "avx2", target_feature = "fma")) {
        KernelPath::Avx512
    } else {
        cpu_path()
    }
}

/// The best path from CPUID and XGETBV.
fn cpu_path() -> KernelPath {
    let bit = |reg: u32, n: u32| reg >> n & 1 == 1;
    if __cpuid(0).eax < 7 {
        return KernelPath::Portable;
    }
    let leaf1 = __cpuid(1).ecx;
    if !(bit(leaf1, 12) && bit(leaf1, 27) && bit(leaf1, 28)) {
        return KernelPath::Portable;
    }
    // SAFETY: OSXSAVE (checked above) says the OS enabled XSAVE, which makes XGETBV available.
    let xcr0 = unsafe { _xgetbv(0) };
    let leaf7 = __cpuid_count(7, 0).ebx;
    if xcr0 & 0b110 != 0b110 || !bit(leaf7, 5) {
        return KernelPath::Portable;
    }
    if bit(leaf7, 16) && xcr0 & 0xe0 == 0xe0 {
        KernelPath::Avx512
    } else {
        KernelPath::Avx2Fma
    }
}
