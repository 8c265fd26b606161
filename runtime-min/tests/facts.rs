//! The kernel facts (`*_stack_bytes`, `Target`) against the array sizes counted by hand from the
//! kernels' sources: the portable GEMM's panels (`[f32; 4 * 64]` and `[f32; 64 * 8]`), the
//! direct convolution's `[f32; 16]`, the FMA panels (`[f32; 32 * 128]`, `[f32; 128 * 12]`,
//! `[[f32; 32]; 12]`), the implicit GEMM's band (`[f32; 16 * 1024]`) and stride-phase tap
//! offsets (`[u32; 128]`), the depthwise padded plane (`2 x [f32; 4096 + 16]`, `[usize; 9]`, two
//! `usize` and two slices of the arrays), the channel-blocked depthwise kernel (`[f32; 8192]`,
//! `[f32; 2048]`, `[__m256; 25 + 1]`, `[usize; 25]`, `2 x [f32; 16]`), softmax's `2 x [f32; 64]`, resize's `2 x [usize; 64]` and
//! `[f32; 64]`, `select_cmp`'s rank-8 walk over five stride sets (62 words), and the int8 kernels'
//! arrays: the depthwise block (`[i32; 16]`, `[usize; 16]`) and, on 32-bit targets (which may be
//! Arm cores with the DSP extension), the Arm convolution's windows (`[u32; 2 * 2 * 576 / 4]`) and
//! the Arm depthwise kernel's rows (`[[u32; 64]; 4]`).

mod common;

use common::conv_params;
use sramfit_runtime_min::*;

const CORTEX_M: Target = Target::Portable { pointer_bytes: 4 };
const PORTABLE_PANELS: usize = (4 * 64 + 64 * 8) * 4;
const DIRECT: usize = 16 * 4;
const FMA_PANELS: usize = (32 * 128 + 128 * 12 + 12 * 32) * 4;
/// The FMA panels, the implicit GEMM's padded band of input rows and its tap offsets.
const FMA_CONV: usize = FMA_PANELS + 16 * 1024 * 4 + 128 * 4;
const DEPTHWISE_PLANE: usize = 2 * (4096 + 16) * 4 + 9 * 8 + 2 * 8 + 2 * 16;
const DEPTHWISE_BLOCKED: usize = (8192 + 2048) * 4 + 26 * 64 + 16 * 16 * 4 + 25 * 8 + 16 * 4;

#[test]
fn targets_from_cfg_values() {
    assert_eq!(Target::from_cfg("arm", 32), CORTEX_M);
    assert_eq!(Target::from_cfg("aarch64", 64), Target::Portable { pointer_bytes: 8 });
    assert_eq!(Target::from_cfg("x86_64", 64), Target::X86_64);
    assert_eq!(Target::BUILD, Target::from_cfg(std::env::consts::ARCH, usize::BITS as usize));
    assert_eq!(CORTEX_M.kernel_paths(), [KernelPath::Portable]);
    assert_eq!(Target::X86_64.kernel_paths(), KernelPath::ALL);
}

