//! The kernel paths (`KernelPath`): detection finds the best one this CPU has, forcing a path is
//! refused where the CPU lacks it, and the paths give the bits they promise: the AVX2 and AVX-512
//! FMA kernels and the dispatched entry points exactly the same bits, the 3x3 depthwise kernels
//! the portable path's values, every path values close to an `f64` reference (checked by the other
//! test files, on whichever path is in force).
//!
//! Forcing a path is process-wide, so every test here holds [`PATHS`] while it runs.

mod common;

use common::*;
use sramfit_runtime_min::*;
use std::sync::Mutex;

/// Held by every test of this file: the path in force is process-wide.
static PATHS: Mutex<()> = Mutex::new(());

/// Runs `f` with each path this CPU supports in force ([`common::on_each_path`]).
fn on_each_path<T>(f: impl Fn() -> T) -> Vec<(KernelPath, T)> {
    common::on_each_path(&PATHS, f)
}

/// The bit patterns of `v`.
fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|f| f.to_bits()).collect()
}

/// Checks the promise on the results of one kernel call on every path and on the dispatched
/// entry point (`dispatched`, run with the detected path in force): the FMA paths and the
/// dispatched call give the same bits as each other (when the detected path is an FMA one).
fn check_fma_paths_agree(ctx: &str, results: &[(KernelPath, Vec<f32>)], dispatched: &[f32]) {
    let fma: Vec<_> = results.iter().filter(|(p, _)| *p != KernelPath::Portable).collect();
    for (path, y) in &fma {
        assert_eq!(bits(y), bits(&fma[0].1), "{ctx}: {} vs {}", path.name(), fma[0].0.name());
    }
    let detected = results.iter().find(|(p, _)| *p == detected_kernel_path()).unwrap();
    assert_eq!(bits(dispatched), bits(&detected.1), "{ctx}: dispatched vs {}", detected.0.name());
}

/// Checks that every path gave the bits of the first one in `results` (the portable path).
fn check_every_path_agrees(ctx: &str, results: &[(KernelPath, Vec<f32>)]) {
    for (path, y) in results {
        assert_eq!(bits(y), bits(&results[0].1), "{ctx}: {} vs {}", path.name(), results[0].0.name());
    }
}

