//! Quantized fully connected layers (a constant weight matrix: TFLite FULLY_CONNECTED, ONNX
//! QGemm / QDQ Gemm and MatMul with a constant operand) and matrix products of two activations
//! (TFLite BATCH_MATMUL, ONNX QLinearMatMul / QDQ MatMul).

use super::conv::dot;
use super::{ChannelQuant, QuantElem, Requant};

/// Parameters of [`fully_connected`]: `y[b][o] = out(bias[o] + sum_k (w[o][k] - w_zero_point) *
/// x[b][k])` with `x` `[batch, in_features]`, `w` `[out_features, in_features]` and `y`
/// `[batch, out_features]`, all contiguous, `bias` folded with the input zero point
/// ([`fold_bias`](super::fold_bias)) and `out` the requantization of [`ChannelQuant`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FullyConnected {
    /// Rows of `x` and `y`.
    pub batch: usize,
    /// Columns of `x` (the accumulation depth).
    pub in_features: usize,
    /// Columns of `y`.
    pub out_features: usize,
    /// Weight zero point (0 for TFLite; the general path otherwise).
    pub w_zero_point: i32,
    /// Output zero point.
    pub y_zero_point: i32,
    /// Lower output clamp.
    pub act_min: i32,
    /// Upper output clamp.
    pub act_max: i32,
}

/// Quantized fully connected layer: see [`FullyConnected`]. `q` has `out_features` folded biases
/// and 1 (per tensor) or `out_features` (per channel) multipliers. On Arm cores with the DSP
/// extension it runs on its kernels (same bits).
// On Arm DSP targets each call site gets its own copy with the layer's shape as constants.
#[cfg_attr(arm_dsp, inline(always))]
pub fn fully_connected<T: QuantElem>(p: &FullyConnected, x: &[T], w: &[i8], q: &ChannelQuant, y: &mut [T]) {
    let (k, n) = (p.in_features, p.out_features);
    assert_eq!(w.len(), n * k, "fully_connected: weight length");
    q.check(n);
    if crate::arch::quant_fully_connected(p, x, w, q, y) {
        return;
    }
    for (xr, yr) in x.chunks_exact(k).zip(y.chunks_exact_mut(n)).take(p.batch) {
        for (o, (yv, wr)) in yr.iter_mut().zip(w.chunks_exact(k)).enumerate() {
            let acc = q.bias[o].wrapping_add(dot(wr, xr, p.w_zero_point));
            *yv = q.output(o, acc, p.y_zero_point, p.act_min, p.act_max);
        }
    }
}

/// Batched, strided product of two quantized activations, [`matmul`]:
/// `C[i, j] = clamp(requant.apply(sum_k (A[i, k] - a_zero_point) * (B[k, j] - b_zero_point)) +
/// c_zero_point)`. Addressing as the `f32` [`MatMul`](crate::MatMul): element `(i, k)` of `A` is
/// `a[sum(b_t * a_batch_strides[t]) + i * a_row_stride + k * a_col_stride]`, likewise `B`; `C` has
/// column stride 1. Transposes are swapped strides, broadcast batch axes stride 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatMul {
    /// Lengths of the (up to 4) batch axes; unused axes are 1.
    pub batch: [usize; 4],
    /// Stride of `a` along each batch axis (0 = broadcast).
    pub a_batch_strides: [usize; 4],
    /// Stride of `b` along each batch axis (0 = broadcast).
    pub b_batch_strides: [usize; 4],
    /// Stride of `c` along each batch axis.
    pub c_batch_strides: [usize; 4],
    /// Rows of `A` and `C`.
    pub m: usize,
    /// Columns of `B` and `C`.
    pub n: usize,
    /// Columns of `A` = rows of `B`.
    pub k: usize,
    /// Stride between consecutive rows of `A`.
    pub a_row_stride: usize,
    /// Stride between consecutive columns of `A`.
    pub a_col_stride: usize,
    /// Stride between consecutive rows of `B`.
    pub b_row_stride: usize,
    /// Stride between consecutive columns of `B`.
    pub b_col_stride: usize,
    /// Stride between consecutive rows of `C`.
    pub c_row_stride: usize,
    /// Zero point of `A`.
    pub a_zero_point: i32,
    /// Zero point of `B`.
    pub b_zero_point: i32,
    /// Zero point of `C`.
    pub c_zero_point: i32,
    /// Output requantization (`a_scale * b_scale / c_scale`:
    /// [`fully_connected_requant`](super::fully_connected_requant) for TFLite BATCH_MATMUL).
    pub requant: Requant,
    /// Lower output clamp.
    pub act_min: i32,
    /// Upper output clamp.
    pub act_max: i32,
}

/// The result types of [`matmul`]: the 8-bit activations (the accumulator requantized, plus the
/// zero point, clamped) and `i32` (ONNX MatMulInteger: the accumulator itself; `requant`,
/// `c_zero_point` and the clamp are not read).
pub trait MatMulOut: Copy {
    /// The result of the accumulator `acc` under `p`.
    fn from_acc(acc: i32, p: &MatMul) -> Self;
}

impl<T: QuantElem> MatMulOut for T {
    #[inline(always)]
    fn from_acc(acc: i32, p: &MatMul) -> T {
        let v = p.requant.apply(acc).wrapping_add(p.c_zero_point);
        T::saturate(v.max(p.act_min).min(p.act_max))
    }
}

impl MatMulOut for i32 {
    #[inline(always)]
    fn from_acc(acc: i32, _: &MatMul) -> i32 {
        acc
    }
}

/// Quantized batched matrix product: see [`MatMul`]. The operand and result element types are
/// independent (ONNX QLinearMatMul allows uint8 `A` with int8 `B`; MatMulInteger writes `i32`).
pub fn matmul<A: QuantElem, B: QuantElem, C: MatMulOut>(p: &MatMul, a: &[A], b: &[B], c: &mut [C]) {
    for b0 in 0..p.batch[0] {
        for b1 in 0..p.batch[1] {
            for b2 in 0..p.batch[2] {
                for b3 in 0..p.batch[3] {
                    let at = [b0, b1, b2, b3];
                    let offset = |strides: [usize; 4]| at.iter().zip(strides).map(|(&i, s)| i * s).sum::<usize>();
                    let (ao, bo, co) =
                        (offset(p.a_batch_strides), offset(p.b_batch_strides), offset(p.c_batch_strides));
                    for i in 0..p.m {
                        for j in 0..p.n {
                            let mut acc = 0i32;
                            for t in 0..p.k {
                                let av = a[ao + i * p.a_row_stride + t * p.a_col_stride].to_i32() - p.a_zero_point;
                                let bv = b[bo + t * p.b_row_stride + j * p.b_col_stride].to_i32() - p.b_zero_point;
                                acc = acc.wrapping_add(av * bv);
                            }
                            c[co + i * p.c_row_stride + j] = C::from_acc(acc, p);
                        }
                    }
                }
            }
        }
    }
}