#[test]
fn convolution_stack() {
    use Activation::None as A0;
    let general = conv_params(1, 16, 32, (10, 10), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, A0);
    let few_channels = conv_params(1, 16, 4, (10, 10), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, A0);
    let depthwise = conv_params(1, 16, 16, (10, 10), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 16, A0);
    let depthwise_5x5 = conv_params(1, 16, 16, (10, 10), (5, 5), (1, 1), (1, 1), (2, 2, 2, 2), 16, A0);
    let depthwise_7x7 = conv_params(1, 16, 16, (10, 10), (7, 7), (1, 1), (1, 1), (3, 3, 3, 3), 16, A0);
    let multiplier_8 = conv_params(1, 4, 32, (10, 10), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 4, A0);
    for p in [general, few_channels, depthwise, depthwise_5x5, depthwise_7x7, multiplier_8] {
        assert_eq!(conv2d_stack_bytes(&p, CORTEX_M), PORTABLE_PANELS + DIRECT, "{p:?}");
    }
    let x86 = |p| conv2d_stack_bytes(&p, Target::X86_64);
    let frame = 2 * PORTABLE_PANELS + DIRECT;
    assert_eq!(x86(general), frame + FMA_CONV);
    assert_eq!(x86(few_channels), frame);
    // 3x3 depthwise: the channel-blocked kernel or the padded plane (the larger), one at a time;
    // 5x5: the channel-blocked kernel only; 7x7: none.
    const { assert!(DEPTHWISE_BLOCKED > DEPTHWISE_PLANE) };
    assert_eq!(x86(depthwise), frame + DEPTHWISE_BLOCKED);
    assert_eq!(x86(depthwise_5x5), frame + DEPTHWISE_BLOCKED);
    assert_eq!(x86(depthwise_7x7), frame);
    // 8 output channels per group of one input channel: the implicit GEMM's arrays or the
    // depthwise kernels (the larger) on top of the frame.
    const { assert!(FMA_CONV > DEPTHWISE_BLOCKED) };
    assert_eq!(x86(multiplier_8), frame + FMA_CONV);
}

#[test]
fn matrix_product_stack() {
    let wide = MatMul::row_major(8, 100, 50);
    let narrow = MatMul::row_major(7, 100, 50);
    assert_eq!(matmul_stack_bytes(&wide, CORTEX_M), PORTABLE_PANELS);
    assert_eq!(matmul_stack_bytes(&wide, Target::X86_64), PORTABLE_PANELS + FMA_PANELS);
    assert_eq!(matmul_stack_bytes(&narrow, Target::X86_64), PORTABLE_PANELS);
}

#[test]
fn other_kernel_families_stack() {
    assert_eq!(softmax_stack_bytes(CORTEX_M), 2 * 64 * 4);
    // Global pooling's accumulators of 8 planes folded side by side.
    assert_eq!(pool2d_stack_bytes(CORTEX_M), 8 * 4);
    // On x86-64 also 8 cached column taps of three words and a 16x16 block of planes.
    assert_eq!(pool2d_stack_bytes(Target::X86_64), 8 * 4 + 8 * 3 * 8 + 16 * 16 * 4);
    assert_eq!(resize_stack_bytes(CORTEX_M), 64 * (2 * 4 + 4));
    assert_eq!(resize_stack_bytes(Target::X86_64), 64 * (2 * 8 + 4));
    assert_eq!(rank_generic_stack_bytes(CORTEX_M), 62 * 4);
    assert_eq!(rank_generic_stack_bytes(Target::X86_64), 62 * 8);
}

#[test]
fn int8_kernels_stack() {
    assert_eq!(quant_conv2d_stack_bytes(CORTEX_M), 2 * 2 * 576 / 4 * 4);
    // The x86-64 SIMD kernels: staged rows, the packed panel, tap offsets and starting sums.
    assert_eq!(quant_conv2d_stack_bytes(Target::X86_64), 32 * 1024 + 1024 * 16 + 1024 * 4 + 256 * 4);
    assert_eq!(quant_conv2d_stack_bytes(Target::Portable { pointer_bytes: 8 }), 0);
    assert_eq!(quant_depthwise_stack_bytes(CORTEX_M), 16 * (4 + 4) + 4 * 64 * 4);
    // Plus the SIMD kernel's staged rows (bytes and widened to i16), outputs, tap pairs (32-byte
    // entries) and their weights, and while pairing each tap's offset and flag.
    assert_eq!(
        quant_depthwise_stack_bytes(Target::X86_64),
        16 * (4 + 8) + 8 * 1024 * 3 + 8 * 1024 + 64 * (32 + 4 + 8 + 1)
    );
}

#[test]
fn facts_are_const() {
    const P: MatMul = MatMul::row_major(16, 16, 16);
    const BYTES: usize = matmul_stack_bytes(&P, Target::X86_64);
    assert_eq!(BYTES, PORTABLE_PANELS + FMA_PANELS);
}
