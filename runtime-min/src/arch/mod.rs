//! The one place where the portable kernels reach instruction-set-specific code.
//!
//! A build can run one or more kernel paths ([`KernelPath`]): the portable kernels always, and on
//! x86-64 the FMA micro-kernels of `x86_64/` for AVX2 + FMA or AVX-512F, chosen at run time from
//! what the CPU and the operating system support (detected once, then cached), whatever flags
//! the crate was built with. The portable code asks for the path in force once per kernel call
//! ([`Kernels::current`]) and reaches the architecture kernels only through [`Kernels`]' methods
//! and [`run`], which compiles a kernel's whole body once per path with that path's target
//! features. Each target has one architecture module with the same functions (`this_arch`):
//! `x86_64/` on x86-64, `portable.rs` (the portable path only) everywhere else.
//!
//! On x86-64 the int8 convolution, depthwise convolution and fully connected layers follow the
//! path in force too (`x86_64/int8/`: AVX2, or AVX-512 VNNI where the CPU has it on the AVX-512
//! path). The int8 kernels of Arm's DSP extension (`arm/`) are chosen when the crate is compiled, not at
//! run time: where `cfg(arm_dsp)` is set (see `build.rs`), [`quant_conv2d`],
//! [`quant_depthwise_conv2d`] and [`quant_fully_connected`] run them for the layers they take; the f32 kernels stay portable
//! there ([`KernelPath::Portable`]), and the `portable` feature turns the DSP kernels off.
//!
//! Every path gives the same bits as before this module existed: the AVX2 and AVX-512 kernels
//! compute each output as the same k-ascending chain of fused multiply-adds (bit-identical to
//! each other), and the portable kernels compute exactly what they compute on a microcontroller
//! (compiling them with wider vectors changes no result: Rust never contracts `a * b + c`).

#[cfg(any(arm_dsp, test))]
mod arm;
pub(crate) mod arm_facts;
mod path;
#[cfg(not(target_arch = "x86_64"))]
mod portable;
pub(crate) mod x86_64_facts;
#[cfg(not(target_arch = "x86_64"))]
use portable as this_arch;
#[cfg(target_arch = "x86_64")]
mod x86_64;
#[cfg(target_arch = "x86_64")]
use x86_64 as this_arch;

pub(crate) use path::{KernelCall, Kernels};
pub use path::{KernelPath, UnsupportedKernelPath};

use crate::blocked::Reorder;
use crate::conv_shape::{Conv2d, ConvOperands, SharedRegion};
use crate::epilogue::{Bias, Gemm};
use crate::quant::{
    Add, ChannelQuant, ConvertElem, FullyConnected, Pool2d, QuantElem, QuantInt, Quantization, Rounding,
};
use crate::Broadcast;

impl KernelPath {
    /// Whether this build can run the path on this CPU (the portable one always).
    pub fn is_supported(self) -> bool {
        self <= detected_kernel_path()
    }
}

/// The kernel path in force: the one the next kernel call runs.
///
/// By default the best path this build runs on this CPU ([`detected_kernel_path`]); with the
/// crate's `portable` feature, or on a target other than x86-64, always
/// [`KernelPath::Portable`].
pub fn kernel_path() -> KernelPath {
    Kernels::current().0
}

/// The best path this build runs on this CPU, detected on the first call and cached: on x86-64,
/// AVX-512F, then AVX2 + FMA, each only where the CPU has the instructions (CPUID) and the
/// operating system saves their registers (XGETBV); no detection at all where the build already
/// enables the features (`-C target-cpu=native` on such a CPU).
pub fn detected_kernel_path() -> KernelPath {
    this_arch::detected()
}

/// Makes every later kernel call, from any thread, run `path` (process-wide), and returns the
/// path it replaces; `force_kernel_path(detected_kernel_path())` restores the default. For tests
/// and benchmarks that compare paths: a model gives the same bits on the two x86-64 FMA paths,
/// and the portable path's bits otherwise. Kernel calls already running finish on the path they
/// started with.
pub fn force_kernel_path(path: KernelPath) -> Result<KernelPath, UnsupportedKernelPath> {
    if !path.is_supported() {
        return Err(UnsupportedKernelPath(path));
    }
    Ok(this_arch::force(path))
}

impl Kernels {
    /// The path in force.
    #[inline(always)]
    pub(crate) fn current() -> Self {
        Kernels(this_arch::current())
    }

    /// The kernels of `path`, if this CPU runs it (for tests that compare paths without
    /// changing the path in force).
    #[cfg(test)]
    pub(crate) fn supported(path: KernelPath) -> Option<Self> {
        path.is_supported().then_some(Kernels(path))
    }

