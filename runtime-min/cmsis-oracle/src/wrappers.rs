//! Safe wrappers: each allocates CMSIS-NN's scratch buffer, calls the kernel and checks its status.

use core::ffi::c_void;
use std::vec;
use std::vec::Vec;

use crate::ffi;
use crate::{Activation, BmmParams, ConvParams, Dims, DwConvParams, FcParams, PerTensorQuant, PoolParams, Tile};

/// CMSIS-NN's `ARM_CMSIS_NN_SUCCESS`.
const SUCCESS: i32 = 0;

/// A context owning a zeroed scratch buffer of `bytes` bytes (4-byte aligned).
struct Scratch(Vec<i32>);

impl Scratch {
    fn new(bytes: i32) -> Self {
        Scratch(vec![0; (bytes.max(0) as usize).div_ceil(4)])
    }
    fn context(&mut self) -> ffi::Context {
        let size = (self.0.len() * 4) as i32;
        let buf = if self.0.is_empty() { core::ptr::null_mut() } else { self.0.as_mut_ptr().cast::<c_void>() };
        ffi::Context { buf, size }
    }
}

/// Elements of a `Dims`.
fn count(d: &Dims) -> usize {
    (d.n * d.h * d.w * d.c) as usize
}

/// Per-channel multipliers and shifts as CMSIS-NN's (mutable, though never written) pointers.
fn per_channel(multipliers: &[i32], shifts: &[i32]) -> ffi::PerChannelQuant {
    ffi::PerChannelQuant { multiplier: multipliers.as_ptr().cast_mut(), shift: shifts.as_ptr().cast_mut() }
}

/// `arm_convolve_s8` on NHWC `input` (`input_dims`), OHWI `filter` (`filter_dims`: `n` output
/// channels, `c` input channels per group), per-channel requantization, optional bias.
pub fn convolve_s8(
    params: &ConvParams,
    multipliers: &[i32],
    shifts: &[i32],
    input_dims: Dims,
    input: &[i8],
    filter_dims: Dims,
    filter: &[i8],
    bias: Option<&[i32]>,
    output_dims: Dims,
    output: &mut [i8],
) {
    assert!(input.len() >= count(&input_dims) && filter.len() >= count(&filter_dims));
    assert!(output.len() >= count(&output_dims) && multipliers.len() >= output_dims.c as usize);
    assert!(shifts.len() >= output_dims.c as usize && bias.is_none_or(|b| b.len() >= output_dims.c as usize));
    let bias_dims = Dims { n: 1, h: 1, w: 1, c: output_dims.c };
    // SAFETY: every slice holds at least the elements its dims describe (asserted above), the
    // scratch buffer has the size CMSIS-NN asks for, and nothing else aliases the output.
    let status = unsafe {
        let mut scratch = Scratch::new(ffi::arm_convolve_s8_get_buffer_size(&input_dims, &filter_dims));
        ffi::arm_convolve_s8(
            &scratch.context(),
            params,
            &per_channel(multipliers, shifts),
            &input_dims,
            input.as_ptr(),
            &filter_dims,
            filter.as_ptr(),
            &bias_dims,
            bias.map_or(core::ptr::null(), <[i32]>::as_ptr),
            core::ptr::null(),
            &output_dims,
            output.as_mut_ptr(),
        )
    };
    assert_eq!(status, SUCCESS, "arm_convolve_s8");
}

/// `arm_depthwise_conv_s8` on NHWC `input`, 1HWO `filter` (`filter_dims`: `h`, `w`, `c` = output
/// channels), per-channel requantization and bias.
pub fn depthwise_conv_s8(
    params: &DwConvParams,
    multipliers: &[i32],
    shifts: &[i32],
    input_dims: Dims,
    input: &[i8],
    filter_dims: Dims,
    filter: &[i8],
    bias: &[i32],
    output_dims: Dims,
    output: &mut [i8],
) {
    let channels = output_dims.c as usize;
    assert!(input.len() >= count(&input_dims) && filter.len() >= count(&filter_dims));
    assert!(output.len() >= count(&output_dims) && multipliers.len() >= channels);
    assert!(shifts.len() >= channels && bias.len() >= channels);
    let bias_dims = Dims { n: 1, h: 1, w: 1, c: output_dims.c };
    // SAFETY: as in `convolve_s8`; the pure-C depthwise kernel uses no scratch.
    let status = unsafe {
        ffi::arm_depthwise_conv_s8(
            &Scratch::new(0).context(),
            params,
            &per_channel(multipliers, shifts),
            &input_dims,
            input.as_ptr(),
            &filter_dims,
            filter.as_ptr(),
            &bias_dims,
            bias.as_ptr(),
            &output_dims,
            output.as_mut_ptr(),
        )
    };
    assert_eq!(status, SUCCESS, "arm_depthwise_conv_s8");
}

