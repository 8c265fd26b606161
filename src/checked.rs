//! Checked mode: the run-time plan checks that code generated with the `checked` feature calls.
//!
//! A run starts by filling the arena with [`CANARY`] (all of it but the inputs written into it). Around every step the generated code
//! asks a [`Checker`] to prove the plan held:
//!
//! - before the step, every arena tensor the step reads still has the fingerprint it had right
//!   after the step that wrote it (nothing overwrote it in between, and its life was not ended
//!   early: a buffer whose life ends is refilled with the canary);
//! - after the step, every other buffer live at that step (including the inputs it just read) is
//!   unchanged: the step wrote only its own output and scratch buffers.
//!
//! - before an overlapped step (its output over the input planes its kernel has read), the offsets
//!   the code passes the kernel keep every output plane before the first input plane it reads
//!   ([`overlap`]): the kernel's plane order, re-checked on the offsets in the expansion; the
//!   kernel (`conv2d_overlapped` and its int8 siblings) then splits its region at the first input
//!   plane it still reads, so it cannot write over input still to be read.
//!
//! A failed check is [`Error::PlanViolation`] naming the step, its node and the damaged tensor.
//! Nothing here is used unless the expansion was generated in checked mode, so with the feature
//! off it costs nothing: the default expansion does not mention this module at all.

use crate::Error;

/// The byte every arena byte holds when no tensor owns it (as an `f32`, `-2.94e-16`: an unusual,
/// finite value, so a kernel reading unwritten bytes gives wrong but reproducible results).
pub const CANARY: u8 = 0xA5;

/// One arena buffer of the plan: a tensor (named after the tensor) or a step's scratch space.
#[derive(Debug)]
pub struct Buffer {
    /// The tensor name, or `<node>.scratch`.
    pub name: &'static str,
    /// Byte offset in the arena.
    pub offset: usize,
    /// Size in bytes.
    pub len: usize,
}

/// What one schedule step may touch, as indices into the model's [`Buffer`] table.
#[derive(Debug)]
pub struct Step {
    /// The step (node index in the schedule).
    pub step: usize,
    /// The node's name.
    pub op: &'static str,
    /// Arena buffers the step reads.
    pub reads: &'static [usize],
    /// Arena buffers the step writes (its output, if it is in the arena, and its scratch).
    pub writes: &'static [usize],
    /// Arena buffers live at this step that it must leave unchanged.
    pub keeps: &'static [usize],
    /// Arena buffers whose life ends with this step (refilled with the canary after it).
    pub dies: &'static [usize],
}

/// An overlapped step's input and output as the generated code places them in their shared
/// buffer: `planes` planes of `in_plane` input and `out_plane` output elements, the input at
/// element `x_at` and the output at element `y_at`.
#[derive(Debug)]
pub struct Overlap {
    /// The step (node index in the schedule).
    pub step: usize,
    /// The node's name.
    pub op: &'static str,
    /// The input tensor's name (what a wrong displacement damages).
    pub tensor: &'static str,
    /// Output planes (output plane `q` reads from input plane `q * stride - before`, at least 0).
    pub planes: usize,
    /// Input planes between the first ones two consecutive output planes read (see `planes`).
    pub stride: usize,
    /// Input planes the first output plane's reads start before the input (see `planes`).
    pub before: usize,
    /// Elements of one input plane.
    pub in_plane: usize,
    /// Elements of one output plane.
    pub out_plane: usize,
    /// Element offset of the input in the buffer.
    pub x_at: usize,
    /// Element offset of the output in the buffer.
    pub y_at: usize,
}

/// `Ok` if no output plane of the overlapped step `o` reaches into the first input plane it reads
/// or a later one (output plane `q` ends at or before input plane `q * stride - before` starts,
/// for every `q`).
pub fn overlap(o: &Overlap) -> Result<(), Error> {
    let first_read = |q: usize| (q * o.stride).saturating_sub(o.before);
    let clear = (0..o.planes).all(|q| o.y_at + (q + 1) * o.out_plane <= o.x_at + first_read(q) * o.in_plane);
    match clear {
        true => Ok(()),
        false => Err(Error::PlanViolation { step: o.step, op: o.op, tensor: o.tensor }),
    }
}