    /// Computes `C = act(alpha * A B + bias)` on this path's GEMM micro-kernels (`g.k > 0`) and
    /// returns true, or returns false when the portable kernel is to run: on the portable path,
    /// or for products with fewer rows than the micro-kernels pay for.
    #[inline(always)]
    pub(crate) fn gemm(self, g: &Gemm, a: &[f32], b: &[f32], bias: Bias, c: &mut [f32]) -> bool {
        this_arch::gemm(self.0, g, a, b, bias, c)
    }

    /// Whether [`Kernels::conv_implicit`] computes a non-pointwise convolution with `ocg` output
    /// channels per group and `positions` output positions, given scratch for im2col tiles of
    /// `tile` positions.
    #[inline(always)]
    pub(crate) fn implicit_conv(self, ocg: usize, tile: usize, positions: usize) -> bool {
        this_arch::implicit_conv(self.0, ocg, tile, positions)
    }

    /// The convolution of one (image, group) as an implicit GEMM without scratch (only where
    /// [`Kernels::implicit_conv`] said so): `ops` holds the group's input planes, weights and
    /// output planes.
    #[inline(always)]
    pub(crate) fn conv_implicit(self, p: &Conv2d, ops: ConvOperands) {
        this_arch::conv_implicit(self.0, p, ops)
    }

    /// Computes [`crate::conv2d_blocked`] on this path's kernels and returns true, or returns
    /// false when the portable kernel is to run.
    #[inline(always)]
    pub(crate) fn conv2d_blocked(self, p: &Conv2d, x: &[f32], w: &[f32], bias: Option<&[f32]>, y: &mut [f32]) -> bool {
        this_arch::conv2d_blocked(self.0, p, x, w, bias, y)
    }

    /// Converts the whole blocks of `x` into `y` ([`crate::to_blocked`] / [`crate::from_blocked`],
    /// `plane` positions per channel) with this path's vectors and returns true, or returns false
    /// when the portable loop is to run (a copy: the same values either way).
    #[inline(always)]
    pub(crate) fn reorder_blocked(self, way: Reorder, plane: usize, x: &[f32], y: &mut [f32]) -> bool {
        this_arch::reorder_blocked(self.0, way, plane, x, y)
    }

    /// `y[c] = 0.0 + x[c * plane] + x[c * plane + 1] + ...` (`plane = x.len() / y.len()`, added
    /// in that order) for the first planes, on this path's vectors; returns how many (0 on the
    /// portable path), the rest being the caller's.
    #[inline(always)]
    pub(crate) fn plane_sums(self, x: &[f32], y: &mut [f32]) -> usize {
        this_arch::plane_sums(self.0, x, y)
    }

    /// Computes a 2x2, stride-2 max pooling ([`crate::max_pool2d`]) with this path's vectors and
    /// returns true, or returns false when the portable kernel is to run (same bits either way).
    #[inline(always)]
    pub(crate) fn max_pool_square2(self, p: &crate::Pool2d, x: &[f32], y: &mut [f32]) -> bool {
        this_arch::max_pool_square2(self.0, p, x, y)
    }

    /// Computes a depthwise convolution (one input channel per group) on this path's depthwise
    /// kernels and returns true, or returns false when the portable direct convolution is to run.
    #[inline(always)]
    pub(crate) fn depthwise(self, p: &Conv2d, ops: ConvOperands) -> bool {
        this_arch::depthwise(self.0, p, ops)
    }

    /// Computes a depthwise convolution whose input and output share one region (under the
    /// contract [`crate::conv2d_overlapped`] checked: output plane `q` ends at or before input
    /// plane `q` starts) in one call of this path's depthwise kernels and returns true, or returns
    /// false when the caller is to run it in chunks of planes.
    #[inline(always)]
    pub(crate) fn depthwise_shared(self, p: &Conv2d, shared: SharedRegion, w: &[f32], bias: Bias) -> bool {
        this_arch::depthwise_shared(self.0, p, shared, w, bias)
    }
}

/// Runs `call` with the [`Kernels`] in force, compiled for that path: on x86-64 the body gets a
/// copy compiled with AVX2 + FMA and one with AVX-512F besides the baseline one, so that the
/// portable parts of a kernel (im2col, the row-wise direct convolution, the portable GEMM of
/// narrow products) run on the vector width the CPU has, as in a `-C target-cpu=native` build,
/// and call the FMA kernels of the same path. Elsewhere, a plain call.
#[inline(always)]
pub(crate) fn run(call: impl KernelCall) {
    let kernels = Kernels::current();
    this_arch::run(kernels, call)
}

