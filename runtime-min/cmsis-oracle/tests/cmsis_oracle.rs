//! runtime-min's quantized kernels against Arm's CMSIS-NN (built for the host from
//! `../shared/cmsis-nn` by this crate's build script) on the same random int8 data and
//! parameters: every output bit-identical.
//!
//! CMSIS-NN's pure-C paths use the same double-rounding requantization as TFLite Micro's
//! reference kernels (`CMSIS_NN_USE_SINGLE_ROUNDING` is not defined by default), and no semantic
//! difference showed up. One CMSIS-NN defect constrains the cases: a grouped `arm_convolve_s8`
//! without bias crashes (see `check_conv`).

#[cfg(not(cmsis))]
#[test]
fn skipped_without_cmsis_nn_sources() {
    eprintln!("skipping the CMSIS-NN oracle tests: ../shared/cmsis-nn not found (set SRAMFIT_CMSIS_NN)");
}

#[cfg(cmsis)]
#[path = "../../tests/common/mod.rs"]
mod common;
#[cfg(cmsis)]
#[path = "../../tests/quant_common/mod.rs"]
mod quant_common;

#[cfg(cmsis)]
mod oracle {
    use super::common::Rng;
    use super::quant_common::{elems, int, requant};
    use sramfit_cmsis_oracle as cmsis;
    use sramfit_cmsis_oracle::{
        Activation, ConvParams, Dims, DwConvParams, FcParams, PerTensorQuant, PoolParams, Tile,
    };
    use sramfit_runtime_min::quant::fixedpoint::{
        multiply_by_quantized_multiplier, rounding_divide_by_pot, saturating_rounding_doubling_high_mul,
    };
    use sramfit_runtime_min::quant::gemmlowp::{exp_on_negative_values, one_over_one_plus_x_for_x_in_0_1};
    use sramfit_runtime_min::quant::{
        add, add_scaling, avg_pool2d, conv2d, conv2d_scratch_len, depthwise_conv2d, fold_bias, fold_depthwise_bias,
        fully_connected, matmul, max_pool2d, mul, mul_requant, softmax, softmax_output, softmax_scaling, ChannelQuant,
        Conv2d, FullyConnected, ImageStrides, MatMul, Mul, Pool2d, Requant, RequantRounding, Softmax,
    };
    use sramfit_runtime_min::Broadcast;

    fn below(rng: &mut Rng, n: usize) -> usize {
        rng.below(n)
    }
    fn i8s(rng: &mut Rng, n: usize) -> Vec<i8> {
        elems(rng, n)
    }
    /// A random output clamp, as CMSIS-NN's activation.
    fn clamp(rng: &mut Rng) -> Activation {
        let (min, max) = super::quant_common::clamp::<i8>(rng);
        Activation { min, max }
    }
    fn random_i32(rng: &mut Rng) -> i32 {
        match rng.below(8) {
            0 => i32::MIN,
            1 => i32::MAX,
            2 => int(rng, -3, 3),
            _ => rng.next_u64() as i32,
        }
    }

    #[test]
    fn fixed_point_primitives_match() {
        let mut rng = Rng::new(101);
        for _ in 0..300_000 {
            let (a, b) = (random_i32(&mut rng), random_i32(&mut rng));
            assert_eq!(saturating_rounding_doubling_high_mul(a, b), cmsis::doubling_high_mult(a, b), "{a} * {b}");
            let e = int(&mut rng, 0, 31);
            assert_eq!(rounding_divide_by_pot(a, e), cmsis::divide_by_power_of_two(a, e), "{a} / 2^{e}");
            // arm_nn_requantize: multiplier in (i32::MIN, i32::MAX], shift in [-31, 30], and no
            // overflow of the left shift (TFLite's contract too).
            let shift = int(&mut rng, -31, 8);
            let x = a >> shift.max(0);
            let m = if b == i32::MIN { i32::MAX } else { b };
            assert_eq!(
                multiply_by_quantized_multiplier(x, m, shift),
                cmsis::requantize(x, m, shift),
                "{x} {m} {shift}"
            );
            // Q5.26 exp of a non-positive value, 1 / (1 + x) of a non-negative one.
            let neg = -((rng.next_u64() >> 33) as i32);
            assert_eq!(exp_on_negative_values(neg, 5), cmsis::exp_on_negative_values(neg), "exp({neg})");
            let pos = (rng.next_u64() >> 33) as i32;
            assert_eq!(one_over_one_plus_x_for_x_in_0_1(pos), cmsis::one_over_one_plus_x(pos), "1/(1+{pos})");
        }
    }