/// The fingerprints of the `N` arena buffers of one run.
pub struct Checker<const N: usize> {
    sums: [u64; N],
}

impl<const N: usize> Checker<N> {
    /// Fills the arena with the canary, except the graph inputs the caller wrote into it (`inputs`,
    /// indices into `buffers` sorted by offset, empty when the inputs are the caller's own
    /// buffers), whose fingerprints it records, and starts a run.
    ///
    /// # Safety
    /// `base` must point to `arena_len` writable bytes, no slice of them may be alive, and every
    /// buffer in `buffers` lies inside the arena.
    pub unsafe fn start(base: *mut u8, arena_len: usize, buffers: &[Buffer], inputs: &[usize]) -> Self {
        let mut checker = Checker { sums: [0; N] };
        let mut at = 0;
        for &b in inputs {
            let buffer = &buffers[b];
            // SAFETY: the caller's contract; `at <= buffer.offset` as the inputs are sorted and disjoint.
            unsafe { core::ptr::write_bytes(base.add(at), CANARY, buffer.offset.saturating_sub(at)) };
            // SAFETY: the caller's contract.
            checker.sums[b] = fingerprint(unsafe { bytes(base, buffer) });
            at = at.max(buffer.offset + buffer.len);
        }
        // SAFETY: the caller's contract.
        unsafe { core::ptr::write_bytes(base.add(at), CANARY, arena_len - at) };
        checker
    }

    /// Checks, before `step` runs, that every arena tensor it reads is intact.
    ///
    /// # Safety
    /// As for [`Checker::start`]; every buffer in `buffers` lies inside the arena.
    pub unsafe fn before(&self, base: *mut u8, buffers: &[Buffer], step: &Step) -> Result<(), Error> {
        // SAFETY: the caller's contract.
        unsafe { self.unchanged(base, buffers, step, step.reads) }
    }

    /// Checks, after `step` ran, that it changed no live buffer but its own; then records the
    /// fingerprints of what it wrote and refills the buffers whose life ended with the canary.
    ///
    /// # Safety
    /// As for [`Checker::before`].
    pub unsafe fn after(&mut self, base: *mut u8, buffers: &[Buffer], step: &Step) -> Result<(), Error> {
        // SAFETY: the caller's contract.
        unsafe { self.unchanged(base, buffers, step, step.keeps)? };
        for &b in step.writes {
            // SAFETY: the caller's contract.
            self.sums[b] = fingerprint(unsafe { bytes(base, &buffers[b]) });
        }
        for &b in step.dies {
            let buffer = &buffers[b];
            // SAFETY: inside the arena (the caller's contract), no slice alive.
            unsafe { core::ptr::write_bytes(base.add(buffer.offset), CANARY, buffer.len) };
        }
        Ok(())
    }

    /// `Ok` if every buffer in `which` still has its recorded fingerprint.
    unsafe fn unchanged(&self, base: *mut u8, buffers: &[Buffer], step: &Step, which: &[usize]) -> Result<(), Error> {
        for &b in which {
            // SAFETY: the caller's contract.
            if fingerprint(unsafe { bytes(base, &buffers[b]) }) != self.sums[b] {
                return Err(Error::PlanViolation { step: step.step, op: step.op, tensor: buffers[b].name });
            }
        }
        Ok(())
    }
}

/// The bytes of `buffer`.
///
/// # Safety
/// `buffer` lies inside the arena at `base`, and no mutable slice of it is alive.
unsafe fn bytes<'a>(base: *mut u8, buffer: &Buffer) -> &'a [u8] {
    // SAFETY: the caller's contract.
    unsafe { core::slice::from_raw_parts(base.add(buffer.offset), buffer.len) }
}

/// FNV-1a over 8-byte words (then the tail bytes): cheap, and any change of the bytes changes it
/// with overwhelming probability.
fn fingerprint(bytes: &[u8]) -> u64 {
    const PRIME: u64 = 0x0100_0000_01b3;
    let mut words = bytes.chunks_exact(8);
    let mut h = words.by_ref().fold(0xcbf2_9ce4_8422_2325_u64, |h, w| {
        (h ^ u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]])).wrapping_mul(PRIME)
    });
    for &b in words.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(PRIME);
    }
    h
}
