//! 3x3 convolutions by Winograd's minimal filtering F(2x2, 3x3) on channel-blocked tensors
//! ([`crate::blocked`]): each 2x2 block of outputs of a channel is computed from the 4x4 input
//! patch around it in 16 products instead of 36.
//!
//! With `B`, `G` and `A` the transforms of Lavin and Gray, "Fast Algorithms for Convolutional
//! Neural Networks" (CVPR 2016), output tile `Y = A^T [ sum over input channels of (G g G^T) .
//! (B^T d B) ] A` for kernel `g` and input patch `d`, `.` elementwise. The kernel transform
//! `U = G g G^T` happens at build time ([`winograd_kernel`], in f64); at run time, for a chunk of
//! [`WINOGRAD_TILES`] tiles at a time, the kernel
//! 1. transforms each tile's patch of every input channel (`V = B^T d B`, adds and subtractions
//!    only) into scratch, as 16 channel-blocked "images" of one position per tile, one per
//!    element `xi` of the 4x4 transformed tile;
//! 2. multiplies each of the 16 by its own `U[xi]` as a pointwise convolution
//!    ([`crate::conv2d_blocked`]'s GEMM kernels, weights k-major), into scratch;
//! 3. transforms each tile back (`A^T M A`), adds the bias, applies the activation and writes the
//!    tile's outputs that lie inside the output.
//!
//! The results differ from a direct convolution's in rounding (the sums are taken in another
//! basis): against an f64 reference they stay within the tolerance the other convolutions meet,
//! 1e-5 of the sum of the products' magnitudes (`runtime-min/tests/winograd.rs`). The transforms
//! are lane-wise adds, so the AVX-512 and AVX2 paths give the same bits; the portable path differs
//! as its GEMM does (no fused multiply-adds). Against the blocked direct kernel (weights in
//! panels), one layer each in a crate outside the workspace built without flags (AVX-512, Zen 4,
//! p50): MNIST's 32-to-64 layer on 26x26 0.65, ResNet-8's 32-channel 16x16 and 64-channel 8x8
//! layers 0.79 and 0.70, ResNet-18's 64-channel 16x16 and 128-channel 8x8 ones 0.63-0.67; with 16
//! input channels (ResNet-8's first stage) it is slower (1.05-1.2), so it applies from
//! [`WINOGRAD_MIN_CHANNELS`] input channels.

use crate::arch::{self, KernelCall, Kernels};
use crate::blocked::{conv2d_blocked, conv2d_blocked_applies, CHANNEL_BLOCK};
use crate::conv_shape::{Conv2d, ConvWeights};

/// Tiles transformed and multiplied per chunk: 8 to 24 ran as fast as whole layers, or faster
/// (the chunk's transformed tiles stay in the L1 and L2 caches).
pub const WINOGRAD_TILES: usize = 12;

/// Fewest input channels for which the transformed products beat the direct kernel (measured:
/// 16 channels are slower, 32 faster).
pub const WINOGRAD_MIN_CHANNELS: usize = 32;

/// Fewest tiles (an 8x8 output) for which the transformed products beat the direct kernel: with
/// fewer, the transformed weights (16 values per kernel where the direct kernel reads 9) weigh
/// more than the products saved (ResNet-18's 256-channel 4x4 layers, 4 tiles: 0.81-0.89 of the
/// direct kernel's time with the weights in cache, and its deeper layers read theirs from memory).
pub const WINOGRAD_MIN_TILES: usize = 16;

/// Elements of the transformed 4x4 tile.
const XI: usize = 16;

/// The lanes the transforms run on: one channel block.
const L: usize = CHANNEL_BLOCK;

/// Whether [`conv2d_winograd`] computes `p`: a 3x3 convolution of one group at stride 1 without
/// dilation, between whole blocks of channels, at least [`WINOGRAD_MIN_CHANNELS`] in and
/// [`WINOGRAD_MIN_TILES`] tiles of 2x2 outputs, padding at most 1 before each axis, whose direct
/// form [`conv2d_blocked`] computes.
pub fn winograd_applies(p: &Conv2d) -> bool {
    let direct = Conv2d { weights: ConvWeights::KMajor, ..*p };
    p.kernel_h == 3
        && p.kernel_w == 3
        && p.stride_h == 1
        && p.stride_w == 1
        && p.groups == 1
        && p.in_channels >= WINOGRAD_MIN_CHANNELS
        && tiles(p.out_h) * tiles(p.out_w) >= WINOGRAD_MIN_TILES
        && p.pad_top <= 1
        && p.pad_left <= 1
        && p.in_channels.is_multiple_of(CHANNEL_BLOCK)
        && conv2d_blocked_applies(&direct)
}

/// The transformed kernel `G g G^T` of one 3x3 kernel `g` (row-major), computed in f64 and
/// rounded once: element `xi = 4 * row + column` of the 4x4 result.
pub fn winograd_kernel(g: &[f32; 9]) -> [f32; XI] {
    const G: [[f64; 3]; 4] = [[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]];
    let mut u = [0.0f32; XI];
    for a in 0..4 {
        for b in 0..4 {
            let mut sum = 0.0f64;
            for (r, row) in g.chunks_exact(3).enumerate() {
                for (c, &v) in row.iter().enumerate() {
                    sum += G[a][r] * v as f64 * G[b][c];
                }
            }
            u[4 * a + b] = sum as f32;
        }
    }
    u
}

