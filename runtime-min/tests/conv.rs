mod common;
use common::*;
use sramfit_runtime_min::*;

fn check(p: Conv2d, with_bias: bool, seed: u64) {
    let mut rng = Rng::new(seed);
    let icg = p.in_channels / p.groups;
    let x = rng.vec(p.batch * p.in_channels * p.in_h * p.in_w);
    let w = rng.vec(p.out_channels * icg * p.kernel_h * p.kernel_w);
    let b = rng.vec(p.out_channels);
    let bias = if with_bias { Some(&b[..]) } else { None };
    let (want, mag) = conv_ref(&p, &x, &w, bias);
    // The fastest scratch, small im2col tiles (3 positions), and none (direct convolution).
    // Packed weights, with and without room for whole vectors past the last output channel
    // (read in place, or packed at run time for the last rows): the same bits as OIHW.
    let per_position = conv2d_scratch_per_position(&p);
    let packed = [(ConvWeights::KMajor, k_major(&p, &w, 32)), (ConvWeights::KMajor, k_major(&p, &w, 0))];
    for scratch_len in [conv2d_scratch_len(&p), 3 * per_position, 0] {
        let run = |weights: ConvWeights, w: &[f32]| {
            let mut y = vec![f32::NAN; p.batch * p.out_channels * p.out_h * p.out_w];
            let mut scratch = vec![f32::NAN; scratch_len];
            conv2d(&Conv2d { weights, ..p }, &x, w, bias, &mut y, &mut scratch);
            y
        };
        let y = run(ConvWeights::Oihw, &w);
        assert_close_mag(&y, &want, Some(&mag), &format!("{p:?} with {scratch_len} scratch elements"));
        // The same input NHWC, read in place.
        let x_nhwc = nchw_to_nhwc(&x, (p.batch, p.in_channels, p.in_h, p.in_w));
        let mut y_nhwc = vec![f32::NAN; y.len()];
        let mut scratch = vec![f32::NAN; scratch_len.max(3 * per_position)];
        conv2d(&Conv2d { input: ConvInput::Nhwc, ..p }, &x_nhwc, &w, bias, &mut y_nhwc, &mut scratch[..scratch_len]);
        assert_close_mag(&y_nhwc, &want, Some(&mag), &format!("{p:?} NHWC with {scratch_len} scratch elements"));
        for (weights, w) in &packed {
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&run(*weights, w)), bits(&y), "{p:?}: {weights:?} with {} weights", w.len());
        }
    }
}

const A0: Activation = Activation::None;

/// [`check`] of each case (a convolution, with bias or not), seeds from `seed` on.
fn check_all<const N: usize>(cases: [(Conv2d, bool); N], seed: u64) {
    for (i, (p, with_bias)) in cases.into_iter().enumerate() {
        check(p, with_bias, seed + i as u64);
    }
}