/// `arm_fully_connected_s8` (per tensor) or, with several multipliers,
/// `arm_fully_connected_per_channel_s8`: `input` `[batch, k]`, `kernel` `[n, k]`.
pub fn fully_connected_s8(
    params: &FcParams,
    multipliers: &[i32],
    shifts: &[i32],
    batch: usize,
    input: &[i8],
    kernel: &[i8],
    bias: &[i32],
    output: &mut [i8],
) {
    let n = bias.len();
    let k = kernel.len() / n;
    assert!(input.len() >= batch * k && output.len() >= batch * n && kernel.len() == n * k);
    let input_dims = Dims { n: batch as i32, h: 1, w: 1, c: k as i32 };
    let filter_dims = Dims { n: k as i32, h: 1, w: 1, c: n as i32 };
    let bias_dims = Dims { n: 1, h: 1, w: 1, c: n as i32 };
    let output_dims = Dims { n: batch as i32, h: 1, w: 1, c: n as i32 };
    // SAFETY: the slices hold the elements the dims describe (asserted above); the pure-C fully
    // connected kernels use no scratch.
    let status = unsafe {
        let ctx = Scratch::new(0).context();
        if multipliers.len() == 1 {
            let quant = PerTensorQuant { multiplier: multipliers[0], shift: shifts[0] };
            ffi::arm_fully_connected_s8(
                &ctx,
                params,
                &quant,
                &input_dims,
                input.as_ptr(),
                &filter_dims,
                kernel.as_ptr(),
                &bias_dims,
                bias.as_ptr(),
                &output_dims,
                output.as_mut_ptr(),
            )
        } else {
            assert!(multipliers.len() >= n && shifts.len() >= n);
            ffi::arm_fully_connected_per_channel_s8(
                &ctx,
                params,
                &per_channel(multipliers, shifts),
                &input_dims,
                input.as_ptr(),
                &filter_dims,
                kernel.as_ptr(),
                &bias_dims,
                bias.as_ptr(),
                &output_dims,
                output.as_mut_ptr(),
            )
        }
    };
    assert_eq!(status, SUCCESS, "arm_fully_connected_s8");
}

/// `arm_batch_matmul_s8`: `lhs` `[batch, m, k]`, `rhs` transposed `[batch, n, k]`, output
/// `[batch, m, n]`.
pub fn batch_matmul_s8(
    params: &FcParams,
    quant: PerTensorQuant,
    (batch, m, n, k): (usize, usize, usize, usize),
    lhs: &[i8],
    rhs: &[i8],
    output: &mut [i8],
) {
    assert!(lhs.len() >= batch * m * k && rhs.len() >= batch * n * k && output.len() >= batch * m * n);
    let bmm = BmmParams { adj_x: false, adj_y: false, fc_params: *params };
    let lhs_dims = Dims { n: 1, h: batch as i32, w: m as i32, c: k as i32 };
    let rhs_dims = Dims { n: 1, h: batch as i32, w: n as i32, c: k as i32 };
    let output_dims = Dims { n: 1, h: batch as i32, w: m as i32, c: n as i32 };
    // SAFETY: the slices hold the elements the dims describe (asserted above); no scratch on the
    // host.
    let status = unsafe {
        ffi::arm_batch_matmul_s8(
            &Scratch::new(0).context(),
            &bmm,
            &quant,
            &lhs_dims,
            lhs.as_ptr(),
            &rhs_dims,
            rhs.as_ptr(),
            &output_dims,
            output.as_mut_ptr(),
        )
    };
    assert_eq!(status, SUCCESS, "arm_batch_matmul_s8");
}

/// The per-input parameters of `arm_elementwise_add_s8`: offset (minus the zero point),
/// multiplier, shift.
pub type AddInput = (i32, i32, i32);

/// `arm_elementwise_add_s8` over equal-length vectors.
pub fn elementwise_add_s8(
    a: &[i8],
    b: &[i8],
    (a_offset, a_mult, a_shift): AddInput,
    (b_offset, b_mult, b_shift): AddInput,
    left_shift: i32,
    (out_offset, out_mult, out_shift): AddInput,
    activation: Activation,
    output: &mut [i8],
) {
    assert!(a.len() == b.len() && output.len() == a.len());
    // SAFETY: three slices of `block_size` elements.
    let status = unsafe {
        ffi::arm_elementwise_add_s8(
            a.as_ptr(),
            b.as_ptr(),
            a_offset,
            a_mult,
            a_shift,
            b_offset,
            b_mult,
            b_shift,
            left_shift,
            output.as_mut_ptr(),
            out_offset,
            out_mult,
            out_shift,
            activation.min,
            activation.max,
            a.len() as i32,
        )
    };
    assert_eq!(status, SUCCESS, "arm_elementwise_add_s8");
}