/// Where [`conv2d_winograd`] reads element `xi` of the transformed kernel from input channel `ic`
/// to output channel `oc` of `p`: 16 k-major matrices, `u[(xi * in_channels + ic) * out_channels
/// + oc]`.
pub const fn winograd_weight_index(p: &Conv2d, xi: usize, ic: usize, oc: usize) -> usize {
    (xi * p.in_channels + ic) * p.out_channels + oc
}

/// Elements of the transformed weights of `p`.
pub const fn winograd_weights_len(p: &Conv2d) -> usize {
    XI * p.in_channels * p.out_channels
}

/// Elements of scratch [`conv2d_winograd`] needs for `p`: one chunk's transformed inputs and
/// products.
pub const fn conv2d_winograd_scratch_len(p: &Conv2d) -> usize {
    let tiles = tiles(p.out_h) * tiles(p.out_w);
    let chunk = if tiles < WINOGRAD_TILES { tiles } else { WINOGRAD_TILES };
    XI * (p.in_channels + p.out_channels) * chunk
}

/// Tiles of 2 outputs along an axis of `n`.
const fn tiles(n: usize) -> usize {
    n.div_ceil(2)
}

/// Convolution `p` ([`winograd_applies`]) of the channel-blocked `x` into the channel-blocked `y`
/// by F(2x2, 3x3): `u` the transformed weights ([`winograd_weight_index`]), `bias` per output
/// channel, `scratch` at least [`conv2d_winograd_scratch_len`] elements.
pub fn conv2d_winograd(p: &Conv2d, x: &[f32], u: &[f32], bias: Option<&[f32]>, y: &mut [f32], scratch: &mut [f32]) {
    assert!(winograd_applies(p), "not a convolution conv2d_winograd computes");
    assert!(scratch.len() >= conv2d_winograd_scratch_len(p), "conv2d_winograd: scratch too short");
    assert!(u.len() >= winograd_weights_len(p), "conv2d_winograd: weights too short");
    arch::run(WinogradCall { p, x, u, bias, y, scratch });
}

/// The arguments of one [`conv2d_winograd`], whose body [`arch::run`] compiles per kernel path
/// (the transforms vectorise on the path's vectors).
struct WinogradCall<'a> {
    p: &'a Conv2d,
    x: &'a [f32],
    u: &'a [f32],
    bias: Option<&'a [f32]>,
    y: &'a mut [f32],
    scratch: &'a mut [f32],
}

impl KernelCall for WinogradCall<'_> {
    #[inline(always)]
    fn run(self, _: Kernels) {
        let WinogradCall { p, x, u, bias, y, scratch } = self;
        let (in_plane, out_plane) = (p.in_h * p.in_w, p.out_h * p.out_w);
        let total = tiles(p.out_h) * tiles(p.out_w);
        for n in 0..p.batch {
            let x = &x[n * p.in_channels * in_plane..][..p.in_channels * in_plane];
            let y = &mut y[n * p.out_channels * out_plane..][..p.out_channels * out_plane];
            let mut first = 0;
            while first < total {
                let chunk = Chunk { first, tiles: WINOGRAD_TILES.min(total - first) };
                let (v, m) = scratch.split_at_mut(XI * p.in_channels * chunk.tiles);
                let m = &mut m[..XI * p.out_channels * chunk.tiles];
                transform_input(p, x, chunk, v);
                multiply(p, u, chunk, v, m);
                transform_output(p, m, bias, chunk, y);
                first += chunk.tiles;
            }
        }
    }
}

/// Consecutive tiles (row-major over the output's tiles) processed together.
#[derive(Clone, Copy)]
struct Chunk {
    /// The first tile.
    first: usize,
    /// How many.
    tiles: usize,
}

impl Chunk {
    /// The output row and column of the top-left output of the chunk's tile `t`.
    #[inline(always)]
    fn origin(self, p: &Conv2d, t: usize) -> (usize, usize) {
        let across = tiles(p.out_w);
        (2 * ((self.first + t) / across), 2 * ((self.first + t) % across))
    }
}