#[test]
fn pointwise_gemm_without_scratch() {
    let p = conv_params(2, 5, 7, (6, 5), (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 1, A0);
    assert_eq!(conv2d_scratch_len(&p), 0);
    check(p, true, 1);
    check(p, false, 2);
    // Many channels: K > the GEMM panel depth, M not a multiple of the tile.
    let p = conv_params(1, 150, 13, (3, 7), (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 1, Activation::Relu);
    check(p, true, 3);
    // One position (a fully connected layer as a 1x1 convolution): on the FMA paths, packed
    // weights run the matrix-vector tiles, OIHW ones the row tiles.
    let p = conv_params(1, 70, 300, (1, 1), (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 1, Activation::Relu);
    check(p, true, 4);
}

#[test]
fn scratch_len_is_const() {
    const P: Conv2d = Conv2d {
        batch: 1,
        in_channels: 4,
        in_h: 10,
        in_w: 10,
        out_channels: 8,
        out_h: 10,
        out_w: 10,
        kernel_h: 3,
        kernel_w: 3,
        stride_h: 1,
        stride_w: 1,
        dilation_h: 1,
        dilation_w: 1,
        pad_top: 1,
        pad_left: 1,
        groups: 1,
        act: Activation::None,
        weights: ConvWeights::Oihw,
        input: ConvInput::Nchw,
    };
    const L: usize = conv2d_scratch_len(&P);
    assert_eq!(L, 4 * 9 * CONV_TILE);
    const DW: Conv2d = Conv2d { groups: 4, out_channels: 4, ..P };
    const LDW: usize = conv2d_scratch_len(&DW);
    assert_eq!(LDW, 0);
    const SMALL: Conv2d = Conv2d { in_h: 3, in_w: 3, out_h: 3, out_w: 3, ..P };
    assert_eq!(conv2d_scratch_len(&SMALL), 4 * 9 * 9);
}

#[test]
fn general_3x3() {
    let p = conv_params(1, 3, 10, (9, 7), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, Activation::Relu);
    check(p, true, 10);
    // No padding, batch 2, odd channel counts.
    let p = conv_params(2, 3, 5, (8, 8), (3, 3), (1, 1), (1, 1), (0, 0, 0, 0), 1, A0);
    check(p, true, 11);
}

#[test]
fn all_activations() {
    for (i, act) in ACTS.iter().enumerate() {
        let p = conv_params(1, 2, 3, (5, 6), (3, 2), (1, 1), (1, 1), (1, 0, 1, 1), 1, *act);
        check(p, i % 2 == 0, 20 + i as u64);
    }
}

#[test]
fn strided_dilated_asymmetric_pads() {
    let p = conv_params(1, 3, 4, (11, 10), (3, 2), (2, 3), (2, 2), (0, 2, 1, 0), 1, A0);
    check(p, true, 30);
    let p = conv_params(2, 2, 3, (9, 12), (2, 3), (1, 2), (3, 1), (3, 0, 0, 2), 1, Activation::Tanh);
    check(p, true, 31);
}

/// Padded layers with many input channels: on the FMA paths, bands of output rows over
/// zero-padded copies of the input rows they read (10 and 6 bands; stride 2, dilation, uneven
/// padding, bottom and right padding past the input).
#[test]
fn padded_bands_of_output_rows() {
    let p = conv_params(1, 64, 16, (40, 40), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, Activation::Relu);
    check(p, true, 60);
    let p = conv_params(1, 48, 24, (31, 34), (3, 3), (2, 2), (2, 2), (2, 1, 3, 2), 1, A0);
    check(p, true, 61);
}

#[test]
fn stride_larger_than_kernel() {
    let p = conv_params(1, 3, 5, (13, 14), (2, 2), (3, 4), (1, 1), (0, 0, 0, 0), 1, A0);
    check(p, true, 40);
    // 1x1 with stride 2 and padding (not pointwise: needs im2col).
    let p = conv_params(1, 4, 6, (7, 8), (1, 1), (2, 2), (1, 1), (1, 1, 0, 0), 1, A0);
    assert!(conv2d_scratch_len(&p) > 0);
    check(p, true, 41);
}

#[test]
fn grouped() {
    let p = conv_params(2, 4, 6, (7, 6), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 2, A0);
    check(p, true, 50);
    let p = conv_params(1, 6, 9, (5, 9), (3, 1), (2, 1), (1, 2), (0, 1, 2, 0), 3, Activation::Relu);
    check(p, false, 51);
}

#[test]
fn depthwise() {
    let p = conv_params(1, 5, 5, (9, 8), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 5, Activation::LeakyRelu { alpha: 0.2 });
    assert_eq!(conv2d_scratch_len(&p), 0);
    check(p, true, 60);
    // Channel multiplier 2, dilation, asymmetric pads, batch 2.
    let p = conv_params(2, 3, 6, (10, 11), (3, 3), (1, 2), (2, 2), (2, 1, 0, 3), 3, A0);
    check(p, true, 61);
    // Single input channel, groups 1 (also uses the direct path).
    let p = conv_params(1, 1, 4, (8, 7), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, A0);
    assert_eq!(conv2d_scratch_len(&p), 0);
    check(p, false, 62);
    // Stride larger than kernel.
    let p = conv_params(1, 4, 4, (12, 12), (2, 2), (3, 3), (1, 1), (0, 0, 0, 0), 4, A0);
    check(p, true, 63);
    // Single input channel, 20 output channels, a KWS-like 10x4 kernel with stride 2 and
    // asymmetric pads (the implicit GEMM on FMA builds).
    let p = conv_params(1, 1, 20, (25, 12), (10, 4), (2, 2), (1, 1), (4, 1, 5, 1), 1, Activation::Relu);
    assert_eq!(conv2d_scratch_len(&p), 0);
    check(p, true, 64);
}

/// 3x3 depthwise convolutions on small planes (the padded-plane kernel on FMA builds: stride
/// phases, flattened rows) and on planes just inside and outside its 4096-float limit.
#[test]
fn depthwise_small_planes() {
    let dw = |c: usize, m: usize, hw: (usize, usize), s: (usize, usize), d: (usize, usize), pads, act| {
        conv_params(1, c, c * m, hw, (3, 3), s, d, pads, c, act)
    };
    // KWS: 64 channels of 25x5, stride 1, pad 1.
    check(dw(64, 1, (25, 5), (1, 1), (1, 1), (1, 1, 1, 1), Activation::Relu), true, 100);
    // Odd sizes, asymmetric pads, batch 2.
    let p = dw(3, 1, (7, 3), (1, 1), (1, 1), (0, 2, 1, 0), Activation::Clip { min: -0.5, max: 0.75 });
    check(Conv2d { batch: 2, ..p }, true, 101);
    // Stride 2: odd plane with pad 1, even plane with TF "same" pads (bottom/right only).
    check(dw(4, 1, (9, 11), (2, 2), (1, 1), (1, 1, 1, 1), Activation::Relu), true, 102);
    check(dw(5, 1, (12, 12), (2, 2), (1, 1), (0, 0, 1, 1), A0), false, 103);
    // Mixed strides with dilation, stride 3 (the generic phase copy), channel multiplier 2.
    check(dw(3, 1, (10, 9), (2, 1), (2, 2), (2, 1, 0, 2), A0), true, 104);
    check(dw(2, 1, (8, 13), (1, 3), (1, 2), (1, 0, 1, 3), A0), true, 105);
    check(dw(2, 1, (11, 10), (3, 3), (1, 1), (1, 1, 1, 1), A0), true, 106);
    check(dw(3, 2, (6, 5), (2, 2), (1, 1), (1, 1, 1, 1), Activation::HardSwish), true, 107);
    // Pads wider than the kernel (border outputs see only padding: the bias), 1-wide planes,
    // no padding.
    check(dw(2, 1, (2, 2), (1, 1), (1, 1), (3, 3, 3, 3), Activation::Relu), true, 108);
    check(dw(2, 1, (6, 1), (1, 1), (1, 1), (1, 1, 1, 1), A0), true, 109);
    check(dw(3, 1, (5, 7), (1, 1), (1, 1), (0, 0, 0, 0), A0), true, 110);
    for (i, act) in ACTS.iter().enumerate() {
        check(dw(2, 1, (7, 6), (2, 2), (1, 1), (1, 1, 1, 1), *act), i % 2 == 0, 120 + i as u64);
    }
    // Padded planes of exactly 64 x 64 = 4096 floats (stride 1 and 2) and of 65 x 65 (row-wise).
    check(dw(1, 1, (62, 62), (1, 1), (1, 1), (1, 1, 1, 1), A0), true, 130);
    check(dw(1, 1, (62, 62), (2, 2), (1, 1), (1, 1, 1, 1), A0), true, 131);
    check(dw(1, 1, (63, 63), (1, 1), (1, 1), (1, 1, 1, 1), A0), true, 132);
}

#[test]
fn conv1d() {
    let p = conv_params(2, 4, 3, (1, 20), (1, 5), (1, 2), (1, 1), (0, 2, 0, 2), 1, A0);
    check(p, true, 70);
    let p = conv_params(1, 4, 4, (1, 17), (1, 3), (1, 1), (1, 3), (0, 3, 0, 3), 4, A0);
    check(p, true, 71);
}

#[test]
fn large_tiles_and_deep_k() {
    // K = 16 * 9 = 144 > panel depth, 143 positions > CONV_TILE, 9 output
    // channels (not a multiple of the 4-row tile).
    let p = conv_params(2, 16, 9, (11, 13), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, Activation::HardSwish);
    check(p, true, 80);
    // Large output width not a multiple of anything.
    let p = conv_params(1, 3, 8, (5, 70), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, A0);
    check(p, true, 81);
    // K = 40 * 9 = 360: three im2col blocks of at most IM2COL_K_BLOCK rows (the scratch holds
    // one), 21 output channels, 80 positions.
    let p = conv_params(1, 40, 21, (8, 10), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, Activation::Relu);
    assert_eq!(conv2d_scratch_per_position(&p), IM2COL_K_BLOCK);
    check(p, true, 82);
    // Few positions, deep K (= 120 * 9 = 1080): 2x2, 2x3 and 4x4 outputs, padding on every side.
    let p = conv_params(1, 120, 9, (4, 4), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 1, Activation::Relu);
    check(p, true, 83);
    let p = conv_params(1, 30, 12, (3, 5), (3, 3), (2, 2), (1, 1), (1, 1, 1, 0), 1, A0);
    check(p, false, 84);
    let p = conv_params(1, 70, 8, (4, 4), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, A0);
    check(p, true, 85);
    // At most 4 positions and im2col blocks of 64K weights or more (512+ output channels by
    // IM2COL_K_BLOCK): on x86-64 the weights, read in place, are streamed depth first, whole row
    // blocks keeping their partial sums as vectors in C between passes (520 channels: a last
    // block of 8 rows keeps them as C's values); 4 and 3 columns.
    let p = conv_params(1, 16, 520, (4, 4), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 1, Activation::Relu);
    check(p, true, 86);
    let p = conv_params(1, 32, 512, (1, 3), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, A0);
    check(p, false, 87);
}

#[test]
fn implicit_gemm_row_tiles() {
    // Enough output channels for the FMA kernels (8+: one-vector tiles of 12 positions; 17+:
    // two-vector tiles of 6) and rows wide enough for whole runs of inside positions, at stride 1
    // and 2, with dilation and a wide kernel, next to border positions and leftover columns.
    let p = conv_params(1, 5, 24, (15, 31), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 1, Activation::Relu);
    check(p, true, 90);
    let p = conv_params(1, 3, 12, (9, 40), (3, 5), (1, 1), (2, 2), (2, 4, 2, 4), 1, A0);
    check(p, true, 91);
    let p = conv_params(2, 6, 40, (7, 29), (3, 3), (1, 2), (1, 1), (1, 0, 1, 0), 1, Activation::Relu);
    check(p, false, 92);
    // 8 output channels (one-vector tiles of 12 positions on AVX2, stored as two transposed
    // blocks of 8 and 4 columns), 3 input channels at stride 2: a first layer's shape.
    let p = conv_params(1, 3, 8, (33, 58), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 1, Activation::Relu);
    check(p, true, 93);
    // Rows that leave more than half a tile after their whole runs, whose last row tile overlaps
    // the one before it where weights are read in place (`KMajor`; OIHW weights 144 deep take two
    // passes, whose tiles add to partial sums and do not overlap): the same bits either way.
    // 32-wide rows in tiles of 12 (AVX-512, 16 channels), 11-wide rows in tiles of 6 (24
    // channels), 22-wide rows in tiles of 12 (AVX2, 8 channels), stride 2 to 20-wide rows.
    let p = conv_params(1, 16, 16, (32, 32), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, Activation::Relu);
    check(p, true, 94);
    let p = conv_params(1, 16, 24, (11, 11), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, A0);
    check(p, true, 95);
    let p = conv_params(1, 16, 8, (22, 22), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, Activation::Relu);
    check(p, false, 96);
    let p = conv_params(1, 16, 16, (40, 40), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 1, A0);
    check(p, true, 97);
    // Rows of whole tiles of 12 (AVX-512: two vectors of channels by 12 positions, then one
    // vector for the 8 channels left), at stride 1 and 2.
    let p = conv_params(1, 8, 40, (6, 26), (3, 3), (1, 1), (1, 1), (0, 0, 0, 0), 1, Activation::Relu);
    check(p, true, 98);
    let p = conv_params(1, 8, 36, (9, 49), (3, 3), (2, 2), (1, 1), (0, 0, 0, 0), 1, A0);
    check(p, true, 99);
}

#[test]
fn row_tiles_as_wide_as_the_product() {
    // Products of 7 to 12 columns (pointwise layers on maps of 7 to 12 positions: MobileNetV2's
    // and VWW's 3x3 maps), of 16 and of multiples of 12, which AVX-512 computes in tiles of two
    // vectors of rows by all the columns (16: by 8; multiples of 12: by 12) when A's rows are read in place (k-major weights; OIHW ones run
    // the column tiles, whose bits `check` compares them with); 40 output channels, so a block
    // of 8 rows is left to the one-vector tiles; a 3x3 layer on a 3x3 map whose im2col blocks
    // add to C.
    let relu = Activation::Relu;
    let pw = |hw| conv_params(1, 100, 40, hw, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 1, relu);
    let cases = [
        (pw((1, 7)), true),
        (pw((2, 4)), false),
        (pw((3, 3)), true),
        (pw((2, 5)), true),
        (pw((1, 11)), false),
        (pw((3, 4)), true),
        (pw((4, 4)), true),
        (pw((4, 6)), false),
        (pw((6, 6)), true),
        (conv_params(1, 20, 40, (3, 3), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, A0), true),
    ];
    check_all(cases, 150);
}

#[test]
fn streamed_weights_few_columns() {
    // Products of at most 4 columns (output positions) over 64K weights or more, which the FMA
    // kernels stream depth by depth with the partial sums beside them (k-major weights; OIHW
    // ones run the row tiles, whose bits `check` compares them with): 4, 3 (the scratch of 3
    // positions) and 2 columns, more rows than one chunk of sums holds (1100 output channels),
    // depths not a multiple of the 4 per update (63), and im2col blocks adding to C (288 deep).
    let relu = Activation::Relu;
    let cases = [
        (conv_params(1, 7, 1100, (2, 2), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, relu), true),
        (conv_params(1, 7, 1100, (2, 1), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, A0), false),
        (conv_params(1, 32, 520, (2, 2), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, relu), true),
    ];
    check_all(cases, 130);
}

#[test]
fn implicit_gemm_column_tiles() {
    // Rows of whole two-vector tiles (32 or 64 positions on AVX-512) or one vector wide (16: two
    // rows a tile, an odd last row alone), stride 1 along the rows: on AVX-512 these run on the
    // column tiles (vectors of positions read from the input rows in place, or from the padded
    // band's rows), the weights broadcast from their k-major rows; OIHW weights run the row
    // tiles, whose bits `check` compares them with. Tiles of 8 output channels (16 channels),
    // of 12 (24, and 20: the last block's rows past the 20th computed, never stored), stride 2
    // and dilation 2 down the rows with a 5x5 kernel, groups, every activation with and without
    // a vector form, and a first layer's shallow window (3 channels, 27 deep), which would
    // otherwise take the im2col path.
    let relu = Activation::Relu;
    let cases = [
        (conv_params(1, 16, 16, (32, 32), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, relu), true),
        (conv_params(1, 9, 24, (15, 16), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, A0), true),
        (conv_params(1, 8, 20, (5, 66), (3, 3), (1, 1), (1, 1), (0, 0, 0, 0), 1, relu), false),
        (conv_params(1, 3, 16, (17, 36), (5, 5), (2, 1), (2, 1), (0, 0, 0, 0), 1, A0), true),
        (conv_params(2, 16, 32, (7, 16), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 2, relu), true),
        (conv_params(1, 3, 16, (9, 32), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, relu), true),
    ];
    check_all(cases, 110);
    // Rows one or two vectors wide at stride 1 (on AVX-512), in tiles of four vectors over four
    // or two output rows: 16 output channels in tiles of 4 rows, 24 in tiles of 6, 64 and 32 in
    // tiles of 6 and the last 4 or 8 rows in tiles of 4; numbers of rows that leave one, two
    // and three rows to the tiles of one row or two, dilation down the rows, two groups.
    let cases = [
        (conv_params(1, 16, 16, (33, 32), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, relu), true),
        (conv_params(1, 8, 64, (6, 32), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, A0), true),
        (conv_params(1, 16, 32, (14, 16), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, relu), true),
        (conv_params(1, 8, 24, (11, 16), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, A0), false),
        (conv_params(1, 4, 16, (9, 16), (3, 3), (1, 1), (2, 1), (2, 1, 2, 1), 1, relu), true),
        (conv_params(1, 16, 32, (7, 32), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 2, relu), true),
    ];
    check_all(cases, 200);
    // Stride 2 along the rows, from bands staged by column phase: rows of three vectors (a last
    // tile of one vector, 8, 16 and 12 rows: VWW's and MobileNetV2's first layers, 20 channels
    // with rows computed and never stored), an odd and an even number of padding columns on the
    // left, an odd input width, rows one vector wide (an odd number of them), a 5x5 kernel, an
    // even kernel width, dilation down the rows, stride 1 down the rows, bands of many rows, two
    // images of two groups.
    let cases = [
        (conv_params(1, 3, 8, (21, 96), (3, 3), (2, 2), (1, 1), (0, 0, 1, 1), 1, relu), true),
        (
            conv_params(
                1,
                3,
                16,
                (20, 96),
                (3, 3),
                (2, 2),
                (1, 1),
                (0, 0, 1, 1),
                1,
                Activation::Clip { min: 0.0, max: 6.0 },
            ),
            true,
        ),
        (conv_params(1, 3, 20, (9, 96), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 1, A0), false),
        (conv_params(1, 5, 24, (8, 95), (3, 3), (2, 2), (1, 1), (0, 0, 0, 2), 1, relu), true),
        (conv_params(1, 16, 32, (32, 32), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 1, relu), true),
        (conv_params(1, 2, 12, (13, 32), (5, 5), (2, 2), (1, 1), (2, 2, 2, 2), 1, A0), true),
        (conv_params(1, 4, 12, (10, 64), (3, 4), (1, 2), (1, 1), (0, 1, 0, 1), 1, relu), true),
        (conv_params(1, 4, 8, (20, 64), (3, 3), (2, 2), (2, 1), (2, 1, 2, 1), 1, A0), true),
        (conv_params(1, 3, 16, (96, 96), (3, 3), (2, 2), (1, 1), (0, 0, 1, 1), 1, relu), true),
        (conv_params(2, 8, 16, (10, 64), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 2, relu), true),
    ];
    check_all(cases, 130);
    for (i, act) in ACTS.iter().enumerate() {
        let p = conv_params(1, 8, 12, (3, 32), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, *act);
        check(p, i % 2 == 0, 120 + i as u64);
    }
}

#[test]
fn implicit_gemm_kernel_columns() {
    // Stride 1, output rows narrower than a row tile, positions filling tiles of four vectors
    // (on AVX-512): these run on the column tiles over the input staged once per kernel column,
    // weights packed k-major; OIHW weights run the row tiles, whose bits `check` compares them
    // with. ResNet-8's 8x8 layer; a 7x7 map (its last vector one position, masked) with 24
    // output channels; 150 input channels staged in three chunks of 50 (the sums of the first
    // two stored, the third's epilogue applied); dilation 2 both ways on an 11x11 map; a 5x3
    // kernel with asymmetric padding; two images of two groups of 16 channels; 10 output
    // channels (a last tile of two rows); a 64x1 map, whose outer kernel columns read only
    // padding; every activation, with and without a vector form.
    let relu = Activation::Relu;
    let cases = [
        (conv_params(1, 64, 64, (8, 8), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, relu), true),
        (conv_params(1, 20, 24, (7, 7), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, A0), false),
        (conv_params(1, 150, 16, (8, 8), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, relu), true),
        (conv_params(1, 12, 16, (11, 11), (3, 3), (1, 1), (2, 2), (2, 2, 2, 2), 1, A0), true),
        (conv_params(1, 8, 16, (8, 8), (5, 3), (1, 1), (1, 1), (2, 0, 2, 2), 1, relu), true),
        (conv_params(2, 32, 32, (8, 8), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 2, relu), true),
        (conv_params(1, 16, 10, (8, 8), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, A0), true),
        (conv_params(1, 8, 16, (64, 1), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, relu), true),
    ];
    check_all(cases, 140);
    for (i, act) in ACTS.iter().enumerate() {
        let p = conv_params(1, 8, 16, (7, 7), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, *act);
        check(p, i % 2 == 1, 150 + i as u64);
    }
}

#[test]
fn implicit_gemm_strided_pointwise() {
    // Strided 1x1 convolutions (ResNet's shortcuts), which the FMA paths run as bands of the
    // subsampled input times the weights: ResNet-8's two (to 16x16 and to 8x8), ResNet-18's 128
    // deep to 4x4, rows of 20 (a masked last vector on AVX-512), an odd width (rows of 17), strides
    // 3 by 2, and two images of two groups; packed weights give the bits of OIHW ones (`check`).
    let relu = Activation::Relu;
    let cases = [
        (conv_params(1, 16, 32, (32, 32), (1, 1), (2, 2), (1, 1), (0, 0, 0, 0), 1, relu), true),
        (conv_params(1, 32, 64, (16, 16), (1, 1), (2, 2), (1, 1), (0, 0, 0, 0), 1, A0), true),
        (conv_params(1, 128, 256, (8, 8), (1, 1), (2, 2), (1, 1), (0, 0, 0, 0), 1, A0), false),
        (conv_params(1, 24, 16, (9, 39), (1, 1), (2, 2), (1, 1), (0, 0, 0, 0), 1, relu), true),
        (conv_params(1, 16, 24, (12, 33), (1, 1), (2, 2), (1, 1), (0, 0, 0, 0), 1, A0), true),
        (conv_params(1, 8, 24, (17, 31), (1, 1), (3, 2), (1, 1), (0, 0, 0, 0), 1, relu), false),
        (conv_params(2, 32, 32, (16, 16), (1, 1), (2, 2), (1, 1), (0, 0, 0, 0), 2, relu), true),
    ];
    check_all(cases, 160);
}

#[test]
fn empty() {
    let p = conv_params(0, 3, 4, (5, 5), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, A0);
    check(p, true, 90);
}

// ---------------------------------------------------------------- transpose

fn convt_ref(p: &ConvTranspose2d, x: &[f32], w: &[f32], bias: Option<&[f32]>) -> (Vec<f64>, Vec<f64>) {
    let icg = p.in_channels / p.groups;
    let ocg = p.out_channels / p.groups;
    let plane = p.out_h * p.out_w;
    let mut y = vec![0.0f64; p.batch * p.out_channels * plane];
    let mut m = vec![0.0f64; y.len()];
    for n in 0..p.batch {
        for oc in 0..p.out_channels {
            let b = bias.map_or(0.0, |b| b[oc] as f64);
            for i in 0..plane {
                y[(n * p.out_channels + oc) * plane + i] = b;
                m[(n * p.out_channels + oc) * plane + i] = b.abs();
            }
        }
        for ic in 0..p.in_channels {
            let g = ic / icg;
            for ocl in 0..ocg {
                let oc = g * ocg + ocl;
                for ih in 0..p.in_h {
                    for iw in 0..p.in_w {
                        for kh in 0..p.kernel_h {
                            for kw in 0..p.kernel_w {
                                let oh = (ih * p.stride_h + kh * p.dilation_h) as isize - p.pad_top as isize;
                                let ow = (iw * p.stride_w + kw * p.dilation_w) as isize - p.pad_left as isize;
                                if oh < 0 || ow < 0 || oh >= p.out_h as isize || ow >= p.out_w as isize {
                                    continue;
                                }
                                let xv = x[((n * p.in_channels + ic) * p.in_h + ih) * p.in_w + iw] as f64;
                                let wv = w[((oc * icg + ic % icg) * p.kernel_h + kh) * p.kernel_w + kw] as f64;
                                let o = (n * p.out_channels + oc) * plane + oh as usize * p.out_w + ow as usize;
                                y[o] += xv * wv;
                                m[o] += (xv * wv).abs();
                            }
                        }
                    }
                }
            }
        }
    }
    (y, m)
}

#[allow(clippy::too_many_arguments)]
fn check_t(
    batch: usize,
    ic: usize,
    oc: usize,
    (in_h, in_w): (usize, usize),
    (kh, kw): (usize, usize),
    (sh, sw): (usize, usize),
    (dh, dw): (usize, usize),
    (pt, pl, pb, pr): (usize, usize, usize, usize),
    (oph, opw): (usize, usize),
    groups: usize,
    seed: u64,
) {
    let out_h = (in_h - 1) * sh + dh * (kh - 1) + 1 + oph - pt - pb;
    let out_w = (in_w - 1) * sw + dw * (kw - 1) + 1 + opw - pl - pr;
    let p = ConvTranspose2d {
        batch,
        in_channels: ic,
        in_h,
        in_w,
        out_channels: oc,
        out_h,
        out_w,
        kernel_h: kh,
        kernel_w: kw,
        stride_h: sh,
        stride_w: sw,
        dilation_h: dh,
        dilation_w: dw,
        pad_top: pt,
        pad_left: pl,
        groups,
    };
    let mut rng = Rng::new(seed);
    let x = rng.vec(batch * ic * in_h * in_w);
    let w = rng.vec(oc * (ic / groups) * kh * kw);
    let b = rng.vec(oc);
    for bias in [Some(&b[..]), None] {
        let mut y = vec![f32::NAN; batch * oc * out_h * out_w];
        conv_transpose2d(&p, &x, &w, bias, &mut y);
        let (want, mag) = convt_ref(&p, &x, &w, bias);
        assert_close_mag(&y, &want, Some(&mag), &format!("{p:?}"));
    }
}

#[test]
fn conv_transpose() {
    check_t(1, 3, 4, (5, 6), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), (1, 1), 1, 100);
    check_t(2, 4, 6, (4, 5), (3, 2), (1, 1), (1, 1), (0, 0, 0, 0), (0, 0), 2, 101);
    check_t(1, 2, 3, (5, 4), (3, 3), (2, 3), (2, 1), (2, 0, 1, 2), (1, 2), 1, 102);
    check_t(1, 3, 3, (6, 6), (2, 2), (3, 3), (1, 1), (0, 0, 0, 0), (0, 0), 3, 103);
    check_t(1, 4, 2, (1, 9), (1, 4), (1, 2), (1, 1), (0, 1, 0, 1), (0, 0), 1, 104);
}
