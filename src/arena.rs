//! Arena ownership and the few unsafe slice constructors generated code relies on.
//!
//! Generated code never builds a slice from a raw pointer itself: it calls [`arena_slice`],
//! [`arena_slice_mut`] and [`weights_slice`], which check bounds and alignment. What they cannot check —
//! that two slices alive at once never share bytes — is what the planner's verified plan proves,
//! and each call site in the expansion says so.

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicBool, Ordering};

use crate::tensor::Element;
use crate::Error;

/// An arena owned by a `static`, handed out to one caller at a time.
///
/// `try_lock` never blocks: a second, overlapping caller (another thread, or an interrupt handler
/// that preempted the first call) gets [`Error::Busy`] and the arena is not touched.
pub struct StaticArena<A> {
    busy: AtomicBool,
    arena: UnsafeCell<A>,
}

// SAFETY: the arena is only reachable through `try_lock`, whose atomic flag admits one guard at a time;
// the guard hands out `&mut A` for its own lifetime only, so `A` moves between threads but is never
// shared: `A: Send` is what that needs.
unsafe impl<A: Send> Sync for StaticArena<A> {}

impl<A> StaticArena<A> {
    /// Wraps an arena (usually `Arena::new()`, a `const fn`).
    pub const fn new(arena: A) -> Self {
        StaticArena { busy: AtomicBool::new(false), arena: UnsafeCell::new(arena) }
    }

    /// Takes the arena for one call, or returns [`Error::Busy`] if another call holds it.
    pub fn try_lock(&self) -> Result<ArenaGuard<'_, A>, Error> {
        take(&self.busy)?;
        Ok(ArenaGuard { owner: self })
    }
}

/// One memory pool of a model planned with `pools:`: a `static` of its own (which the linker may
/// place in a section of its own), with no busy flag of its own: the model's one [`StaticArena`]
/// flag guards all of its pools, and generated code makes references to a pool only while holding
/// that flag's guard.
pub struct StaticPool<P> {
    pool: UnsafeCell<P>,
}

// SAFETY: the pool is only reached through `as_ptr`, which generated code dereferences only while
// it holds the model's busy flag (one holder at a time), so `P` moves between threads but is never
// shared: `P: Send` is what that needs.
unsafe impl<P: Send> Sync for StaticPool<P> {}

impl<P> StaticPool<P> {
    /// Wraps a pool (usually `PoolName::new()`, a `const fn`).
    pub const fn new(pool: P) -> Self {
        StaticPool { pool: UnsafeCell::new(pool) }
    }

    /// The pool's address. Dereferencing it is sound only for the holder of the busy flag that
    /// guards this pool, while it holds it, and once at a time.
    pub const fn as_ptr(&self) -> *mut P {
        self.pool.get()
    }
}

/// Sets `busy` if it was clear, or returns [`Error::Busy`]: one atomic compare-and-swap.
#[cfg(target_has_atomic = "8")]
fn take(busy: &AtomicBool) -> Result<(), Error> {
    busy.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).map(|_| ()).map_err(|_| Error::Busy)
}

/// Sets `busy` if it was clear, or returns [`Error::Busy`], on cores without an atomic
/// compare-and-swap (Armv6-M: Cortex-M0, M0+, `thumbv6m-none-eabi`): the load and the store inside
/// one `critical_section::with`, so that nothing runs between them. The application provides the
/// critical section's implementation, as the `critical-section` crate requires (on a single-core
/// Cortex-M, `cortex-m`'s feature `critical-section-single-core`, which masks interrupts; the
/// firmware in `examples/cortex-m` does this for the micro:bit). Without one the build fails at
/// link time, never silently without the guard.
#[cfg(not(target_has_atomic = "8"))]
fn take(busy: &AtomicBool) -> Result<(), Error> {
    critical_section::with(|_| {
        if busy.load(Ordering::Acquire) {
            return Err(Error::Busy);
        }
        busy.store(true, Ordering::Relaxed);
        Ok(())
    })
}

/// Exclusive access to a [`StaticArena`]; releases it when dropped.
pub struct ArenaGuard<'a, A> {
    owner: &'a StaticArena<A>,
}

impl<A> Deref for ArenaGuard<'_, A> {
    type Target = A;
    fn deref(&self) -> &A {
        // SAFETY: the guard exists only while `busy` is set by it, so no other reference exists.
        unsafe { &*self.owner.arena.get() }
    }
}

impl<A> DerefMut for ArenaGuard<'_, A> {
    fn deref_mut(&mut self) -> &mut A {
        // SAFETY: as in `deref`; `&mut self` makes this the only live reference from this guard.
        unsafe { &mut *self.owner.arena.get() }
    }
}

impl<A> Drop for ArenaGuard<'_, A> {
    fn drop(&mut self) {
        self.owner.busy.store(false, Ordering::Release);
    }
}

#[inline(always)]
fn check<T: Element>(arena_len: usize, offset: usize, len: usize) {
    let size = core::mem::size_of::<T>();
    let end = len.checked_mul(size).and_then(|b| b.checked_add(offset));
    assert!(offset.is_multiple_of(size) && end.is_some_and(|e| e <= arena_len), "sramfit: tensor outside the arena");
}

/// A shared view of `len` elements of `T` at byte `offset` of the arena starting at `base`.
///
/// Bounds and alignment are checked (they are constants in generated code, so the check folds away).
///
/// # Safety
/// `base` must point to `arena_len` bytes, aligned for `T`, valid for the returned lifetime, and no
/// mutable slice overlapping `offset..offset + size_of::<T>() * len` may be alive at the same time.
#[inline(always)]
pub unsafe fn arena_slice<'a, T: Element>(base: *mut u8, arena_len: usize, offset: usize, len: usize) -> &'a [T] {
    check::<T>(arena_len, offset, len);
    // SAFETY: in bounds and aligned (checked above, base is aligned for T); every bit pattern is a
    // valid `T` (`Element`); disjointness from live mutable slices is the caller's contract.
    unsafe { core::slice::from_raw_parts(base.add(offset).cast::<T>(), len) }
}

/// A mutable view of `len` elements of `T` at byte `offset` of the arena starting at `base`.
///
/// # Safety
/// As for [`arena_slice`], and no other slice overlapping these bytes may be alive at the same time.
#[inline(always)]
pub unsafe fn arena_slice_mut<'a, T: Element>(
    base: *mut u8,
    arena_len: usize,
    offset: usize,
    len: usize,
) -> &'a mut [T] {
    check::<T>(arena_len, offset, len);
    // SAFETY: in bounds and aligned (checked above); exclusivity is the caller's contract.
    unsafe { core::slice::from_raw_parts_mut(base.add(offset).cast::<T>(), len) }
}

/// A view of `len` weights of `T` at byte `offset` of a read-only weight blob.
///
/// The blob is a 16-byte-aligned `static` of little-endian values written at build time. Safe:
/// bounds and alignment are checked, the blob is immutable, and every bit pattern is a valid `T`.
#[inline(always)]
pub fn weights_slice<T: Element>(blob: &'static [u8], offset: usize, len: usize) -> &'static [T] {
    check::<T>(blob.len(), offset, len);
    assert!((blob.as_ptr() as usize).is_multiple_of(core::mem::align_of::<T>()), "sramfit: misaligned weight blob");
    const { assert!(cfg!(target_endian = "little"), "sramfit weights are little-endian") };
    // SAFETY: in bounds, aligned (checked), immutable `'static` data, any bits are a valid `T`.
    unsafe { core::slice::from_raw_parts(blob.as_ptr().add(offset).cast::<T>(), len) }
}
