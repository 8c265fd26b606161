//! Broadcast select on a fused comparison (ONNX Where with a Less / Greater /
//! Equal condition; what tract expands Elu, Selu and PRelu into).

use crate::util::{contiguous_strides, Layout};

/// The comparison of [`select_cmp`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    /// `a < b`.
    Lt,
    /// `a <= b`.
    Le,
    /// `a > b`.
    Gt,
    /// `a >= b`.
    Ge,
    /// `a == b`.
    Eq,
    /// `a != b`.
    Ne,
}

impl Cmp {
    #[inline(always)]
    fn eval(self, a: f32, b: f32) -> bool {
        match self {
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
            Cmp::Eq => a == b,
            Cmp::Ne => a != b,
        }
    }
}

/// Broadcasting description of [`select_cmp`], like [`crate::Broadcast`]
/// with four operands: output element `i` (row-major over `out_shape`, rank
/// at most `MAX_RANK`) reads every operand at `sum(i_d * strides[d])`
/// (0 on broadcast axes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Select<'a> {
    /// The comparison.
    pub cmp: Cmp,
    /// Shape of the output.
    pub out_shape: &'a [usize],
    /// Strides of the comparison's left operand.
    pub a_strides: &'a [usize],
    /// Strides of the comparison's right operand.
    pub b_strides: &'a [usize],
    /// Strides of the value taken where the comparison holds.
    pub t_strides: &'a [usize],
    /// Strides of the value taken where it does not.
    pub f_strides: &'a [usize],
}

/// `y = if cmp(a, b) { t } else { f }` elementwise with broadcasting (see
/// [`Select`]). A comparison with a NaN operand is false (except `Ne`).
pub fn select_cmp(p: &Select, a: &[f32], b: &[f32], t: &[f32], f: &[f32], y: &mut [f32]) {
    let ys = contiguous_strides(p.out_shape);
    let Some(l) = Layout::<5>::new(p.out_shape, |s, d| match s {
        0 => ys[d],
        1 => p.a_strides[d] as isize,
        2 => p.b_strides[d] as isize,
        3 => p.t_strides[d] as isize,
        _ => p.f_strides[d] as isize,
    }) else {
        return;
    };
    let (n, st) = l.inner();
    let [_, sa, sb, stt, sf] = st.map(|s| s as usize);
    let cmp = p.cmp;
    l.for_each_outer([0; 5], |[yo, ao, bo, to, fo]| {
        let (ao, bo, to, fo) = (ao as usize, bo as usize, to as usize, fo as usize);
        let yr = &mut y[yo as usize..][..n];
        for (i, yv) in yr.iter_mut().enumerate() {
            *yv = if cmp.eval(a[ao + i * sa], b[bo + i * sb]) { t[to + i * stt] } else { f[fo + i * sf] };
        }
    });
}
