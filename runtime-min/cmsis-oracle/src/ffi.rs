//! C types and functions of CMSIS-NN (`arm_nn_types.h`, `arm_nnfunctions.h`) and of `shim.c`:
//! the one copy of these declarations, for the host oracle tests and the Cortex-M firmware's
//! CMSIS-NN driver alike.

use core::ffi::c_void;

/// `cmsis_nn_context`.
#[repr(C)]
pub struct Context {
    /// Scratch buffer.
    pub buf: *mut c_void,
    /// Its size in bytes.
    pub size: i32,
}

/// `cmsis_nn_tile`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Tile {
    /// Width.
    pub w: i32,
    /// Height.
    pub h: i32,
}

/// `cmsis_nn_dims`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Dims {
    /// Batch (or output channels of a filter).
    pub n: i32,
    /// Height.
    pub h: i32,
    /// Width.
    pub w: i32,
    /// Channels.
    pub c: i32,
}

/// `cmsis_nn_per_channel_quant_params`.
#[repr(C)]
pub struct PerChannelQuant {
    /// Multipliers.
    pub multiplier: *mut i32,
    /// Shifts.
    pub shift: *mut i32,
}

/// `cmsis_nn_per_tensor_quant_params`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PerTensorQuant {
    /// Multiplier.
    pub multiplier: i32,
    /// Shift.
    pub shift: i32,
}

/// `cmsis_nn_activation`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Activation {
    /// Lower clamp.
    pub min: i32,
    /// Upper clamp.
    pub max: i32,
}

/// `cmsis_nn_conv_params`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ConvParams {
    /// Minus the input zero point.
    pub input_offset: i32,
    /// The output zero point.
    pub output_offset: i32,
    /// Strides.
    pub stride: Tile,
    /// Top / left padding.
    pub padding: Tile,
    /// Dilations.
    pub dilation: Tile,
    /// Output clamp.
    pub activation: Activation,
}

/// `cmsis_nn_dw_conv_params`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DwConvParams {
    /// Minus the input zero point.
    pub input_offset: i32,
    /// The output zero point.
    pub output_offset: i32,
    /// Channel multiplier.
    pub ch_mult: i32,
    /// Strides.
    pub stride: Tile,
    /// Top / left padding.
    pub padding: Tile,
    /// Dilations.
    pub dilation: Tile,
    /// Output clamp.
    pub activation: Activation,
}

/// `cmsis_nn_pool_params`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PoolParams {
    /// Strides.
    pub stride: Tile,
    /// Top / left padding.
    pub padding: Tile,
    /// Output clamp.
    pub activation: Activation,
}

/// `cmsis_nn_fc_params`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct FcParams {
    /// Minus the input zero point.
    pub input_offset: i32,
    /// Minus the weight zero point.
    pub filter_offset: i32,
    /// The output zero point.
    pub output_offset: i32,
    /// Output clamp.
    pub activation: Activation,
}

/// `cmsis_nn_bmm_params`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct BmmParams {
    /// Unused by CMSIS-NN.
    pub adj_x: bool,
    /// Unused by CMSIS-NN.
    pub adj_y: bool,
    /// Offsets and clamp.
    pub fc_params: FcParams,
}