    /// Random NHWC convolution (`depthwise`: groups = input channels) run by both libraries.
    fn check_conv(seed: u64, depthwise: bool, cases: usize) {
        let mut rng = Rng::new(seed);
        for case in 0..cases {
            let batch = 1 + below(&mut rng, 2);
            let (groups, in_channels, out_channels) = if depthwise {
                let c = 1 + below(&mut rng, 12);
                (c, c, c * (1 + below(&mut rng, 3)))
            } else {
                let g = if below(&mut rng, 4) == 0 { 2 } else { 1 };
                (g, g * (1 + below(&mut rng, 8)), g * (1 + below(&mut rng, 8)))
            };
            let (kernel_h, kernel_w) = (1 + below(&mut rng, 3), 1 + below(&mut rng, 3));
            let (dilation_h, dilation_w) = (1 + below(&mut rng, 2), 1 + below(&mut rng, 2));
            let (stride_h, stride_w) = (1 + below(&mut rng, 2), 1 + below(&mut rng, 2));
            let (pad_top, pad_left) = (below(&mut rng, kernel_h), below(&mut rng, kernel_w));
            let (in_h, in_w) = (
                (kernel_h - 1) * dilation_h + 1 + below(&mut rng, 6),
                (kernel_w - 1) * dilation_w + 1 + below(&mut rng, 6),
            );
            let out_h = (in_h + 2 * pad_top - (kernel_h - 1) * dilation_h - 1) / stride_h + 1;
            let out_w = (in_w + 2 * pad_left - (kernel_w - 1) * dilation_w - 1) / stride_w + 1;
            let act = clamp(&mut rng);
            let p = Conv2d {
                batch,
                in_channels,
                in_h,
                in_w,
                out_channels,
                out_h,
                out_w,
                kernel_h,
                kernel_w,
                stride_h,
                stride_w,
                dilation_h,
                dilation_w,
                pad_top,
                pad_left,
                groups,
                x_strides: ImageStrides::nhwc(in_channels, in_h, in_w),
                y_strides: ImageStrides::nhwc(out_channels, out_h, out_w),
                x_zero_point: int(&mut rng, -128, 127),
                w_zero_point: 0,
                y_zero_point: int(&mut rng, -128, 127),
                act_min: act.min,
                act_max: act.max,
            };
            let taps = kernel_h * kernel_w * (in_channels / groups);
            let x = i8s(&mut rng, batch * in_h * in_w * in_channels);
            let w = i8s(&mut rng, out_channels * taps); // OHWI / 1HWO: both libraries' layout
            let bias: Vec<i32> = (0..out_channels).map(|_| int(&mut rng, -40_000, 40_000)).collect();
            let requants: Vec<Requant> = (0..out_channels).map(|_| requant(&mut rng, -12, 1)).collect();
            let multipliers: Vec<i32> = requants.iter().map(|r| r.multiplier).collect();
            let shifts: Vec<i32> = requants.iter().map(|r| r.shift).collect();

            let mut folded = vec![0i32; out_channels];
            let mut ours = vec![0i8; batch * out_h * out_w * out_channels];
            if depthwise {
                fold_depthwise_bias(&w, &bias, p.x_zero_point, 0, &mut folded);
                let q = ChannelQuant {
                    bias: &folded,
                    multipliers: &multipliers,
                    shifts: &shifts,
                    rounding: RequantRounding::Double,
                };
                depthwise_conv2d(&p, &x, &w, &q, &mut ours);
            } else {
                fold_bias(&w, &bias, p.x_zero_point, 0, &mut folded);
                let q = ChannelQuant {
                    bias: &folded,
                    multipliers: &multipliers,
                    shifts: &shifts,
                    rounding: RequantRounding::Double,
                };
                let mut scratch = vec![0i8; conv2d_scratch_len(&p)];
                conv2d(&p, &x, &w, &q, &mut ours, &mut scratch);
            }

            let mut theirs = vec![0i8; ours.len()];
            let tile = |w: usize, h: usize| Tile { w: w as i32, h: h as i32 };
            let input_dims = Dims { n: batch as i32, h: in_h as i32, w: in_w as i32, c: in_channels as i32 };
            let output_dims = Dims { n: batch as i32, h: out_h as i32, w: out_w as i32, c: out_channels as i32 };
            if depthwise {
                let params = DwConvParams {
                    input_offset: -p.x_zero_point,
                    output_offset: p.y_zero_point,
                    ch_mult: (out_channels / in_channels) as i32,
                    stride: tile(stride_w, stride_h),
                    padding: tile(pad_left, pad_top),
                    dilation: tile(dilation_w, dilation_h),
                    activation: act,
                };
                let filter_dims = Dims { n: 1, h: kernel_h as i32, w: kernel_w as i32, c: out_channels as i32 };
                cmsis::depthwise_conv_s8(
                    &params,
                    &multipliers,
                    &shifts,
                    input_dims,
                    &x,
                    filter_dims,
                    &w,
                    &bias,
                    output_dims,
                    &mut theirs,
                );
            } else {
                let params = ConvParams {
                    input_offset: -p.x_zero_point,
                    output_offset: p.y_zero_point,
                    stride: tile(stride_w, stride_h),
                    padding: tile(pad_left, pad_top),
                    dilation: tile(dilation_w, dilation_h),
                    activation: act,
                };
                let filter_dims = Dims {
                    n: out_channels as i32,
                    h: kernel_h as i32,
                    w: kernel_w as i32,
                    c: (in_channels / groups) as i32,
                };
                // Without a bias (a null pointer), CMSIS-NN's grouped path advances the null
                // pointer by each group's channels and then reads through it
                // (arm_convolve_s8.c, `bias_data_ptr += output_ch_per_group`): only ungrouped
                // convolutions are tried without bias.
                let bias = (groups > 1 || below(&mut rng, 4) != 0).then_some(bias.as_slice());
                if bias.is_none() {
                    // CMSIS-NN without bias: ours with a zero bias.
                    fold_bias(&w, &[], p.x_zero_point, 0, &mut folded);
                    let q = ChannelQuant {
                        bias: &folded,
                        multipliers: &multipliers,
                        shifts: &shifts,
                        rounding: RequantRounding::Double,
                    };
                    let mut scratch = vec![0i8; conv2d_scratch_len(&p)];
                    conv2d(&p, &x, &w, &q, &mut ours, &mut scratch);
                }
                cmsis::convolve_s8(
                    &params,
                    &multipliers,
                    &shifts,
                    input_dims,
                    &x,
                    filter_dims,
                    &w,
                    bias,
                    output_dims,
                    &mut theirs,
                );
            }
            assert_eq!(ours, theirs, "case {case}: {p:?}");
        }
    }