/// The int8 kernels [`crate::quant::conv2d`], [`crate::quant::depthwise_conv2d`] and
/// [`crate::quant::fully_connected`] run on the path in force, for the layers they take:
/// `"avx2"` or `"avx512-vnni"` on x86-64 (the AVX-512 path runs the AVX2 ones on CPUs without
/// AVX-512 VNNI), `"arm-dsp"` where `cfg(arm_dsp)` is set, else `"portable"`.
pub fn quant_kernels() -> &'static str {
    this_arch::quant_kernels(kernel_path())
}

/// Runs [`crate::quant::conv2d`] on the architecture's int8 kernels (Arm's DSP extension where
/// `cfg(arm_dsp)` is set; on x86-64 those of the path in force) if this build has them and they
/// take `p`, and returns whether they ran; the portable kernel runs otherwise. Same bits either
/// way.
#[inline(always)]
pub(crate) fn quant_conv2d<T: QuantElem>(
    p: &crate::quant::Conv2d,
    x: &[T],
    w: &[i8],
    q: &ChannelQuant,
    y: &mut [T],
) -> bool {
    #[cfg(arm_dsp)]
    return arm::conv2d(p, x, w, q, y);
    #[cfg(not(arm_dsp))]
    this_arch::quant_conv2d(Kernels::current().0, p, x, w, q, y)
}

/// As [`quant_conv2d`], for [`crate::quant::depthwise_conv2d`].
#[inline(always)]
pub(crate) fn quant_depthwise_conv2d<T: QuantElem>(
    p: &crate::quant::Conv2d,
    x: &[T],
    w: &[i8],
    q: &ChannelQuant,
    y: &mut [T],
) -> bool {
    #[cfg(arm_dsp)]
    return arm::depthwise_conv2d(p, x, w, q, y);
    #[cfg(not(arm_dsp))]
    this_arch::quant_depthwise_conv2d(Kernels::current().0, p, x, w, q, y)
}

/// As [`quant_conv2d`], for [`crate::quant::fully_connected`].
#[inline(always)]
pub(crate) fn quant_fully_connected<T: QuantElem>(
    p: &FullyConnected,
    x: &[T],
    w: &[i8],
    q: &ChannelQuant,
    y: &mut [T],
) -> bool {
    #[cfg(arm_dsp)]
    return arm::fully_connected(p, x, w, q, y);
    #[cfg(not(arm_dsp))]
    this_arch::quant_fully_connected(Kernels::current().0, p, x, w, q, y)
}

/// Runs [`crate::quant::max_pool2d`] on the x86-64 int8 kernels of the path in force if they take
/// it (8-bit elements, 2x2 windows at stride 2 without padding, contiguous columns), and returns
/// whether they ran. Same bits either way.
#[inline(always)]
pub(crate) fn quant_max_pool2d<T: QuantInt>(p: &Pool2d, x: &[T], y: &mut [T]) -> bool {
    #[cfg(target_arch = "x86_64")]
    return this_arch::quant_max_pool2d(Kernels::current().0, p, x, y);
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (p, x, y);
        false
    }
}

/// Runs [`crate::quant::add`] (`subtract`: [`crate::quant::sub`]) on the x86-64 int8 kernels of
/// the path in force if they take it (inputs of the output's shape, no broadcasting), and
/// returns whether they ran (8-bit elements only). Same bits either way.
#[inline(always)]
pub(crate) fn quant_add_sub<T: QuantInt>(p: (&Add, &Broadcast), ab: (&[T], &[T]), y: &mut [T], subtract: bool) -> bool {
    #[cfg(target_arch = "x86_64")]
    return this_arch::quant_add_sub(Kernels::current().0, p, ab, y, subtract);
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (p, ab, y, subtract);
        false
    }
}

/// As [`quant_add_sub`], for [`crate::quant::add_in_place`] and
/// [`crate::quant::sub_in_place`].
#[inline(always)]
pub(crate) fn quant_add_sub_in_place<T: QuantInt>(
    p: (&Add, &Broadcast),
    acc: &mut [T],
    b: &[T],
    subtract: bool,
) -> bool {
    #[cfg(target_arch = "x86_64")]
    return this_arch::quant_add_sub_in_place(Kernels::current().0, p, acc, b, subtract);
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (p, acc, b, subtract);
        false
    }
}

/// Runs [`crate::quant::quantize`] on the x86-64 kernels of the path in force if they take it
/// (ONNX's rounding), and returns whether they ran. Same bits either way.
#[inline(always)]
pub(crate) fn quant_quantize<T: ConvertElem>(p: &Quantization, rounding: Rounding, x: &[f32], y: &mut [T]) -> bool {
    #[cfg(target_arch = "x86_64")]
    return this_arch::quant_quantize(Kernels::current().0, p, rounding, x, y);
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (p, rounding, x, y);
        false
    }
}
