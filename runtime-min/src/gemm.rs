//! Batched strided GEMM (`matmul`), the GEMM the convolutions call ([`gemm`]: the architecture
//! kernels where they apply, else the portable core), and that portable core, a register-tiled
//! kernel over packed panels.

use crate::arch::{self, KernelCall, Kernels};
use crate::epilogue::{finish, Bias, Gemm};
use crate::util::dot;
use crate::Activation;

/// Rows of the register tile.
const MR: usize = 4;
/// Columns of the register tile.
const NR: usize = 8;
/// Depth of one packed panel (stack use: `MR*KC + KC*NR` floats = 3 KiB).
const KC: usize = 64;

/// Stack bytes of the portable GEMM's local arrays: the packed A and B panels of [`gemm_tiled`].
pub(crate) const PORTABLE_PANELS_BYTES: usize = core::mem::size_of::<([f32; MR * KC], [f32; KC * NR])>();

/// Batched, strided matrix multiplication parameters for [`matmul`].
///
/// For every batch index `(b0, b1, b2, b3)` in `batch`, computes
/// `C[i, j] = act(alpha * sum_k A[i, k] * B[k, j] + bias[j])` where element
/// `(i, k)` of `A` is `a[sum(b_t * a_batch_strides[t]) + i * a_row_stride +
/// k * a_col_stride]` (likewise for `B`), and `C[i, j]` is
/// `c[sum(b_t * c_batch_strides[t]) + i * c_row_stride + j]` (C's column
/// stride is 1). A transposed operand is expressed by swapping its row and
/// column strides; a broadcast batch axis has stride 0. Unused batch axes
/// have length 1.
#[derive(Clone, Copy, Debug, PartialEq)]
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
    /// Scale applied to the product (ONNX Gemm `alpha`; 1 for MatMul).
    pub alpha: f32,
    /// Fused activation applied after the bias.
    pub act: Activation,
}

impl MatMul {
    /// One product of contiguous row-major matrices: `C (m x n) = A (m x k) * B (k x n)`, no batch
    /// axes, `alpha` 1, no activation. Other layouts start from it with struct-update syntax.
    pub const fn row_major(m: usize, n: usize, k: usize) -> Self {
        MatMul {
            batch: [1; 4],
            a_batch_strides: [0; 4],
            b_batch_strides: [0; 4],
            c_batch_strides: [0; 4],
            m,
            n,
            k,
            a_row_stride: k,
            a_col_stride: 1,
            b_row_stride: n,
            b_col_stride: 1,
            c_row_stride: n,
            alpha: 1.0,
            act: Activation::None,
        }
    }
}

/// Batched strided GEMM: see [`MatMul`] for the exact semantics. `bias`, if
/// present, has length `n` and is added to every row of every `C` (ONNX Gemm
/// with `beta * C` folded into a per-column bias at build time).
///
/// Fast paths: on x86-64 CPUs with AVX2 and FMA (detected at run time, see
/// [`kernel_path`](crate::kernel_path)), C with at least 8 rows runs on the FMA
/// micro-kernels (any strides, 24 KiB of stack panels). Otherwise (the
/// portable path, e.g. Cortex-M): row-major `B`
/// (`b_col_stride == 1`) uses a 4x8 register-tiled micro-kernel over packed
/// `A` panels; `A` row-contiguous with `B` column-contiguous (`B` transposed,
/// e.g. ONNX Gemm `transB=1`) uses dot products; any other strides use
/// on-stack packed panels (3 KiB).
pub fn matmul(p: &MatMul, a: &[f32], b: &[f32], bias: Option<&[f32]>, c: &mut [f32]) {
    arch::run(MatMulCall { p, a, b, bias, c });
}

/// The arguments of one [`matmul`], whose body [`arch::run`] compiles per kernel path.
struct MatMulCall<'a> {
    p: &'a MatMul,
    a: &'a [f32],
    b: &'a [f32],
    bias: Option<&'a [f32]>,
    c: &'a mut [f32],
}

impl KernelCall for MatMulCall<'_> {
    #[inline(always)]
    fn run(self, kernels: Kernels) {
        let MatMulCall { p, a, b, bias, c } = self;
        matmul_on(kernels, p, a, b, bias, c);
    }
}