/// Convolutions that reach every kernel of every path: the implicit GEMM (row tiles, inside and
/// border positions, stride 1, 2, 3, padded bands), im2col on a narrow output, pointwise, grouped, few output
/// channels (portable GEMM), 3x3 depthwise on small planes (padded-plane kernel) and a large one
/// (row-wise kernel), a 5x5 depthwise (direct convolution), 8 output channels (the implicit
/// GEMM on half a vector of AVX-512), depthwise layers of 8 channels and more (the
/// channel-blocked kernel, then the plane kernels for the channels left), stride-1 depthwise
/// layers (AVX-512's masked kernel).
fn conv_cases() -> Vec<Conv2d> {
    use Activation::{None as A0, Relu};
    let clip = Activation::Clip { min: -0.5, max: 0.5 };
    let leaky = Activation::LeakyRelu { alpha: 0.1 };
    vec![
        conv_params(1, 5, 24, (13, 29), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, Relu),
        conv_params(1, 3, 16, (17, 15), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 1, A0),
        conv_params(1, 4, 33, (20, 25), (3, 2), (3, 3), (2, 1), (2, 0, 1, 1), 1, A0),
        conv_params(1, 70, 40, (4, 4), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, Relu),
        conv_params(2, 40, 48, (5, 7), (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 1, A0),
        conv_params(1, 12, 24, (9, 9), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 3, A0),
        conv_params(1, 6, 5, (10, 10), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, A0),
        conv_params(1, 8, 8, (25, 5), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 8, Relu),
        conv_params(1, 4, 8, (80, 70), (3, 3), (2, 1), (1, 2), (1, 2, 1, 2), 4, A0),
        conv_params(1, 4, 4, (9, 11), (5, 5), (1, 1), (1, 1), (2, 2, 2, 2), 4, A0),
        // 3x3 depthwise as the bands of a tiled layer (no padding rows, or two above).
        conv_params(1, 6, 6, (9, 7), (3, 3), (1, 1), (1, 1), (0, 1, 0, 1), 6, Relu),
        conv_params(1, 5, 5, (8, 13), (3, 3), (1, 1), (1, 1), (2, 1, 0, 1), 5, A0),
        // 8 output channels (VWW's first convolution): half of an AVX-512 tile.
        conv_params(1, 3, 8, (21, 48), (3, 3), (2, 2), (1, 1), (0, 0, 1, 1), 1, Relu),
        // The channel-blocked depthwise kernel: narrow planes (one run of positions), two blocks
        // and 4 channels left to the plane kernels, stride 2 with uneven padding and a Clip; wide
        // rows (eight columns at a time, the last overlapping) of which the last two columns are
        // never read; 5x5 dilated, two images, an activation without a vector form; planes of
        // many bands, at stride 2 across and at stride 1.
        conv_params(1, 16, 16, (25, 5), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 16, Relu),
        conv_params(1, 20, 20, (33, 30), (3, 3), (2, 2), (1, 1), (1, 0, 2, 1), 20, clip),
        conv_params(1, 16, 16, (11, 20), (3, 3), (1, 3), (1, 1), (0, 0, 0, 0), 16, A0),
        conv_params(2, 8, 8, (12, 19), (5, 5), (1, 1), (2, 1), (2, 2, 2, 2), 8, leaky),
        conv_params(1, 8, 8, (200, 150), (3, 3), (1, 2), (1, 1), (1, 1, 1, 1), 8, Relu),
        conv_params(1, 8, 8, (90, 100), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 8, A0),
        // Outputs taken in groups across rows: 3x3 and 6x6 planes (groups of outputs
        // spanning two and three rows, the last group and the last eight staged and unstaged
        // positions overlapping the ones before), a 2x2 plane to one output (fewer than four
        // outputs, fewer than eight positions), rows of 5 at stride 2 from a 10x10 plane.
        conv_params(1, 16, 16, (3, 3), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 16, Relu),
        conv_params(1, 8, 8, (6, 6), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 8, A0),
        conv_params(1, 8, 8, (2, 2), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 8, A0),
        conv_params(1, 24, 24, (10, 10), (3, 3), (2, 2), (1, 1), (0, 0, 1, 1), 24, clip),
        // Blocks of 16 channels on AVX-512, then one of 8, then the plane kernels: 3x3 on a
        // narrow plane (runs under 16 positions), 5x5 on wide rows.
        conv_params(1, 43, 43, (3, 5), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 43, Relu),
        conv_params(1, 40, 40, (20, 37), (5, 5), (1, 1), (1, 1), (2, 2, 2, 2), 40, leaky),
        // The implicit GEMM on padded bands of output rows: 10 bands; 6 at stride 2, dilated.
        conv_params(1, 64, 16, (40, 40), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, Relu),
        conv_params(1, 48, 24, (31, 34), (3, 3), (2, 2), (2, 2), (2, 1, 3, 2), 1, A0),
        // Output rows 8 wide, one row tile each on AVX-512: ResNet-8's stride-2 layer to 8x8
        // (on a padded band), and with 16 channels (tiles of one vector); unpadded (read in
        // place), 20 channels (a partial second vector); padded with a band too deep to stage
        // (every position in the scattered tiles).
        conv_params(1, 32, 64, (16, 16), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 1, Relu),
        conv_params(1, 32, 16, (16, 16), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 1, clip),
        conv_params(1, 6, 20, (17, 17), (3, 3), (2, 2), (1, 1), (0, 0, 0, 0), 1, leaky),
        conv_params(1, 330, 24, (16, 16), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 1, A0),
        // Stride-1 depthwise layers with output rows as wide as the input's, which AVX-512 runs
        // on the planes where they are (masked loads) where the channel-blocked kernel would take
        // all channels: KWS's 25x5 planes, a plane of exactly four vectors and one of four
        // vectors and a lane, 5x5 and dilated kernels, padding only above and on one side, three
        // rows more above and below than the kernel needs (an output taller than the input,
        // whose last vectors lie past the input plane's end), a 48x48 plane of 144 vectors, two
        // images, every activation with a vector form; and beside them layers the other kernels
        // take: a sigmoid, channels left over from the blocks of 8, a 1x5 kernel, a channel
        // multiplier of 2.
        conv_params(1, 64, 64, (25, 5), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 64, Relu),
        conv_params(1, 8, 8, (8, 8), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 8, A0),
        conv_params(1, 16, 16, (5, 13), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 16, clip),
        conv_params(1, 8, 8, (20, 37), (5, 5), (1, 1), (1, 1), (2, 2, 2, 2), 8, leaky),
        conv_params(1, 16, 16, (14, 14), (3, 3), (1, 1), (2, 2), (2, 2, 2, 2), 16, Relu),
        conv_params(1, 8, 8, (9, 12), (3, 3), (1, 1), (1, 1), (2, 1, 0, 1), 8, A0),
        conv_params(1, 8, 8, (12, 10), (3, 3), (1, 1), (1, 1), (0, 2, 0, 0), 8, Relu),
        conv_params(1, 8, 8, (6, 16), (3, 3), (1, 1), (1, 1), (4, 1, 4, 1), 8, Relu),
        conv_params(1, 8, 8, (48, 48), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 8, Relu),
        conv_params(2, 8, 8, (11, 7), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 8, A0),
        conv_params(1, 8, 8, (9, 9), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 8, Activation::Sigmoid),
        conv_params(1, 12, 12, (9, 9), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 12, clip),
        conv_params(1, 8, 8, (9, 23), (1, 5), (1, 1), (1, 1), (0, 2, 0, 2), 8, A0),
        conv_params(1, 8, 16, (10, 9), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 8, clip),
        // The same kernel on 16 channels and more, a few vectors of every plane at a time
        // through all channels: vectors whose taps need only their columns' masks in fours and
        // twos, the others in pairs or alone (a 5x5 kernel; padding only above; an output taller
        // than the input; two images; a 48x48 plane, 24 channels; planes of fewer than four
        // vectors, which it takes from the channel-blocked kernel: 6x6, 2x2, and the 3x3 above).
        conv_params(1, 16, 16, (20, 37), (5, 5), (1, 1), (1, 1), (2, 2, 2, 2), 16, leaky),
        conv_params(1, 16, 16, (9, 12), (3, 3), (1, 1), (1, 1), (2, 1, 0, 1), 16, A0),
        conv_params(1, 32, 32, (6, 16), (3, 3), (1, 1), (1, 1), (4, 1, 4, 1), 32, Relu),
        conv_params(2, 16, 16, (11, 7), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 16, clip),
        conv_params(1, 24, 24, (48, 48), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 24, Relu),
        conv_params(1, 32, 32, (6, 6), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 32, clip),
        conv_params(1, 16, 16, (2, 2), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 16, A0),
        // 3x3 depthwise layers at stride 2 with output rows of one to four vectors, which
        // AVX-512 runs on the planes where they are (deinterleaved masked loads) where the
        // channel-blocked kernel would take all channels: padding only on the right and below
        // (VWW's), on every side with an odd number of output rows, rows of three vectors in two
        // images, two padding rows above (a kernel row wholly outside the input) and rows of four
        // vectors, an odd input width without left padding, rows of 12 (the blocked kernel's).
        conv_params(1, 16, 16, (48, 48), (3, 3), (2, 2), (1, 1), (0, 0, 1, 1), 16, Relu),
        conv_params(1, 8, 8, (33, 64), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 8, clip),
        conv_params(2, 24, 24, (20, 96), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 24, A0),
        conv_params(1, 8, 8, (9, 128), (3, 3), (2, 2), (1, 1), (2, 1, 0, 0), 8, leaky),
        conv_params(1, 8, 8, (12, 33), (3, 3), (2, 2), (1, 1), (1, 0, 1, 0), 8, Relu),
        conv_params(1, 32, 32, (24, 24), (3, 3), (2, 2), (1, 1), (0, 0, 1, 1), 32, Relu),
        // Strided 1x1 convolutions (ResNet's shortcuts), on the FMA paths bands of the
        // subsampled input times the weights: ResNet-8's to 16x16; rows of 20 (a whole vector and
        // a masked one on AVX-512); strides 3 by 2 on an odd map; 128 deep to 4x4, two images.
        conv_params(1, 16, 32, (32, 32), (1, 1), (2, 2), (1, 1), (0, 0, 0, 0), 1, Relu),
        conv_params(1, 24, 16, (9, 39), (1, 1), (2, 2), (1, 1), (0, 0, 0, 0), 1, A0),
        conv_params(1, 8, 24, (17, 31), (1, 1), (3, 2), (1, 1), (0, 0, 0, 0), 1, clip),
        conv_params(2, 128, 32, (8, 8), (1, 1), (2, 2), (1, 1), (0, 0, 0, 0), 1, A0),
    ]
}

/// One convolution with the fastest scratch.
fn run_conv(p: &Conv2d, x: &[f32], w: &[f32], b: &[f32]) -> Vec<f32> {
    let mut y = vec![f32::NAN; p.batch * p.out_channels * p.out_h * p.out_w];
    let mut scratch = vec![f32::NAN; conv2d_scratch_len(p)];
    conv2d(p, x, w, Some(b), &mut y, &mut scratch);
    y
}

/// An NHWC input read in place gives, on the portable path, the bits of the same convolution on
/// the NCHW tensor where that runs through im2col or the pointwise GEMM (the same products in the
/// same order; one input channel per group runs the direct convolution on NCHW, whose values the
/// other tests check); on the FMA paths, where an NCHW input may take the implicit GEMM or a
/// depthwise kernel instead, the FMA paths agree with each other.
#[test]
fn an_nhwc_input_gives_the_portable_bits_of_its_nchw_tensor() {
    for (i, p) in conv_cases().into_iter().enumerate() {
        let mut rng = Rng::new(i as u64 + 100);
        let x = rng.vec(p.batch * p.in_channels * p.in_h * p.in_w);
        let w = rng.vec(p.out_channels * p.in_channels / p.groups * p.kernel_h * p.kernel_w);
        let b = rng.vec(p.out_channels);
        let x_nhwc = nchw_to_nhwc(&x, (p.batch, p.in_channels, p.in_h, p.in_w));
        let nhwc = Conv2d { input: ConvInput::Nhwc, ..p };
        let results = on_each_path(|| (run_conv(&p, &x, &w, &b), run_conv(&nhwc, &x_nhwc, &w, &b)));
        let (_, (nchw, from_nhwc)) = results.iter().find(|(path, _)| *path == KernelPath::Portable).unwrap();
        // `==`: a zero sum may differ in sign.
        let direct = p.in_channels == p.groups;
        assert!(direct || nchw.iter().zip(from_nhwc).all(|(a, b)| a == b), "{p:?}: NHWC vs NCHW on the portable path");
        let fma: Vec<_> = results.iter().filter(|(path, _)| *path != KernelPath::Portable).collect();
        for (path, (_, y)) in &fma {
            assert_eq!(bits(y), bits(&fma[0].1 .1), "{p:?} NHWC: {} vs {}", path.name(), fma[0].0.name());
        }
    }
}

#[test]
fn fma_paths_and_dispatch_give_the_same_bits_on_convolutions() {
    for (i, p) in conv_cases().into_iter().enumerate() {
        let mut rng = Rng::new(i as u64 + 1);
        let x = rng.vec(p.batch * p.in_channels * p.in_h * p.in_w);
        let w = rng.vec(p.out_channels * p.in_channels / p.groups * p.kernel_h * p.kernel_w);
        let b = rng.vec(p.out_channels);
        let results = on_each_path(|| run_conv(&p, &x, &w, &b));
        let dispatched = {
            let _guard = PATHS.lock().unwrap_or_else(|e| e.into_inner());
            run_conv(&p, &x, &w, &b)
        };
        check_fma_paths_agree(&format!("{p:?}"), &results, &dispatched);
        if p.in_channels == p.groups {
            // The depthwise kernels add the same products in the same order as the portable
            // direct convolution (`==`: the FMA paths' kernels add the taps outside the input as
            // `w * 0`, which it skips, so a zero sum may differ in sign).
            let portable = &results[0].1;
            for (path, y) in &results[1..] {
                assert!(y.iter().zip(portable).all(|(a, b)| a == b), "{p:?}: {} vs portable", path.name());
            }
        }
    }
}

#[test]
fn fma_paths_and_dispatch_give_the_same_bits_on_matrix_products() {
    // (m, n, k): at least 8 rows reach the FMA kernels (column tiles when n allows, row tiles
    // for the rest; one column with A's rows contiguous: the matrix-vector tiles of 8, 4, 2 and
    // 1 vectors, then the rows left in a masked tile (12 x 1 x 64: a fully connected layer of
    // fewer rows than a vector); on AVX-512, 48 x 2100 a tile of 2 vectors over 64K values of A,
    // which asks for A's lines ahead, and one of 1 vector over fewer), fewer the portable GEMM; 8
    // and 16 rows: column tiles of 4 rows; A of 64K values read in place (transposed): depth
    // outer; every transpose.
    for (i, &(m, n, k)) in [
        (8, 40, 9),
        (16, 70, 12),
        (37, 5, 130),
        (64, 100, 33),
        (3, 50, 20),
        (17, 1, 300),
        (300, 1, 70),
        (56, 1, 500),
        (48, 1, 2100),
        (12, 1, 64),
        (64, 4, 1100),
    ]
    .iter()
    .enumerate()
    {
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            let p = MatMul {
                a_row_stride: if ta { 1 } else { k },
                a_col_stride: if ta { m } else { 1 },
                b_row_stride: if tb { 1 } else { n },
                b_col_stride: if tb { k } else { 1 },
                alpha: 0.75,
                act: Activation::Relu,
                ..MatMul::row_major(m, n, k)
            };
            let mut rng = Rng::new(100 + i as u64);
            let (a, b, bias) = (rng.vec(m * k), rng.vec(k * n), rng.vec(n));
            let run = || {
                let mut c = vec![f32::NAN; m * n];
                matmul(&p, &a, &b, Some(&bias), &mut c);
                c
            };
            let results = on_each_path(run);
            let dispatched = {
                let _guard = PATHS.lock().unwrap_or_else(|e| e.into_inner());
                run()
            };
            check_fma_paths_agree(&format!("{m}x{n}x{k} ta={ta} tb={tb}"), &results, &dispatched);
            // Forcing really switches kernels: the FMA paths round each product-sum once, the
            // portable one twice, which a 130-deep sum over 37 x 5 outputs cannot hide.
            if k == 130 {
                for (path, c) in &results[1..] {
                    assert_ne!(bits(c), bits(&results[0].1), "{} vs portable", path.name());
                }
            }
        }
    }
}