    #[test]
    fn convolution_matches_arm_convolve_s8() {
        check_conv(102, false, 300);
    }

    #[test]
    fn depthwise_matches_arm_depthwise_conv_s8() {
        check_conv(103, true, 300);
    }

    #[test]
    fn fully_connected_matches_arm_fully_connected_s8() {
        let mut rng = Rng::new(104);
        for case in 0..300 {
            let (batch, k, n) = (1 + below(&mut rng, 3), 1 + below(&mut rng, 90), 1 + below(&mut rng, 24));
            let (zx, zy) = (int(&mut rng, -128, 127), int(&mut rng, -128, 127));
            let act = clamp(&mut rng);
            let x = i8s(&mut rng, batch * k);
            let w = i8s(&mut rng, n * k);
            let bias: Vec<i32> = (0..n).map(|_| int(&mut rng, -40_000, 40_000)).collect();
            let per_channel = below(&mut rng, 2) == 0;
            let requants: Vec<Requant> =
                (0..if per_channel { n } else { 1 }).map(|_| requant(&mut rng, -14, 0)).collect();
            let multipliers: Vec<i32> = requants.iter().map(|r| r.multiplier).collect();
            let shifts: Vec<i32> = requants.iter().map(|r| r.shift).collect();
            let mut folded = vec![0i32; n];
            fold_bias(&w, &bias, zx, 0, &mut folded);
            let p = FullyConnected {
                batch,
                in_features: k,
                out_features: n,
                w_zero_point: 0,
                y_zero_point: zy,
                act_min: act.min,
                act_max: act.max,
            };
            let mut ours = vec![0i8; batch * n];
            fully_connected(
                &p,
                &x,
                &w,
                &ChannelQuant {
                    bias: &folded,
                    multipliers: &multipliers,
                    shifts: &shifts,
                    rounding: RequantRounding::Double,
                },
                &mut ours,
            );
            let mut theirs = vec![0i8; batch * n];
            let params = FcParams { input_offset: -zx, filter_offset: 0, output_offset: zy, activation: act };
            cmsis::fully_connected_s8(&params, &multipliers, &shifts, batch, &x, &w, &bias, &mut theirs);
            assert_eq!(ours, theirs, "case {case} (per channel {per_channel}): {p:?}");
        }
    }