/// `V = B^T d B` of every input channel block and tile of `chunk` into `v`: image `xi` (of
/// `in_channels` channels and `chunk.tiles` positions, channel-blocked) holds element `xi`.
/// Input positions outside `x` (padding, or past the last tile's edge) are zeros.
#[cfg_attr(target_arch = "x86_64", inline(always))]
fn transform_input(p: &Conv2d, x: &[f32], chunk: Chunk, v: &mut [f32]) {
    let plane = p.in_h * p.in_w;
    let image = p.in_channels * chunk.tiles;
    for cb in 0..p.in_channels / L {
        let xb = &x[cb * plane * L..][..plane * L];
        for t in 0..chunk.tiles {
            let (oh, ow) = chunk.origin(p, t);
            let mut d = [[[0.0f32; L]; 4]; 4];
            // Patch row `i` is input row `oh + i - pad_top`, column `j` input column
            // `ow + j - pad_left` (no closures here: they may not be inlined into the path's copy).
            for (i, row) in d.iter_mut().enumerate() {
                if oh + i < p.pad_top || oh + i - p.pad_top >= p.in_h {
                    continue;
                }
                let ih = oh + i - p.pad_top;
                for (j, lanes) in row.iter_mut().enumerate() {
                    if ow + j < p.pad_left || ow + j - p.pad_left >= p.in_w {
                        continue;
                    }
                    let iw = ow + j - p.pad_left;
                    lanes.copy_from_slice(&xb[(ih * p.in_w + iw) * L..][..L]);
                }
            }
            // B^T d (rows), then (B^T d) B (columns).
            let mut rows = [[[0.0f32; L]; 4]; 4];
            for j in 0..4 {
                for l in 0..L {
                    rows[0][j][l] = d[0][j][l] - d[2][j][l];
                    rows[1][j][l] = d[1][j][l] + d[2][j][l];
                    rows[2][j][l] = d[2][j][l] - d[1][j][l];
                    rows[3][j][l] = d[1][j][l] - d[3][j][l];
                }
            }
            for (a, r) in rows.iter().enumerate() {
                let mut out = [[0.0f32; L]; 4];
                for l in 0..L {
                    out[0][l] = r[0][l] - r[2][l];
                    out[1][l] = r[1][l] + r[2][l];
                    out[2][l] = r[2][l] - r[1][l];
                    out[3][l] = r[1][l] - r[3][l];
                }
                for (b, lanes) in out.iter().enumerate() {
                    let at = (4 * a + b) * image + (cb * chunk.tiles + t) * L;
                    v[at..at + L].copy_from_slice(lanes);
                }
            }
        }
    }
}

/// `M[xi] = U[xi] V[xi]` for each `xi`: a pointwise convolution of image `xi` of `v` into image
/// `xi` of `m`, on [`conv2d_blocked`]'s kernels.
#[cfg_attr(target_arch = "x86_64", inline(always))]
fn multiply(p: &Conv2d, u: &[f32], chunk: Chunk, v: &[f32], m: &mut [f32]) {
    let gemm = Conv2d {
        batch: 1,
        in_h: 1,
        in_w: chunk.tiles,
        out_h: 1,
        out_w: chunk.tiles,
        kernel_h: 1,
        kernel_w: 1,
        pad_top: 0,
        pad_left: 0,
        act: crate::Activation::None,
        weights: ConvWeights::KMajor,
        ..*p
    };
    let (image_in, image_out, matrix) =
        (p.in_channels * chunk.tiles, p.out_channels * chunk.tiles, p.in_channels * p.out_channels);
    for xi in 0..XI {
        let ux = &u[xi * matrix..][..matrix];
        conv2d_blocked(&gemm, &v[xi * image_in..][..image_in], ux, None, &mut m[xi * image_out..][..image_out]);
    }
}

/// `Y = A^T M A` of every output channel block and tile of `chunk`, plus the bias, through the
/// activation, into the outputs of `y` the tile covers.
#[cfg_attr(target_arch = "x86_64", inline(always))]
fn transform_output(p: &Conv2d, m: &[f32], bias: Option<&[f32]>, chunk: Chunk, y: &mut [f32]) {
    let plane = p.out_h * p.out_w;
    let image = p.out_channels * chunk.tiles;
    for ob in 0..p.out_channels / L {
        let mut shift = [0.0f32; L];
        if let Some(b) = bias {
            shift.copy_from_slice(&b[ob * L..][..L]);
        }
        let yb = &mut y[ob * plane * L..][..plane * L];
        for t in 0..chunk.tiles {
            let mut e = [[[0.0f32; L]; 4]; 4];
            for (xi, lanes) in e.iter_mut().flatten().enumerate() {
                lanes.copy_from_slice(&m[xi * image + (ob * chunk.tiles + t) * L..][..L]);
            }
            // A^T M (rows), then (A^T M) A (columns).
            let mut rows = [[[0.0f32; L]; 4]; 2];
            for b in 0..4 {
                for l in 0..L {
                    rows[0][b][l] = e[0][b][l] + e[1][b][l] + e[2][b][l];
                    rows[1][b][l] = e[1][b][l] - e[2][b][l] - e[3][b][l];
                }
            }
            let (oh, ow) = chunk.origin(p, t);
            for (i, r) in rows.iter().enumerate() {
                if oh + i >= p.out_h {
                    continue;
                }
                let mut out = [[0.0f32; L]; 2];
                for l in 0..L {
                    out[0][l] = r[0][l] + r[1][l] + r[2][l] + shift[l];
                    out[1][l] = r[1][l] - r[2][l] - r[3][l] + shift[l];
                }
                p.act.apply_in_place(out.as_flattened_mut());
                for (j, lanes) in out.iter().enumerate() {
                    if ow + j < p.out_w {
                        yb[((oh + i) * p.out_w + ow + j) * L..][..L].copy_from_slice(lanes);
                    }
                }
            }
        }
    }
}