/// `arm_elementwise_mul_s8` over equal-length vectors; `offsets` are minus the input zero points.
pub fn elementwise_mul_s8(
    a: &[i8],
    b: &[i8],
    offsets: (i32, i32),
    out_offset: i32,
    quant: PerTensorQuant,
    activation: Activation,
    output: &mut [i8],
) {
    assert!(a.len() == b.len() && output.len() == a.len());
    // SAFETY: three slices of `block_size` elements.
    let status = unsafe {
        ffi::arm_elementwise_mul_s8(
            a.as_ptr(),
            b.as_ptr(),
            offsets.0,
            offsets.1,
            output.as_mut_ptr(),
            out_offset,
            quant.multiplier,
            quant.shift,
            activation.min,
            activation.max,
            a.len() as i32,
        )
    };
    assert_eq!(status, SUCCESS, "arm_elementwise_mul_s8");
}

/// `arm_avgpool_s8` (`average == true`) or `arm_max_pool_s8` on one NHWC image (`input_dims.n`
/// 1), window `filter` (`w`, `h`).
pub fn pool_s8(
    average: bool,
    params: &PoolParams,
    input_dims: Dims,
    input: &[i8],
    filter: Tile,
    output_dims: Dims,
    output: &mut [i8],
) {
    assert!(input.len() >= count(&input_dims) && output.len() >= count(&output_dims));
    let filter_dims = Dims { n: 1, h: filter.h, w: filter.w, c: 1 };
    // SAFETY: the slices hold the elements the dims describe (asserted above); the scratch has the
    // size CMSIS-NN asks for.
    let status = unsafe {
        if average {
            let mut scratch = Scratch::new(ffi::arm_avgpool_s8_get_buffer_size(output_dims.w, input_dims.c));
            let ctx = scratch.context();
            ffi::arm_avgpool_s8(
                &ctx,
                params,
                &input_dims,
                input.as_ptr(),
                &filter_dims,
                &output_dims,
                output.as_mut_ptr(),
            )
        } else {
            let ctx = Scratch::new(0).context();
            ffi::arm_max_pool_s8(
                &ctx,
                params,
                &input_dims,
                input.as_ptr(),
                &filter_dims,
                &output_dims,
                output.as_mut_ptr(),
            )
        }
    };
    assert_eq!(status, SUCCESS, "arm_avgpool_s8 / arm_max_pool_s8");
}

/// `arm_softmax_s8` over `rows` rows of `input.len() / rows` elements.
pub fn softmax_s8(input: &[i8], rows: usize, mult: i32, shift: i32, diff_min: i32, output: &mut [i8]) {
    assert!(output.len() == input.len() && input.len().is_multiple_of(rows));
    // SAFETY: two slices of `rows * row_size` elements.
    unsafe {
        ffi::arm_softmax_s8(
            input.as_ptr(),
            rows as i32,
            (input.len() / rows) as i32,
            mult,
            shift,
            diff_min,
            output.as_mut_ptr(),
        )
    }
}

/// `arm_softmax_u8` over `rows` rows of `input.len() / rows` elements.
pub fn softmax_u8(input: &[u8], rows: usize, mult: i32, shift: i32, diff_min: i32, output: &mut [u8]) {
    assert!(output.len() == input.len() && input.len().is_multiple_of(rows));
    // SAFETY: two slices of `rows * row_size` elements.
    unsafe {
        ffi::arm_softmax_u8(
            input.as_ptr(),
            rows as i32,
            (input.len() / rows) as i32,
            mult,
            shift,
            diff_min,
            output.as_mut_ptr(),
        )
    }
}

/// `arm_nn_doubling_high_mult`.
pub fn doubling_high_mult(a: i32, b: i32) -> i32 {
    // SAFETY: pure function of two integers.
    unsafe { ffi::oracle_doubling_high_mult(a, b) }
}

/// `arm_nn_divide_by_power_of_two` (`exponent` in `0..=31`).
pub fn divide_by_power_of_two(x: i32, exponent: i32) -> i32 {
    // SAFETY: pure function of two integers.
    unsafe { ffi::oracle_divide_by_power_of_two(x, exponent) }
}

/// `arm_nn_requantize`.
pub fn requantize(x: i32, multiplier: i32, shift: i32) -> i32 {
    // SAFETY: pure function of three integers.
    unsafe { ffi::oracle_requantize(x, multiplier, shift) }
}

/// `arm_nn_exp_on_negative_values` (input Q5.26).
pub fn exp_on_negative_values(x: i32) -> i32 {
    // SAFETY: pure function of an integer.
    unsafe { ffi::oracle_exp_on_negative_values(x) }
}

/// `arm_nn_one_over_one_plus_x_for_x_in_0_1`.
pub fn one_over_one_plus_x(x: i32) -> i32 {
    // SAFETY: pure function of an integer.
    unsafe { ffi::oracle_one_over_one_plus_x(x) }
}