    #[test]
    fn matmul_matches_arm_batch_matmul_s8() {
        let mut rng = Rng::new(105);
        for case in 0..300 {
            let (batch, m, n, k) =
                (1 + below(&mut rng, 3), 1 + below(&mut rng, 5), 1 + below(&mut rng, 9), 1 + below(&mut rng, 40));
            let (za, zb, zc) = (int(&mut rng, -128, 127), int(&mut rng, -128, 127), int(&mut rng, -128, 127));
            let r = requant(&mut rng, -16, 0);
            let (a, b) = (i8s(&mut rng, batch * m * k), i8s(&mut rng, batch * n * k));
            // CMSIS-NN takes B transposed ([n, k] per batch): column stride k in ours.
            let p = MatMul {
                batch: [batch, 1, 1, 1],
                a_batch_strides: [m * k, 0, 0, 0],
                b_batch_strides: [n * k, 0, 0, 0],
                c_batch_strides: [m * n, 0, 0, 0],
                m,
                n,
                k,
                a_row_stride: k,
                a_col_stride: 1,
                b_row_stride: 1,
                b_col_stride: k,
                c_row_stride: n,
                a_zero_point: za,
                b_zero_point: zb,
                c_zero_point: zc,
                requant: r,
                act_min: -128,
                act_max: 127,
            };
            let mut ours = vec![0i8; batch * m * n];
            matmul(&p, &a, &b, &mut ours);
            let mut theirs = vec![0i8; ours.len()];
            let params = FcParams {
                input_offset: -za,
                filter_offset: -zb,
                output_offset: zc,
                activation: Activation { min: -128, max: 127 },
            };
            let quant = PerTensorQuant { multiplier: r.multiplier, shift: r.shift };
            cmsis::batch_matmul_s8(&params, quant, (batch, m, n, k), &a, &b, &mut theirs);
            assert_eq!(ours, theirs, "case {case}: {p:?}");
        }
    }

    #[test]
    fn add_and_mul_match_arm_elementwise_s8() {
        let mut rng = Rng::new(106);
        for case in 0..300 {
            let len = 1 + below(&mut rng, 100);
            let (a, b) = (i8s(&mut rng, len), i8s(&mut rng, len));
            let scale = |rng: &mut Rng| 0.001 + rng.uniform(0.0, 0.2);
            let (sa, sb, sy) = (scale(&mut rng), scale(&mut rng), scale(&mut rng));
            let (za, zb, zy) = (int(&mut rng, -128, 127), int(&mut rng, -128, 127), int(&mut rng, -128, 127));
            let act = clamp(&mut rng);
            let shape = Broadcast { out_shape: &[len], a_strides: &[1], b_strides: &[1] };

            let s = add_scaling(sa, sb, sy);
            let p = sramfit_runtime_min::quant::Add {
                a_zero_point: za,
                b_zero_point: zb,
                y_zero_point: zy,
                scaling: s,
                act_min: act.min,
                act_max: act.max,
            };
            let mut ours = vec![0i8; len];
            add(&p, &shape, &a, &b, &mut ours);
            let mut theirs = vec![0i8; len];
            let input = |z: i32, r: Requant| (-z, r.multiplier, r.shift);
            let output = (zy, s.output.multiplier, s.output.shift);
            cmsis::elementwise_add_s8(&a, &b, input(za, s.a), input(zb, s.b), s.left_shift, output, act, &mut theirs);
            assert_eq!(ours, theirs, "add case {case}");

            let r = mul_requant(sa, sb, sy);
            let p = Mul {
                a_zero_point: za,
                b_zero_point: zb,
                y_zero_point: zy,
                requant: r,
                act_min: act.min,
                act_max: act.max,
            };
            mul(&p, &shape, &a, &b, &mut ours);
            let quant = PerTensorQuant { multiplier: r.multiplier, shift: r.shift };
            cmsis::elementwise_mul_s8(&a, &b, (-za, -zb), zy, quant, act, &mut theirs);
            assert_eq!(ours, theirs, "mul case {case}");
        }
    }