#[test]
fn detected_path_is_the_best_this_cpu_has() {
    let _guard = PATHS.lock().unwrap_or_else(|e| e.into_inner());
    #[cfg(target_arch = "x86_64")]
    let best = if cfg!(feature = "portable") {
        KernelPath::Portable
    } else if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")
    {
        KernelPath::Avx512
    } else if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
        KernelPath::Avx2Fma
    } else {
        KernelPath::Portable
    };
    #[cfg(not(target_arch = "x86_64"))]
    let best = KernelPath::Portable;
    assert_eq!(detected_kernel_path(), best);
    assert_eq!(kernel_path(), best);
    for p in KernelPath::ALL {
        assert_eq!(p.is_supported(), p <= best, "{}", p.name());
    }
}

#[test]
fn forcing_an_unsupported_path_is_refused_and_changes_nothing() {
    let _guard = PATHS.lock().unwrap_or_else(|e| e.into_inner());
    for p in KernelPath::ALL.into_iter().filter(|p| !p.is_supported()) {
        assert_eq!(force_kernel_path(p), Err(UnsupportedKernelPath(p)));
        assert_eq!(kernel_path(), detected_kernel_path());
    }
    // The portable path is always there, and forcing returns the path it replaces.
    assert_eq!(force_kernel_path(KernelPath::Portable), Ok(detected_kernel_path()));
    assert_eq!(kernel_path(), KernelPath::Portable);
    assert_eq!(force_kernel_path(detected_kernel_path()), Ok(KernelPath::Portable));
}

