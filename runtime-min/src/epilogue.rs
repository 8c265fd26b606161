//! What every GEMM kernel shares, portable or not: the unbatched product [`Gemm`] with offsets
//! already applied, its [`Bias`], and the epilogue [`finish`] (alpha, bias, activation) that turns
//! raw sums into outputs. A leaf module, so that the portable GEMM and the architecture kernels
//! both use it without depending on each other.

use crate::Activation;

/// Bias added in the GEMM epilogue.
#[derive(Clone, Copy)]
pub(crate) enum Bias<'a> {
    None,
    /// One value per row of C (convolution: per output channel).
    Row(&'a [f32]),
    /// One value per column of C (matmul / Gemm).
    Col(&'a [f32]),
}

impl Bias<'_> {
    /// Row `i`'s value of a per-row bias (a convolution's output channel `i`), else 0.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    #[inline(always)]
    pub(crate) fn row(&self, i: usize) -> f32 {
        match self {
            Bias::Row(b) => b[i],
            _ => 0.0,
        }
    }
}

/// One (unbatched) GEMM with offsets already applied to the slices.
pub(crate) struct Gemm {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a_rs: usize,
    pub a_cs: usize,
    pub b_rs: usize,
    pub b_cs: usize,
    pub c_rs: usize,
    pub alpha: f32,
    pub act: Activation,
    /// C holds the sum over earlier `k` (a convolution's earlier im2col blocks): add to it
    /// instead of starting from zero.
    pub add_to_c: bool,
    /// Apply the epilogue (alpha, bias, activation) at the end: false while more `k` follows.
    pub epilogue: bool,
}

/// Epilogue on a finished row segment `C[i, j0..j0 + dst.len()]` holding the
/// raw sums: scale, bias, activation.
#[inline(always)]
pub(crate) fn finish(dst: &mut [f32], g: &Gemm, bias: Bias, i: usize, j0: usize) {
    scale_bias(dst, g, bias, i, j0);
    g.act.apply_in_place(dst);
}

/// [`finish`] with the activation always inlined ([`Activation::apply_in_kernel`](crate::Activation)),
/// for the x86-64 column tiles: their products with few input channels (MobileNetV2's expand
/// layers, `k` 8 and 16) ran the activation as an out-of-line call per row of a tile, 1.1-1.2x
/// slower; in the row-vector tiles and the implicit convolution, with longer rows, inlining it
/// measured 1.2x slower (VWW's 128-channel pointwise layers), so they keep [`finish`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn finish_inlined(dst: &mut [f32], g: &Gemm, bias: Bias, i: usize, j0: usize) {
    scale_bias(dst, g, bias, i, j0);
    g.act.apply_in_kernel(dst);
}

/// The scale and bias of [`finish`].
#[inline(always)]
fn scale_bias(dst: &mut [f32], g: &Gemm, bias: Bias, i: usize, j0: usize) {
    let alpha = g.alpha;
    match bias {
        Bias::None => {
            if alpha != 1.0 {
                for v in dst.iter_mut() {
                    *v *= alpha;
                }
            }
        }
        Bias::Row(bv) => {
            let bb = bv[i];
            for v in dst.iter_mut() {
                *v = alpha * *v + bb;
            }
        }
        Bias::Col(bv) => {
            let bv = &bv[j0..j0 + dst.len()];
            for (v, &bb) in dst.iter_mut().zip(bv) {
                *v = alpha * *v + bb;
            }
        }
    }
}