/// [`matmul`] on `kernels`.
#[cfg_attr(target_arch = "x86_64", inline(always))]
fn matmul_on(kernels: Kernels, p: &MatMul, a: &[f32], b: &[f32], bias: Option<&[f32]>, c: &mut [f32]) {
    if p.m == 0 || p.n == 0 || p.batch.contains(&0) {
        return;
    }
    let g = Gemm {
        m: p.m,
        n: p.n,
        k: p.k,
        a_rs: p.a_row_stride,
        a_cs: p.a_col_stride,
        b_rs: p.b_row_stride,
        b_cs: p.b_col_stride,
        c_rs: p.c_row_stride,
        alpha: p.alpha,
        act: p.act,
        add_to_c: false,
        epilogue: true,
    };
    let bias = match bias {
        Some(v) => Bias::Col(v),
        None => Bias::None,
    };
    let (sa, sb, sc) = (p.a_batch_strides, p.b_batch_strides, p.c_batch_strides);
    for b0 in 0..p.batch[0] {
        for b1 in 0..p.batch[1] {
            for b2 in 0..p.batch[2] {
                for b3 in 0..p.batch[3] {
                    let ao = b0 * sa[0] + b1 * sa[1] + b2 * sa[2] + b3 * sa[3];
                    let bo = b0 * sb[0] + b1 * sb[1] + b2 * sb[2] + b3 * sb[3];
                    let co = b0 * sc[0] + b1 * sc[1] + b2 * sc[2] + b3 * sc[3];
                    gemm(kernels, &g, &a[ao..], &b[bo..], bias, &mut c[co..]);
                }
            }
        }
    }
}

/// `C = act(alpha * A B + bias)` for one matrix triple, on the architecture kernels of `kernels`
/// where they apply, else on the portable core.
#[cfg_attr(target_arch = "x86_64", inline(always))]
pub(crate) fn gemm(kernels: Kernels, g: &Gemm, a: &[f32], b: &[f32], bias: Bias, c: &mut [f32]) {
    if g.m == 0 || g.n == 0 {
        return;
    }
    if g.k == 0 {
        for i in 0..g.m {
            let row = &mut c[i * g.c_rs..][..g.n];
            if !g.add_to_c {
                row.fill(0.0);
            }
            if g.epilogue {
                finish(row, g, bias, i, 0);
            }
        }
    } else if !kernels.gemm(g, a, b, bias, c) {
        gemm_portable(g, a, b, bias, c);
    }
}

/// The portable path (`g.k > 0`): dot products when B's columns are contiguous along `k` (a
/// transposed B), else the register-tiled kernel, or for one column of a row-major B the same
/// k-ascending chain per output ([`gemm_column`]). The choice never depends on A's strides, so a
/// product gives the same bits whichever layout its A operand has (a folded transpose, weights
/// packed at build time), nor on the number of columns of a row-major B, so a convolution gives
/// the same bits at one output position as at many (a band of one row in patch-based execution).
#[cfg_attr(target_arch = "x86_64", inline(always))]
pub(crate) fn gemm_portable(g: &Gemm, a: &[f32], b: &[f32], bias: Bias, c: &mut [f32]) {
    if g.b_rs == 1 && g.b_cs != 1 {
        gemm_dot(g, a, b, bias, c);
    } else if g.n == 1 {
        gemm_column(g, a, b, bias, c);
    } else if g.b_cs == 1 {
        let m_main = g.m - g.m % MR;
        gemm_tiled(g, m_main, a, b, bias, c);
        for i in m_main..g.m {
            gemm_axpy_row(g, i, a, b, bias, c);
        }
    } else {
        gemm_tiled(g, g.m, a, b, bias, c);
    }
}

/// B's columns contiguous along k: one lane-parallel dot product per output.
#[cfg_attr(target_arch = "x86_64", inline(always))]
fn gemm_dot(g: &Gemm, a: &[f32], b: &[f32], bias: Bias, c: &mut [f32]) {
    for i in 0..g.m {
        let arow = &a[i * g.a_rs..][..(g.k - 1) * g.a_cs + 1];
        let crow = &mut c[i * g.c_rs..][..g.n];
        for (j, cv) in crow.iter_mut().enumerate() {
            let d = dot(arow, g.a_cs, &b[j * g.b_cs..][..g.k]);
            *cv = if g.add_to_c { *cv + d } else { d };
        }
        if g.epilogue {
            finish(crow, g, bias, i, 0);
        }
    }
}