/// What patch-based execution relies on: a convolution run on a band of output rows (its input
/// rows with the halo, top padding only on the first band) gives, on every path and with the
/// scratch the band's own shape prefers, the bits of the same rows of the whole convolution, down
/// to bands of one output position. A product of one column used to take lane-parallel dot
/// products on the portable path (another summation order): the random rewrite graphs found it.
#[test]
fn a_band_of_output_rows_gives_the_bits_of_the_whole_convolution() {
    // 9 -> 3 channels, 3x3, padding 1, one column (every one-row band is one position), and a
    // strided 2-column case.
    let cases = [
        conv_params(1, 9, 3, (12, 1), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, Activation::None),
        conv_params(1, 4, 16, (13, 2), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 1, Activation::Relu),
    ];
    for full in cases {
        let mut rng = Rng::new(31);
        let x = rng.vec(full.in_channels * full.in_h * full.in_w);
        let w = rng.vec(full.out_channels * full.in_channels * 9);
        let b = rng.vec(full.out_channels);
        for (path, same) in on_each_path(|| {
            let whole = run_conv(&full, &x, &w, &b);
            let mut same = true;
            for rows in [1, 2, 3] {
                for r0 in (0..full.out_h).step_by(rows) {
                    let r1 = (r0 + rows).min(full.out_h);
                    let first = (r0 * full.stride_h) as isize - full.pad_top as isize;
                    let (lo, hi) =
                        (first.max(0) as usize, ((r1 - 1) * full.stride_h + 3 - full.pad_top).min(full.in_h));
                    let band =
                        Conv2d { in_h: hi - lo, out_h: r1 - r0, pad_top: (lo as isize - first) as usize, ..full };
                    let plane =
                        |c: usize| x[(c * full.in_h + lo) * full.in_w..(c * full.in_h + hi) * full.in_w].to_vec();
                    let xb: Vec<f32> = (0..full.in_channels).flat_map(plane).collect();
                    let yb = run_conv(&band, &xb, &w, &b);
                    let out = |c: usize, r: usize| &whole[(c * full.out_h + r) * full.out_w..][..full.out_w];
                    same &= (0..full.out_channels).all(|c| {
                        (r0..r1).all(|r| {
                            bits(&yb[(c * (r1 - r0) + r - r0) * full.out_w..][..full.out_w]) == bits(out(c, r))
                        })
                    });
                }
            }
            same
        }) {
            assert!(same, "{path:?}: a band's bits differ from the whole convolution's ({full:?})");
        }
    }
}

