//! Lowering of tract's `EinSum` (what MatMul, Gemm and 1x1 convolutions become after decluttering)
//! to one batched strided GEMM call.
//!
//! Every axis is classified by where it appears: in both operands and the output (batch), in A and
//! the output (m), in B and the output (n), or in both operands only (k, summed). Axes of extent 1
//! are dropped. Axes of one class that are laid out contiguously in every tensor that has them merge
//! into one; leftover m or n axes become batch axes. The output's innermost axis must end up in the
//! n class (the kernel writes rows with unit column stride), so A and B are swapped when it is an m
//! axis: C = A·B and Cᵀ = Bᵀ·Aᵀ are the same bytes.

use sramfit_runtime_min::{Activation, MatMul};

use crate::tensor::strides_of;

/// One einsum axis, with its extent and its element stride in A, B and C (`None` when absent).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EinAxis {
    /// Extent.
    pub len: usize,
    /// Stride in operand A.
    pub a: Option<usize>,
    /// Stride in operand B.
    pub b: Option<usize>,
    /// Stride in the output.
    pub c: Option<usize>,
}

/// Builds the axes from the positions tract reports (`positions[i] = (in A, in B, in C)`).
///
/// An axis's extent is the output's when the output has it (else the larger operand extent): an
/// operand whose extent is 1 on a longer axis is broadcast along it and gets stride 0 there.
/// Positions out of range count as absent.
pub fn axes_from_positions(
    positions: &[(Option<usize>, Option<usize>, Option<usize>)],
    a_shape: &[usize],
    b_shape: &[usize],
    c_shape: &[usize],
) -> Vec<EinAxis> {
    let (sa, sb, sc) = (strides_of(a_shape), strides_of(b_shape), strides_of(c_shape));
    let at =
        |p: Option<usize>, shape: &[usize], strides: &[usize]| p.and_then(|p| Some((*shape.get(p)?, *strides.get(p)?)));
    positions
        .iter()
        .map(|&(pa, pb, pc)| {
            let (a, b, c) = (at(pa, a_shape, &sa), at(pb, b_shape, &sb), at(pc, c_shape, &sc));
            let len = c.or(a.max(b)).map_or(1, |x| x.0);
            let stride = |x: Option<(usize, usize)>| x.map(|(n, s)| if n == 1 && len != 1 { 0 } else { s });
            EinAxis { len, a: stride(a), b: stride(b), c: stride(c) }
        })
        .collect()
}

/// Permutations (axis `i` of the copy is axis `perm[i]` of the operand) that put A in the layout
/// `[batch.., m.., k..]` and B in `[batch.., k.., n..]`, keeping the output's order within a class
/// and the same order of summed axes in both, so every class's axes nest.
pub fn canonical_permutations(
    positions: &[(Option<usize>, Option<usize>, Option<usize>)],
    rank_a: usize,
    rank_b: usize,
) -> (Vec<usize>, Vec<usize>) {
    // Sort key: class rank, then output position (summed axes: their order in the axis list).
    let mut a: Vec<(u8, usize, usize)> = Vec::new();
    let mut b: Vec<(u8, usize, usize)> = Vec::new();
    for (i, &(pa, pb, pc)) in positions.iter().enumerate() {
        let order = pc.unwrap_or(i);
        match (pa, pb, pc) {
            (Some(x), Some(y), Some(_)) => {
                a.push((0, order, x));
                b.push((0, order, y));
            }
            (Some(x), None, _) => a.push((1, order, x)),
            (None, Some(y), _) => b.push((3, order, y)),
            (Some(x), Some(y), None) => {
                a.push((2, order, x));
                b.push((1, order, y));
            }
            (None, None, _) => {}
        }
    }
    a.sort_unstable();
    b.sort_unstable();
    let (pa, pb): (Vec<usize>, Vec<usize>) = (a.iter().map(|x| x.2).collect(), b.iter().map(|x| x.2).collect());
    debug_assert_eq!((pa.len(), pb.len()), (rank_a, rank_b));
    (pa, pb)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Batch,
    M,
    N,
    K,
}