/// C of one column: each output the k-ascending chain of multiply-adds the register tiles and
/// [`gemm_axpy_row`] compute for every column (a lane-parallel dot product would sum in another
/// order).
#[cfg_attr(target_arch = "x86_64", inline(always))]
fn gemm_column(g: &Gemm, a: &[f32], b: &[f32], bias: Bias, c: &mut [f32]) {
    let b = &b[..(g.k - 1) * g.b_rs + 1];
    let chain = |acc: f32, (&x, &y): (&f32, &f32)| acc + x * y;
    for i in 0..g.m {
        let arow = &a[i * g.a_rs..][..(g.k - 1) * g.a_cs + 1];
        let cv = &mut c[i * g.c_rs..][..1];
        let start = if g.add_to_c { cv[0] } else { 0.0 };
        // Iterators, not indices: no index arithmetic in the loop, which cores without an FPU pay
        // for beside each soft-float call (the micro:bit's MLP: 6% fewer instructions). A stride
        // of 0 (a broadcast operand), which `step_by` refuses, indexed.
        cv[0] = match (g.a_cs, g.b_rs) {
            (1, 1) => arow.iter().zip(b).fold(start, chain),
            (a_cs, b_rs) if a_cs > 0 && b_rs > 0 => {
                arow.iter().step_by(a_cs).zip(b.iter().step_by(b_rs)).fold(start, chain)
            }
            (a_cs, b_rs) => (0..g.k).map(|kk| (&arow[kk * a_cs], &b[kk * b_rs])).fold(start, chain),
        };
        if g.epilogue {
            finish(cv, g, bias, i, 0);
        }
    }
}

/// One row of C as a sum of scaled contiguous rows of B (used for the rows
/// left over by the 4-row tiling, e.g. `m == 1`).
#[cfg_attr(target_arch = "x86_64", inline(always))]
fn gemm_axpy_row(g: &Gemm, i: usize, a: &[f32], b: &[f32], bias: Bias, c: &mut [f32]) {
    let crow = &mut c[i * g.c_rs..][..g.n];
    if !g.add_to_c {
        crow.fill(0.0);
    }
    let abase = i * g.a_rs;
    for kk in 0..g.k {
        let av = a[abase + kk * g.a_cs];
        let brow = &b[kk * g.b_rs..][..g.n];
        for (cv, &bv) in crow.iter_mut().zip(brow) {
            *cv += av * bv;
        }
    }
    if g.epilogue {
        finish(crow, g, bias, i, 0);
    }
}

/// The register-tile micro-kernel: `acc += Apanel(kc x MR)^T * B(kc x NR)`,
/// where row `kk` of B is `b[kk * bs..kk * bs + NR]`.
#[inline(always)]
fn micro(kc: usize, ap: &[f32], b: &[f32], bs: usize, mut acc: [[f32; NR]; MR]) -> [[f32; NR]; MR] {
    for (kk, arow) in ap[..kc * MR].chunks_exact(MR).enumerate() {
        let brow: &[f32; NR] = b[kk * bs..kk * bs + NR].try_into().unwrap();
        for r in 0..MR {
            let av = arow[r];
            for (acc_v, &bv) in acc[r].iter_mut().zip(brow) {
                *acc_v += av * bv;
            }
        }
    }
    acc
}

/// Tiled GEMM over rows `0..m_rows` of C (all rows when B is not row-major;
/// missing rows of a partial tile are zero-padded in the packed A panel).
#[cfg_attr(target_arch = "x86_64", inline(always))]
fn gemm_tiled(g: &Gemm, m_rows: usize, a: &[f32], b: &[f32], bias: Bias, c: &mut [f32]) {
    let mut apack = [0.0f32; MR * KC];
    let mut bpack = [0.0f32; KC * NR];
    let mut k0 = 0;
    while k0 < g.k {
        let kc = KC.min(g.k - k0);
        let first = k0 == 0 && !g.add_to_c;
        let last = k0 + kc == g.k && g.epilogue;
        let mut i0 = 0;
        while i0 < m_rows {
            let mr = MR.min(m_rows - i0);
            // Pack A[i0..i0+MR, k0..k0+kc] as kc groups of MR values.
            if g.a_rs == 1 && mr == MR {
                // Rows contiguous (weights packed at build time): MR values per k, one copy each.
                for (kk, dst) in apack[..kc * MR].chunks_exact_mut(MR).enumerate() {
                    dst.copy_from_slice(&a[(k0 + kk) * g.a_cs + i0..][..MR]);
                }
            } else {
                for r in 0..MR {
                    if r < mr {
                        let src = &a[(i0 + r) * g.a_rs + k0 * g.a_cs..];
                        let dst = apack[..kc * MR].iter_mut().skip(r).step_by(MR);
                        if g.a_cs == 1 {
                            for (d, &s) in dst.zip(&src[..kc]) {
                                *d = s;
                            }
                        } else {
                            let src = &src[..(kc - 1) * g.a_cs + 1];
                            // A column stride of 0 is a size-1 `k` (found by safety/'s random graphs):
                            // one value is read, any step works, and `step_by(0)` would panic.
                            for (d, &s) in dst.zip(src.iter().step_by(g.a_cs.max(1))) {
                                *d = s;
                            }
                        }
                    } else {
                        for d in apack[..kc * MR].iter_mut().skip(r).step_by(MR) {
                            *d = 0.0;
                        }
                    }
                }
            }
            let mut j0 = 0;
            while j0 < g.n {
                let nr = NR.min(g.n - j0);
                let (bsrc, bs): (&[f32], usize) = if g.b_cs == 1 && nr == NR {
                    (&b[k0 * g.b_rs + j0..], g.b_rs)
                } else {
                    for (kk, dst) in bpack[..kc * NR].chunks_exact_mut(NR).enumerate() {
                        let base = (k0 + kk) * g.b_rs + j0 * g.b_cs;
                        for (jj, d) in dst.iter_mut().enumerate() {
                            *d = if jj < nr { b[base + jj * g.b_cs] } else { 0.0 };
                        }
                    }
                    (&bpack[..], NR)
                };
                let mut acc = [[0.0f32; NR]; MR];
                if !first {
                    for (r, acc_r) in acc.iter_mut().enumerate().take(mr) {
                        let crow = &c[(i0 + r) * g.c_rs + j0..][..nr];
                        acc_r[..nr].copy_from_slice(crow);
                    }
                }
                let acc = micro(kc, &apack, bsrc, bs, acc);
                for (r, acc_r) in acc.iter().enumerate().take(mr) {
                    let crow = &mut c[(i0 + r) * g.c_rs + j0..][..nr];
                    crow.copy_from_slice(&acc_r[..nr]);
                    if last {
                        finish(crow, g, bias, i0 + r, j0);
                    }
                }
                j0 += NR;
            }
            i0 += MR;
        }
        k0 += kc;
    }
}