/// Each output of a convolution as the FMA kernels compute it: the k-ascending chain of fused
/// multiply-adds from zero over its im2col row (input channel, kernel row, kernel column; zero
/// in the padding), then the bias added and the activation applied.
fn fused_chain(p: &Conv2d, x: &[f32], w: &[f32], b: &[f32]) -> Vec<f32> {
    let (icg, ocg) = (p.in_channels / p.groups, p.out_channels / p.groups);
    let mut y = vec![];
    for n in 0..p.batch {
        for oc in 0..p.out_channels {
            let g = oc / ocg;
            for (oh, ow) in (0..p.out_h).flat_map(|oh| (0..p.out_w).map(move |ow| (oh, ow))) {
                let mut acc = 0.0f32;
                for (ic, kh, kw) in (0..icg)
                    .flat_map(|ic| (0..p.kernel_h).flat_map(move |kh| (0..p.kernel_w).map(move |kw| (ic, kh, kw))))
                {
                    let ih = (oh * p.stride_h + kh * p.dilation_h) as isize - p.pad_top as isize;
                    let iw = (ow * p.stride_w + kw * p.dilation_w) as isize - p.pad_left as isize;
                    let inside = (0..p.in_h as isize).contains(&ih) && (0..p.in_w as isize).contains(&iw);
                    let xv = match inside {
                        true => x[((n * p.in_channels + g * icg + ic) * p.in_h + ih as usize) * p.in_w + iw as usize],
                        false => 0.0,
                    };
                    acc = w[((oc * icg + ic) * p.kernel_h + kh) * p.kernel_w + kw].mul_add(xv, acc);
                }
                y.push(p.act.apply(acc + b[oc]));
            }
        }
    }
    y
}