/// Merges axes of one class whose strides nest (outer stride = inner stride × inner extent) in every
/// tensor they appear in. Returns the merged axes, outermost first by C (or A) stride.
fn merge(mut axes: Vec<EinAxis>) -> Vec<EinAxis> {
    let key = |x: &EinAxis| x.c.or(x.a).or(x.b).unwrap_or(0);
    axes.sort_by_key(|x| std::cmp::Reverse(key(x)));
    let mut out: Vec<EinAxis> = Vec::new();
    for x in axes {
        if let Some(last) = out.last_mut() {
            let nests = |outer: Option<usize>, inner: Option<usize>| match (outer, inner) {
                (Some(o), Some(i)) => o == i * x.len,
                (None, None) => true,
                _ => false,
            };
            if nests(last.a, x.a) && nests(last.b, x.b) && nests(last.c, x.c) {
                *last = EinAxis { len: last.len * x.len, a: x.a, b: x.b, c: x.c };
                continue;
            }
        }
        out.push(x);
    }
    out
}

/// Lowers the axes to a [`MatMul`] (with `swapped` true when A and B trade places), or says why not.
pub fn lower(axes: &[EinAxis]) -> Result<(MatMul, bool), String> {
    let mut groups: [Vec<EinAxis>; 4] = Default::default();
    for x in axes.iter().filter(|x| x.len != 1) {
        let class = match (x.a.is_some(), x.b.is_some(), x.c.is_some()) {
            (true, true, true) => Class::Batch,
            (true, false, true) => Class::M,
            (false, true, true) => Class::N,
            (true, true, false) => Class::K,
            _ => return Err("an axis is summed within one operand or broadcast in the output".into()),
        };
        groups[class as usize].push(*x);
    }
    let [batch, m, n, k] = groups.map(merge);
    // The output's unit-stride axis must be an n axis; swap roles if it is an m axis.
    let swapped = m.iter().any(|x| x.c == Some(1));
    let (m, n) = if swapped { (n, m) } else { (m, n) };
    let flip = |x: EinAxis| if swapped { EinAxis { a: x.b, b: x.a, ..x } } else { x };
    let (m, n, k): (Vec<_>, Vec<_>, Vec<_>) =
        (m.into_iter().map(flip).collect(), n.into_iter().map(flip).collect(), k.into_iter().map(flip).collect());
    let mut batch: Vec<EinAxis> = batch.into_iter().map(flip).collect();
    if k.len() > 1 {
        return Err("the summed axes are not contiguous in both operands".into());
    }
    let inner_n = n.iter().position(|x| x.c == Some(1));
    let (n_axis, extra_n) = match inner_n {
        Some(i) => (Some(n[i]), n.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, x)| *x).collect()),
        None if n.is_empty() && m.iter().chain(&batch).all(|x| x.c != Some(1)) => (None, Vec::new()),
        None => return Err("the output's innermost axis is a batch axis".into()),
    };
    // The m axis is the one with the smallest output stride; other m axes become batch axes.
    let mut m_sorted = m.clone();
    m_sorted.sort_by_key(|x| x.c);
    let (m_axis, extra_m) = match m_sorted.split_first() {
        Some((first, rest)) => (Some(*first), rest.to_vec()),
        None => (None, Vec::new()),
    };
    batch.extend(extra_m);
    batch.extend::<Vec<EinAxis>>(extra_n);
    if batch.len() > 4 {
        return Err(format!("{} batch axes (at most 4 are supported)", batch.len()));
    }
    let mut p = MatMul {
        batch: [1; 4],
        a_batch_strides: [0; 4],
        b_batch_strides: [0; 4],
        c_batch_strides: [0; 4],
        m: 1,
        n: 1,
        k: 1,
        a_row_stride: 0,
        a_col_stride: 0,
        b_row_stride: 0,
        b_col_stride: 0,
        c_row_stride: 0,
        alpha: 1.0,
        act: Activation::None,
    };
    for (i, x) in batch.iter().enumerate() {
        p.batch[i] = x.len;
        p.a_batch_strides[i] = x.a.unwrap_or(0);
        p.b_batch_strides[i] = x.b.unwrap_or(0);
        p.c_batch_strides[i] = x.c.unwrap_or(0);
    }
    if let Some(x) = m_axis {
        p.m = x.len;
        p.a_row_stride = x.a.unwrap_or(0);
        p.c_row_stride = x.c.unwrap_or(0);
    }
    if let Some(x) = n_axis {
        p.n = x.len;
        p.b_col_stride = x.b.unwrap_or(0);
    }
    if let Some(x) = k.first() {
        p.k = x.len;
        p.a_col_stride = x.a.unwrap_or(0);
        p.b_row_stride = x.b.unwrap_or(0);
    }
    Ok((p, swapped))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ax(len: usize, a: Option<usize>, b: Option<usize>, c: Option<usize>) -> EinAxis {
        EinAxis { len, a, b, c }
    }

    #[test]
    fn plain_matmul_mk_kn() {
        // A [3,8], B [8,5], C [3,5]
        let axes = [ax(3, Some(8), None, Some(5)), ax(8, Some(1), Some(5), None), ax(5, None, Some(1), Some(1))];
        let (p, swapped) = lower(&axes).unwrap();
        assert!(!swapped);
        assert_eq!((p.m, p.n, p.k), (3, 5, 8));
        assert_eq!((p.a_row_stride, p.a_col_stride, p.b_row_stride, p.b_col_stride, p.c_row_stride), (8, 1, 5, 1, 5));
    }

    #[test]
    fn pointwise_conv_is_swapped() {
        // NIHW,OI->NOHW with N=1, I=4, H=W=3, O=2: x [1,4,3,3], w [2,4], y [1,2,3,3]
        let axes = [
            ax(1, Some(36), None, Some(18)),
            ax(4, Some(9), Some(1), None),
            ax(3, Some(3), None, Some(3)),
            ax(3, Some(1), None, Some(1)),
            ax(2, None, Some(4), Some(9)),
        ];
        let (p, swapped) = lower(&axes).unwrap();
        assert!(swapped);
        // C (2 x 9) = W (2 x 4) · X (4 x 9)
        assert_eq!((p.m, p.n, p.k), (2, 9, 4));
        assert_eq!((p.a_row_stride, p.a_col_stride), (4, 1));
        assert_eq!((p.b_row_stride, p.b_col_stride, p.c_row_stride), (9, 1, 9));
    }

    #[test]
    fn batched_with_broadcast() {
        // [2,5,8] x [8,5] -> [2,5,5]: batch axis only in A and C is an m axis too.
        let axes = [
            ax(2, Some(40), None, Some(25)),
            ax(5, Some(8), None, Some(5)),
            ax(8, Some(1), Some(5), None),
            ax(5, None, Some(1), Some(1)),
        ];
        let (p, _) = lower(&axes).unwrap();
        // The two m axes nest (40 = 8*5 in A, 25 = 5*5 in C): merged into m = 10.
        assert_eq!((p.m, p.n, p.k), (10, 5, 8));
    }

    #[test]
    fn broadcast_batch_axis_takes_the_output_extent() {
        // A [1,3,4] x B [2,4,5] -> C [2,3,5] (as in ONNX's test_matmul_bcast): the batch axis is
        // broadcast in A (extent 1), so its extent comes from C and A's stride on it is 0.
        let positions =
            [(Some(0), Some(0), Some(0)), (Some(1), None, Some(1)), (Some(2), Some(1), None), (None, Some(2), Some(2))];
        let axes = axes_from_positions(&positions, &[1, 3, 4], &[2, 4, 5], &[2, 3, 5]);
        assert_eq!(axes[0], ax(2, Some(0), Some(20), Some(15)));
        let (p, swapped) = lower(&axes).unwrap();
        assert!(!swapped);
        assert_eq!((p.batch[0], p.a_batch_strides[0], p.b_batch_strides[0], p.c_batch_strides[0]), (2, 0, 20, 15));
        assert_eq!((p.m, p.n, p.k), (3, 5, 4));
        // And the other way round: B broadcast on a batch axis A has.
        let axes = axes_from_positions(&positions, &[2, 3, 4], &[1, 4, 5], &[2, 3, 5]);
        assert_eq!(axes[0], ax(2, Some(12), Some(0), Some(15)));
    }

    #[test]
    fn rejects_self_summed_axis() {
        let axes = [ax(3, Some(1), None, None)];
        assert!(lower(&axes).is_err());
    }
}