#[cfg(test)]
mod tests {
    //! Every GEMM path this CPU runs (portable, and the FMA kernels of each supported vector
    //! width) against an `f64` reference, on shapes that cover partial tiles in all three
    //! dimensions and several `KC` blocks.
    extern crate std;
    use super::*;
    use crate::KernelPath;
    use std::vec::Vec;

    /// The kernels of every path this CPU runs.
    fn paths() -> Vec<(&'static str, Kernels)> {
        KernelPath::ALL.iter().filter_map(|&p| Some((p.name(), Kernels::supported(p)?))).collect()
    }

    fn values(n: usize, seed: u32) -> Vec<f32> {
        (0..n)
            .map(|i| {
                ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) >> 8) as f32 / (1u32 << 23) as f32 - 1.0
            })
            .collect()
    }

    #[test]
    fn every_path_matches_f64_reference() {
        for &(m, n, k) in &[
            (1, 1, 1),
            (3, 5, 7),
            (8, 6, 3),
            (17, 13, 130),
            (33, 7, 300),
            (64, 4, 64),
            (40, 25, 9),
            (13, 70, 40),
            (9, 64, 129),
            (300, 1, 70),
        ] {
            for &(trans_a, trans_b) in &[(false, false), (true, false), (false, true), (true, true)] {
                let (a_rs, a_cs) = if trans_a { (1, m) } else { (k, 1) };
                let (b_rs, b_cs) = if trans_b { (1, k) } else { (n, 1) };
                let g = Gemm {
                    m,
                    n,
                    k,
                    a_rs,
                    a_cs,
                    b_rs,
                    b_cs,
                    c_rs: n + 2,
                    alpha: 0.5,
                    act: Activation::Relu,
                    add_to_c: false,
                    epilogue: true,
                };
                let a = values(m * k, 1);
                let b = values(k * n, 2);
                let bias = values(m, 3);
                for (name, kernels) in paths() {
                    let mut c = std::vec![f32::NAN; m * (n + 2)];
                    gemm(kernels, &g, &a, &b, Bias::Row(&bias), &mut c);
                    for i in 0..m {
                        for j in 0..n {
                            let (mut s, mut mag) = (0.0f64, 0.0f64);
                            for kk in 0..k {
                                let p = a[i * a_rs + kk * a_cs] as f64 * b[kk * b_rs + j * b_cs] as f64;
                                s += p;
                                mag += p.abs();
                            }
                            let want = (0.5 * s + bias[i] as f64).max(0.0);
                            let got = c[i * (n + 2) + j] as f64;
                            let tol = 1e-6 * (0.5 * mag + 1.0) * (k as f64).sqrt();
                            assert!(
                                (got - want).abs() <= tol,
                                "{name} {m}x{n}x{k} ta={trans_a} tb={trans_b} at ({i},{j}): {got} vs {want}"
                            );
                        }
                    }
                }
            }
        }
    }
}