/// Convolutions whose output rows are narrower than a row tile (KWS's first layer: 5 wide at
/// stride 2, 10x4 taps, one input channel), which the implicit GEMM runs on its input staged by
/// stride phase: the fused chains' bits on every FMA path. Strides (1, 1), (2, 1) and (1, 2),
/// 8 output channels (one vector of AVX2), two groups, and next to them shapes it does not take
/// (deeper than one panel, dilated rows, rows wider than half a tile) with the same bits.
#[test]
fn narrow_output_rows_give_the_fused_chain_bits() {
    use Activation::{None as A0, Relu};
    let cases = [
        conv_params(1, 1, 64, (49, 10), (10, 4), (2, 2), (1, 1), (4, 1, 5, 1), 1, Relu),
        conv_params(1, 3, 16, (6, 4), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, A0),
        conv_params(1, 2, 24, (11, 4), (3, 3), (2, 1), (1, 1), (1, 1, 1, 1), 1, Relu),
        conv_params(1, 2, 24, (7, 9), (3, 3), (1, 2), (1, 1), (1, 1, 1, 1), 1, A0),
        conv_params(2, 1, 8, (20, 8), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 1, A0),
        conv_params(1, 4, 32, (9, 4), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 2, Relu),
        conv_params(1, 16, 16, (6, 4), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, A0),
        conv_params(1, 2, 16, (12, 4), (3, 3), (1, 1), (2, 1), (2, 1, 2, 1), 1, A0),
        conv_params(1, 2, 16, (8, 12), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 1, A0),
    ];
    for (i, p) in cases.into_iter().enumerate() {
        let mut rng = Rng::new(100 + i as u64);
        let x = rng.vec(p.batch * p.in_channels * p.in_h * p.in_w);
        let w = rng.vec(p.out_channels * p.in_channels / p.groups * p.kernel_h * p.kernel_w);
        let b = rng.vec(p.out_channels);
        let want = bits(&fused_chain(&p, &x, &w, &b));
        for (path, y) in on_each_path(|| run_conv(&p, &x, &w, &b)) {
            if path != KernelPath::Portable {
                assert_eq!(bits(&y), want, "{p:?} on {}", path.name());
            }
        }
    }
}