unsafe extern "C" {
    /// `arm_convolve_s8`.
    pub fn arm_convolve_s8(
        ctx: *const Context,
        conv_params: *const ConvParams,
        quant_params: *const PerChannelQuant,
        input_dims: *const Dims,
        input: *const i8,
        filter_dims: *const Dims,
        filter: *const i8,
        bias_dims: *const Dims,
        bias: *const i32,
        upscale_dims: *const Dims,
        output_dims: *const Dims,
        output: *mut i8,
    ) -> i32;
    /// `arm_convolve_s8_get_buffer_size`.
    pub fn arm_convolve_s8_get_buffer_size(input_dims: *const Dims, filter_dims: *const Dims) -> i32;
    /// `arm_convolve_wrapper_s8`: dispatches to CMSIS-NN's fastest convolution for the shape.
    pub fn arm_convolve_wrapper_s8(
        ctx: *const Context,
        conv_params: *const ConvParams,
        quant_params: *const PerChannelQuant,
        input_dims: *const Dims,
        input: *const i8,
        filter_dims: *const Dims,
        filter: *const i8,
        bias_dims: *const Dims,
        bias: *const i32,
        output_dims: *const Dims,
        output: *mut i8,
    ) -> i32;
    /// `arm_convolve_wrapper_s8_get_buffer_size`.
    pub fn arm_convolve_wrapper_s8_get_buffer_size(
        conv_params: *const ConvParams,
        input_dims: *const Dims,
        filter_dims: *const Dims,
        output_dims: *const Dims,
    ) -> i32;
    /// `arm_depthwise_conv_wrapper_s8`: dispatches to CMSIS-NN's fastest depthwise convolution.
    pub fn arm_depthwise_conv_wrapper_s8(
        ctx: *const Context,
        dw_conv_params: *const DwConvParams,
        quant_params: *const PerChannelQuant,
        input_dims: *const Dims,
        input: *const i8,
        filter_dims: *const Dims,
        filter: *const i8,
        bias_dims: *const Dims,
        bias: *const i32,
        output_dims: *const Dims,
        output: *mut i8,
    ) -> i32;
    /// `arm_depthwise_conv_wrapper_s8_get_buffer_size`.
    pub fn arm_depthwise_conv_wrapper_s8_get_buffer_size(
        dw_conv_params: *const DwConvParams,
        input_dims: *const Dims,
        filter_dims: *const Dims,
        output_dims: *const Dims,
    ) -> i32;
    /// `arm_fully_connected_s8_get_buffer_size`.
    pub fn arm_fully_connected_s8_get_buffer_size(filter_dims: *const Dims) -> i32;
    /// `arm_depthwise_conv_s8`.
    pub fn arm_depthwise_conv_s8(
        ctx: *const Context,
        dw_conv_params: *const DwConvParams,
        quant_params: *const PerChannelQuant,
        input_dims: *const Dims,
        input: *const i8,
        filter_dims: *const Dims,
        filter: *const i8,
        bias_dims: *const Dims,
        bias: *const i32,
        output_dims: *const Dims,
        output: *mut i8,
    ) -> i32;
    /// `arm_fully_connected_s8`.
    pub fn arm_fully_connected_s8(
        ctx: *const Context,
        fc_params: *const FcParams,
        quant_params: *const PerTensorQuant,
        input_dims: *const Dims,
        input: *const i8,
        filter_dims: *const Dims,
        kernel: *const i8,
        bias_dims: *const Dims,
        bias: *const i32,
        output_dims: *const Dims,
        output: *mut i8,
    ) -> i32;
    /// `arm_fully_connected_per_channel_s8`.
    pub fn arm_fully_connected_per_channel_s8(
        ctx: *const Context,
        fc_params: *const FcParams,
        quant_params: *const PerChannelQuant,
        input_dims: *const Dims,
        input: *const i8,
        filter_dims: *const Dims,
        kernel: *const i8,
        bias_dims: *const Dims,
        bias: *const i32,
        output_dims: *const Dims,
        output: *mut i8,
    ) -> i32;
    /// `arm_batch_matmul_s8`.
    pub fn arm_batch_matmul_s8(
        ctx: *const Context,
        bmm_params: *const BmmParams,
        quant_params: *const PerTensorQuant,
        input_lhs_dims: *const Dims,
        input_lhs: *const i8,
        input_rhs_dims: *const Dims,
        input_rhs: *const i8,
        output_dims: *const Dims,
        output: *mut i8,
    ) -> i32;
    /// `arm_elementwise_add_s8`.
    pub fn arm_elementwise_add_s8(
        input_1: *const i8,
        input_2: *const i8,
        input_1_offset: i32,
        input_1_mult: i32,
        input_1_shift: i32,
        input_2_offset: i32,
        input_2_mult: i32,
        input_2_shift: i32,
        left_shift: i32,
        output: *mut i8,
        out_offset: i32,
        out_mult: i32,
        out_shift: i32,
        out_activation_min: i32,
        out_activation_max: i32,
        block_size: i32,
    ) -> i32;
    /// `arm_elementwise_mul_s8`.
    pub fn arm_elementwise_mul_s8(
        input_1: *const i8,
        input_2: *const i8,
        input_1_offset: i32,
        input_2_offset: i32,
        output: *mut i8,
        out_offset: i32,
        out_mult: i32,
        out_shift: i32,
        out_activation_min: i32,
        out_activation_max: i32,
        block_size: i32,
    ) -> i32;
    /// `arm_avgpool_s8`.
    pub fn arm_avgpool_s8(
        ctx: *const Context,
        pool_params: *const PoolParams,
        input_dims: *const Dims,
        input: *const i8,
        filter_dims: *const Dims,
        output_dims: *const Dims,
        output: *mut i8,
    ) -> i32;
    /// `arm_avgpool_s8_get_buffer_size`.
    pub fn arm_avgpool_s8_get_buffer_size(dim_dst_width: i32, ch_src: i32) -> i32;
    /// `arm_max_pool_s8`.
    pub fn arm_max_pool_s8(
        ctx: *const Context,
        pool_params: *const PoolParams,
        input_dims: *const Dims,
        input: *const i8,
        filter_dims: *const Dims,
        output_dims: *const Dims,
        output: *mut i8,
    ) -> i32;
    /// `arm_softmax_s8`.
    pub fn arm_softmax_s8(
        input: *const i8,
        num_rows: i32,
        row_size: i32,
        mult: i32,
        shift: i32,
        diff_min: i32,
        output: *mut i8,
    );
    /// `arm_softmax_u8`.
    pub fn arm_softmax_u8(
        input: *const u8,
        num_rows: i32,
        row_size: i32,
        mult: i32,
        shift: i32,
        diff_min: i32,
        output: *mut u8,
    );
    /// `arm_nn_doubling_high_mult` (through `shim.c`).
    pub fn oracle_doubling_high_mult(a: i32, b: i32) -> i32;
    /// `arm_nn_divide_by_power_of_two` (through `shim.c`).
    pub fn oracle_divide_by_power_of_two(x: i32, exponent: i32) -> i32;
    /// `arm_nn_requantize` (through `shim.c`).
    pub fn oracle_requantize(x: i32, multiplier: i32, shift: i32) -> i32;
    /// `arm_nn_exp_on_negative_values` (Q5.26 in, through `shim.c`).
    pub fn oracle_exp_on_negative_values(x: i32) -> i32;
    /// `arm_nn_one_over_one_plus_x_for_x_in_0_1` (through `shim.c`).
    pub fn oracle_one_over_one_plus_x(x: i32) -> i32;
}
