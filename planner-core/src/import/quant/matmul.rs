//! Matrix products: by a constant (QDQ Gemm / MatMul, QGemm, QLinearMatMul by weights) as a fully
//! connected layer, of two activations as a batched quantized matmul.

use sramfit_runtime_min::quant as rtq;

use super::conv::pointwise;
use super::weights::{bias, integer_weights, qweights};
use super::{Call, Operand, QConst, Walk};
use crate::ir::{Op, TensorId, TensorKind};
use crate::ops::qconv::QConv;
use crate::ops::qfully_connected::QFullyConnected;
use crate::ops::qmatmul::QMatMul;
use crate::ops::qparams::Convention;
use crate::tensor::DType;

/// Gemm `alpha * A B' + beta * C` (`A` not transposed; `B` transposed or not; `C` per output
/// column): a fully connected layer.
pub(super) fn gemm(w: &mut Walk<'_>, c: &Call<'_>) -> Result<Vec<TensorId>, String> {
    let a = c.attrs();
    if a.int("transA", 0) != 0 {
        return Err("Gemm with transA = 1 (a transposed activation) is not supported".into());
    }
    let Some(Operand::Weights(b)) = c.operands.get(1) else {
        return Err("Gemm of two activations (B must be quantized constants)".into());
    };
    let (alpha, beta) = (a.float("alpha", 1.0), a.float("beta", 1.0));
    fully_connected(w, c, b, a.int("transB", 0) != 0, alpha, beta)
}

/// MatMul: by quantized constants, a fully connected layer over every row of `A`; of two
/// activations (or a constant per tensor), a batched matmul.
pub(super) fn matmul(w: &mut Walk<'_>, c: &Call<'_>) -> Result<Vec<TensorId>, String> {
    if let (Some(Operand::Act(..)), Some(Operand::Weights(b))) = (c.operands.first(), c.operands.get(1)) {
        if b.values.shape.len() == 2 {
            return fully_connected(w, c, b, false, 1.0, 1.0);
        }
    }
    let ((a, aq), (b, bq)) = (w.operand_tensor(c, 0)?, w.operand_tensor(c, 1)?);
    let out = c.out();
    let (op, shape) = QMatMul::new((&w.shape(a), &w.shape(b)), (aq, bq, out.q), out.clamp, Convention::Onnx)?;
    let y = w.output(c, 0, shape);
    w.push(c.node, Op::QMatMul(op), vec![a, b], y);
    Ok(vec![y])
}

/// MatMulInteger: the `i32` accumulators. `A` (`[.., K]`) by a constant matrix `[K, N]`, as a
/// 1x1 convolution with one image per row of `A`; otherwise a batched product of two tensors.
pub(super) fn matmul_integer(w: &mut Walk<'_>, c: &Call<'_>) -> Result<Vec<TensorId>, String> {
    let (x, xq) = c.act(0)?;
    let xs = w.shape(x);
    let b = match c.operands.get(1) {
        Some(Operand::Weights(b)) if b.values.shape.len() == 2 => b,
        Some(Operand::Weights(b)) if b.zero_points.len() > 1 => {
            return Err(format!("{} zero points of a constant of {:?}", b.zero_points.len(), b.values.shape));
        }
        _ => {
            let (b, bq) = w.operand_tensor(c, 1)?;
            let (op, shape) = QMatMul::accumulator(&xs, &w.shape(b), xq, bq)?;
            let name = c.node.output.first().cloned().unwrap_or_default();
            let y = w.graph.add_tensor(name, shape, DType::I32, TensorKind::Activation);
            w.push(c.node, Op::QMatMul(op), vec![x, b], y);
            return Ok(vec![y]);
        }
    };
    let ([rows @ .., k], [kb, n]) = (&xs[..], &b.values.shape[..]) else {
        return Err(format!("MatMulInteger of {xs:?} by {:?}", b.values.shape));
    };
    if k != kb {
        return Err(format!("an input of {xs:?} for {kb} x {n} weights"));
    }
    let (k, n) = (*k, *n);
    let mut qw = integer_weights(b, 1, n)?;
    let mut nk = vec![0i8; qw.values.len()];
    rtq::pack_fully_connected_weights(&qw.values, k, n, &mut nk);
    qw.values = nk;
    let geometry = pointwise(rows.iter().product(), k, n);
    let (op, consts) = QConv::accumulator(geometry, xq.zero_point, xq.dtype, &qw)?;
    let out_shape = [rows, &[n]].concat();
    Ok(vec![w.push_accumulator(c, Op::QConv(op), x, consts, out_shape)])
}

/// `A` (`[.., K]`) times the constant `b` (`[K, N]`, or `[N, K]` when `transposed`) plus the bias
/// operand 2: a fully connected layer, weights stored `[N, K]`.
fn fully_connected(
    w: &mut Walk<'_>,
    c: &Call<'_>,
    b: &QConst,
    transposed: bool,
    alpha: f32,
    beta: f32,
) -> Result<Vec<TensorId>, String> {
    let (x, xq) = c.act(0)?;
    let xs = w.shape(x);
    let [rows, cols] = b.values.shape[..] else { return Err(format!("weights of shape {:?}", b.values.shape)) };
    let (k, n, out_axis) = if transposed { (cols, rows, 0) } else { (rows, cols, 1) };
    if xs.last() != Some(&k) {
        return Err(format!("an input of {xs:?} for {k} x {n} weights"));
    }
    let mut qw = qweights(b, out_axis, n)?;
    if !transposed {
        let mut nk = vec![0i8; qw.values.len()];
        rtq::pack_fully_connected_weights(&qw.values, k, n, &mut nk);
        qw.values = nk;
    }
    qw.scales.iter_mut().for_each(|s| *s *= alpha);
    let bias = bias(c.operands.get(2), xq.scale, &qw, n, beta)?;
    let out = c.out();
    let batch = xs[..xs.len() - 1].iter().product();
    let geometry = rtq::FullyConnected {
        batch,
        in_features: k,
        out_features: n,
        w_zero_point: 0,
        y_zero_point: 0,
        act_min: 0,
        act_max: 0,
    };
    let (op, consts) = QFullyConnected::new(geometry, (xq, &qw, out.q), &bias, out.clamp, Convention::Onnx)?;
    let out_shape = [&xs[..xs.len() - 1], &[n]].concat();
    Ok(vec![w.push_with_constants(c, Op::QFullyConnected(op), x, consts, out_shape)])
}