/// Pointwise convolutions and matrix products whose columns run on the FMA column tiles (two
/// vectors of positions per tile, their epilogue in registers) and the columns left on row tiles:
/// on every FMA path, the bits of the fused chains with the scalar epilogue (alpha, bias, then
/// the activation), for every activation (those without a vector form through a copy of the
/// lanes, Clip with `min > max` among them), with a NaN among the inputs.
#[test]
fn column_tiles_give_the_fused_chain_bits_with_every_activation() {
    let acts = [
        Activation::None,
        Activation::Relu,
        Activation::Clip { min: -0.25, max: 0.5 },
        Activation::Clip { min: 0.5, max: -0.25 },
        Activation::LeakyRelu { alpha: 0.1 },
        Activation::HardSwish,
        Activation::Sigmoid,
    ];
    for (i, act) in acts.into_iter().enumerate() {
        // 70 and 65 positions: whole tiles on both paths, then columns left; 8 and 16 rows: the
        // tiles of 4 rows; 125, 144, 75 and 200 positions: on AVX-512, tiles of four vectors,
        // then 61 columns in one whose last vector is masked, 16 in a tile of one, 11 in a masked
        // one, 8 in a masked one after three tiles of four.
        let shapes = [
            (16, 24, (7, 10)),
            (32, 8, (5, 13)),
            (5, 16, (2, 35)),
            (64, 64, (25, 5)),
            (12, 20, (12, 12)),
            (7, 16, (3, 25)),
            (24, 30, (10, 20)),
        ];
        for (c, oc, hw) in shapes {
            let p = conv_params(1, c, oc, hw, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 1, act);
            let mut rng = Rng::new(200 + i as u64);
            let mut x = rng.vec(c * hw.0 * hw.1);
            x[3 * hw.0 * hw.1 / 2] = f32::NAN;
            let (w, b) = (rng.vec(oc * c), rng.vec(oc));
            let want = bits(&fused_chain(&p, &x, &w, &b));
            for (path, y) in on_each_path(|| run_conv(&p, &x, &w, &b)) {
                if path != KernelPath::Portable {
                    assert_eq!(bits(&y), want, "{p:?} on {}", path.name());
                }
            }
        }
        // Matrix products with a scale and a bias per column (on AVX-512 the last two with 29
        // and 56 columns left after a tile of four vectors, in a tile of two and one of four,
        // the bias of the masked vector loaded masked).
        for (m, n, k) in [(12, 70, 9), (13, 93, 20), (13, 120, 20)] {
            let p = MatMul { alpha: 0.75, act, ..MatMul::row_major(m, n, k) };
            let mut rng = Rng::new(300 + i as u64);
            let (a, b, bias) = (rng.vec(m * k), rng.vec(k * n), rng.vec(n));
            let want: Vec<u32> = (0..m * n)
                .map(|o| {
                    let (r, j) = (o / n, o % n);
                    let acc = (0..k).fold(0.0f32, |acc, kk| a[r * k + kk].mul_add(b[kk * n + j], acc));
                    act.apply(0.75 * acc + bias[j]).to_bits()
                })
                .collect();
            for (path, c) in on_each_path(|| {
                let mut c = vec![f32::NAN; m * n];
                matmul(&p, &a, &b, Some(&bias), &mut c);
                c
            }) {
                if path != KernelPath::Portable {
                    assert_eq!(bits(&c), want, "{m}x{n}x{k} {act:?} on {}", path.name());
                }
            }
        }
    }
}