    #[test]
    fn pools_match_arm_avgpool_s8_and_max_pool_s8() {
        let mut rng = Rng::new(107);
        for case in 0..400 {
            let (kernel_h, kernel_w) = (1 + below(&mut rng, 4), 1 + below(&mut rng, 4));
            let (stride_h, stride_w) = (1 + below(&mut rng, 3), 1 + below(&mut rng, 3));
            let (pad_top, pad_left) = (below(&mut rng, kernel_h), below(&mut rng, kernel_w));
            let (in_h, in_w) = (kernel_h + below(&mut rng, 6), kernel_w + below(&mut rng, 6));
            let channels = 1 + below(&mut rng, 20);
            let out_h = (in_h + 2 * pad_top - kernel_h) / stride_h + 1;
            let out_w = (in_w + 2 * pad_left - kernel_w) / stride_w + 1;
            let act = clamp(&mut rng);
            let p = Pool2d {
                batch: 1,
                channels,
                in_h,
                in_w,
                out_h,
                out_w,
                kernel_h,
                kernel_w,
                stride_h,
                stride_w,
                dilation_h: 1,
                dilation_w: 1,
                pad_top,
                pad_left,
                pad_bottom: pad_top,
                pad_right: pad_left,
                count_include_pad: false,
                x_strides: ImageStrides::nhwc(channels, in_h, in_w),
                y_strides: ImageStrides::nhwc(channels, out_h, out_w),
                zero_point: 0,
                act_min: act.min,
                act_max: act.max,
            };
            let x = i8s(&mut rng, in_h * in_w * channels);
            let params = PoolParams {
                stride: Tile { w: stride_w as i32, h: stride_h as i32 },
                padding: Tile { w: pad_left as i32, h: pad_top as i32 },
                activation: act,
            };
            let input_dims = Dims { n: 1, h: in_h as i32, w: in_w as i32, c: channels as i32 };
            let output_dims = Dims { n: 1, h: out_h as i32, w: out_w as i32, c: channels as i32 };
            let window = Tile { w: kernel_w as i32, h: kernel_h as i32 };
            for average in [true, false] {
                let mut ours = vec![0i8; out_h * out_w * channels];
                if average {
                    avg_pool2d(&p, &x, &mut ours);
                } else {
                    max_pool2d(&p, &x, &mut ours);
                }
                let mut theirs = vec![0i8; ours.len()];
                cmsis::pool_s8(average, &params, input_dims, &x, window, output_dims, &mut theirs);
                assert_eq!(ours, theirs, "case {case} (average {average}): {p:?}");
            }
        }
    }

    #[test]
    fn softmax_matches_arm_softmax_s8_and_u8() {
        let mut rng = Rng::new(108);
        for case in 0..400 {
            let (rows, len) = (1 + below(&mut rng, 4), 1 + below(&mut rng, 60));
            let (beta, input_scale) = (rng.uniform(0.5, 2.0), 0.005 + rng.uniform(0.0, 0.5));
            let s = softmax_scaling(beta, input_scale);
            let p = Softmax { outer: rows, axis: len, inner: 1, scaling: s, output: softmax_output(1.0 / 256.0) };
            let x = i8s(&mut rng, rows * len);
            let mut ours = vec![0i8; x.len()];
            softmax(&p, &x, &mut ours);
            let mut theirs = vec![0i8; x.len()];
            cmsis::softmax_s8(&x, rows, s.input_multiplier, s.input_left_shift, s.diff_min, &mut theirs);
            assert_eq!(ours, theirs, "s8 case {case}: {p:?}");

            let xu: Vec<u8> = x.iter().map(|&v| v as u8).collect();
            let mut ours = vec![0u8; x.len()];
            softmax(&p, &xu, &mut ours);
            let mut theirs = vec![0u8; x.len()];
            cmsis::softmax_u8(&xu, rows, s.input_multiplier, s.input_left_shift, s.diff_min, &mut theirs);
            assert_eq!(ours, theirs, "u8 case {case}: {p:?}");
        }
    }
}
