//! The names the architecture modules share with the portable kernels: the kernel paths
//! ([`KernelPath`]), the path of one kernel call ([`Kernels`], whose methods are in the parent
//! module) and a kernel body compiled per path ([`KernelCall`]). A leaf, so that the
//! architecture modules need nothing of the dispatch that calls them.

/// A set of kernels a build can run. `Ord` follows preference: a later path is faster where the
/// CPU supports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KernelPath {
    /// The portable kernels: any target, what a microcontroller runs.
    Portable,
    /// x86-64 with AVX2 and FMA: the FMA micro-kernels on 8-lane vectors.
    Avx2Fma,
    /// x86-64 with AVX-512F (and AVX2, FMA): the same micro-kernels on 16-lane vectors, giving
    /// the same bits as [`KernelPath::Avx2Fma`].
    Avx512,
}

impl KernelPath {
    /// Every path, in order of preference from the slowest.
    pub const ALL: [KernelPath; 3] = [KernelPath::Portable, KernelPath::Avx2Fma, KernelPath::Avx512];

    /// Its short name: `"portable"`, `"avx2+fma"` or `"avx512"`.
    pub const fn name(self) -> &'static str {
        match self {
            KernelPath::Portable => "portable",
            KernelPath::Avx2Fma => "avx2+fma",
            KernelPath::Avx512 => "avx512",
        }
    }
}

/// The path a [`force_kernel_path`](crate::force_kernel_path) asked for cannot run here (the CPU
/// or the OS lacks its features, the target is not x86-64, or the crate's `portable` feature is
/// on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnsupportedKernelPath(pub KernelPath);

/// The kernel path of one kernel call, read once at its start so that a call never mixes paths.
/// Only `Kernels::current` makes one, from the path in force, which the CPU supports: that is
/// what makes calling the architecture kernels of the path it names sound.
#[derive(Clone, Copy)]
pub(crate) struct Kernels(pub(super) KernelPath);

/// One call of a kernel whose whole body is compiled once per path ([`super::run`]).
pub(crate) trait KernelCall {
    /// The kernel's body, run with the path in force. Mark it `#[inline(always)]`, and the
    /// portable helpers it reaches `#[cfg_attr(target_arch = "x86_64", inline(always))]`: what is
    /// not inlined into `run`'s per-path copies is compiled for the baseline CPU only.
    fn run(self, kernels: Kernels);
}