/// Global average pooling: every path gives the portable fold's bits (the x86-64 paths sum
/// blocks of 8 or 16 planes in vectors, the same additions in the same order), for KWS's 64
/// planes of 125 values, blocks with planes left over, and planes of one value.
#[test]
fn global_average_pooling_gives_the_portable_bits_on_every_path() {
    for (i, (c, hw)) in [(64, (25, 5)), (37, (1, 17)), (40, (5, 5)), (19, (1, 1))].into_iter().enumerate() {
        let p = pool_params((2, c), hw, hw, (1, 1), (1, 1), (0, 0, 0, 0), false, false);
        let x = Rng::new(140 + i as u64).vec(2 * c * hw.0 * hw.1);
        let results = on_each_path(|| {
            let mut y = vec![f32::NAN; 2 * c];
            avg_pool2d(&p, &x, &mut y);
            y
        });
        check_every_path_agrees(&format!("{p:?}"), &results);
    }
}

/// 2x2, stride-2 max pooling: every path gives the portable kernel's bits (the x86-64 paths pool
/// a vector of outputs at once, the same combinations in the same order), NaN payloads and the
/// signs of zeros included: rows of 12 outputs (MNIST's, masked), of whole vectors and of a vector
/// and some, an input column and row left over, several images, and windows holding NaNs of two
/// payloads, both zeros and infinities.
#[test]
fn max_pooling_2x2_gives_the_portable_bits_on_every_path() {
    let specials =
        [f32::from_bits(0x7fc0_0001), f32::from_bits(0xffc0_0002), 0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY];
    for (i, (c, hw)) in [(64, (24, 24)), (3, (8, 32)), (5, (9, 41)), (2, (2, 70))].into_iter().enumerate() {
        let p = pool_params((2, c), hw, (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), false, false);
        let mut rng = Rng::new(150 + i as u64);
        let mut x = rng.vec(2 * c * hw.0 * hw.1);
        for v in x.iter_mut() {
            // Half the values special, so that windows hold two NaNs, or a NaN and a zero.
            if rng.below(2) == 0 {
                *v = specials[rng.below(specials.len())];
            }
        }
        let results = on_each_path(|| {
            let mut y = vec![f32::NAN; 2 * c * p.out_h * p.out_w];
            max_pool2d(&p, &x, &mut y);
            y
        });
        check_every_path_agrees(&format!("{p:?}"), &results);
    }
}
