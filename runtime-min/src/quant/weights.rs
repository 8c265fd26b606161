//! Build-time preparation of quantized weights: layouts the kernels read, uint8 weights as int8,
//! and the input zero point folded into the bias.

/// Converts a convolution's ONNX weights, OIHW (`[out_channels, group_in_channels, kernel_h,
/// kernel_w]`), into the OHWI layout [`conv2d`](super::conv2d) reads (TFLite's CONV_2D layout:
/// the `kernel_h * kernel_w * group_in_channels` weights of one output channel contiguous, in
/// `(ky, kx, c)` order).
pub fn pack_conv_weights(
    oihw: &[i8],
    out_channels: usize,
    group_in_channels: usize,
    kernel_h: usize,
    kernel_w: usize,
    ohwi: &mut [i8],
) {
    let taps = group_in_channels * kernel_h * kernel_w;
    assert_eq!(oihw.len(), out_channels * taps, "pack_conv_weights: source length");
    assert_eq!(ohwi.len(), oihw.len(), "pack_conv_weights: destination length");
    for (src, dst) in oihw.chunks_exact(taps).zip(ohwi.chunks_exact_mut(taps)) {
        for (c, plane) in src.chunks_exact(kernel_h * kernel_w).enumerate() {
            for (k, &v) in plane.iter().enumerate() {
                dst[k * group_in_channels + c] = v;
            }
        }
    }
}

/// Converts a depthwise convolution's ONNX weights (`[out_channels, 1, kernel_h, kernel_w]`)
/// into the 1HWO layout [`depthwise_conv2d`](super::depthwise_conv2d) reads (TFLite's
/// DEPTHWISE_CONV_2D layout: weight `(ky, kx, o)` at `(ky * kernel_w + kx) * out_channels + o`).
pub fn pack_depthwise_weights(o1hw: &[i8], out_channels: usize, kernel_h: usize, kernel_w: usize, hwo: &mut [i8]) {
    let taps = kernel_h * kernel_w;
    assert_eq!(o1hw.len(), out_channels * taps, "pack_depthwise_weights: source length");
    assert_eq!(hwo.len(), o1hw.len(), "pack_depthwise_weights: destination length");
    for (o, src) in o1hw.chunks_exact(taps).enumerate() {
        for (t, &v) in src.iter().enumerate() {
            hwo[t * out_channels + o] = v;
        }
    }
}

/// Converts a matrix multiplication's constant right operand `[in_features, out_features]`
/// (ONNX MatMul / Gemm `B` without `transB`) into the `[out_features, in_features]` layout
/// [`fully_connected`](super::fully_connected) reads (TFLite's FULLY_CONNECTED layout; Gemm with
/// `transB = 1` already has it).
pub fn pack_fully_connected_weights(kn: &[i8], in_features: usize, out_features: usize, nk: &mut [i8]) {
    assert_eq!(kn.len(), in_features * out_features, "pack_fully_connected_weights: source length");
    assert_eq!(nk.len(), kn.len(), "pack_fully_connected_weights: destination length");
    for (k, row) in kn.chunks_exact(out_features).enumerate() {
        for (n, &v) in row.iter().enumerate() {
            nk[n * in_features + k] = v;
        }
    }
}

/// Converts uint8 weights with `zero_point` (ONNX QLinearConv / ConvInteger / MatMulInteger with
/// uint8 weights) into int8 weights, returning their zero point: `w - 128` with zero point
/// `zero_point - 128` gives the same `w - zero_point` for every weight.
pub fn weights_u8_to_i8(w: &[u8], zero_point: i32, out: &mut [i8]) -> i32 {
    assert_eq!(w.len(), out.len(), "weights_u8_to_i8: lengths");
    for (o, &v) in out.iter_mut().zip(w) {
        *o = (v ^ 0x80) as i8;
    }
    zero_point - 128
}

/// `bias[o] - x_zero_point * sum(weights of o - w_zero_point)`, wrapping (`bias` empty = no
/// bias): the bias that lets a kernel accumulate raw inputs (padding with the input zero point)
/// instead of `x - x_zero_point`, equal to TFLite's accumulator in `i32` arithmetic.
fn folded(bias: &[i32], o: usize, x_zero_point: i32, w_zero_point: i32, weights: impl Iterator<Item = i8>) -> i32 {
    let sum = weights.fold(0i32, |s, v| s.wrapping_add(v as i32 - w_zero_point));
    bias.get(o).copied().unwrap_or(0).wrapping_sub(x_zero_point.wrapping_mul(sum))
}

/// The folded biases of a convolution ([`conv2d`](super::conv2d), OHWI weights) or a fully
/// connected layer ([`fully_connected`](super::fully_connected), `[out, in]` weights): weights
/// whose `w.len() / out.len()` values per output channel are contiguous. `out[o] = bias[o] -
/// x_zero_point * sum_k (w[o][k] - w_zero_point)`; `bias` is empty (no bias) or has one value per
/// output channel. These go into [`ChannelQuant::bias`](super::ChannelQuant).
pub fn fold_bias(w: &[i8], bias: &[i32], x_zero_point: i32, w_zero_point: i32, out: &mut [i32]) {
    assert!(bias.is_empty() || bias.len() == out.len(), "fold_bias: bias length");
    assert_eq!(w.len() % out.len().max(1), 0, "fold_bias: weight length");
    let taps = w.len() / out.len().max(1);
    for (o, (b, row)) in out.iter_mut().zip(w.chunks_exact(taps.max(1))).enumerate() {
        *b = folded(bias, o, x_zero_point, w_zero_point, row.iter().copied());
    }
}

/// The folded biases of a depthwise convolution ([`depthwise_conv2d`](super::depthwise_conv2d),
/// 1HWO weights: output channel `o`'s weights at stride `out.len()`); otherwise as [`fold_bias`].
pub fn fold_depthwise_bias(w: &[i8], bias: &[i32], x_zero_point: i32, w_zero_point: i32, out: &mut [i32]) {
    assert!(bias.is_empty() || bias.len() == out.len(), "fold_depthwise_bias: bias length");
    assert_eq!(w.len() % out.len().max(1), 0, "fold_depthwise_bias: weight length");
    let channels = out.len();
    for (o, b) in out.iter_mut().enumerate() {
        *b = folded(bias, o, x_zero_point, w_zero_point, w.iter().skip(o).step_by(channels).copied());
    }
}
