//! The DSP kernels (their instructions computed in Rust, see [`super::dsp`]) against the portable
//! kernels, bit for bit, over the shapes they take: pointwise and 3x3 windows, NCHW and NHWC,
//! channel counts with and without a multiple of four, odd positions and channels, padding with a
//! nonzero input zero point, stride and dilation, per-tensor and per-channel requantization, int8
//! and uint8 activations, fully connected rows with tails, depthwise kernels of 1 to 4 columns.

use crate::quant::{self, ChannelQuant, Conv2d, FullyConnected, ImageStrides, QuantElem, RequantRounding};

/// xorshift64*.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn byte(&mut self) -> u8 {
        (self.next() >> 56) as u8
    }

    fn below(&mut self, n: u64) -> i32 {
        (self.next() % n) as i32
    }
}

/// Random per-channel constants for `channels` outputs (`per_channel`: one multiplier each),
/// rounded either way at random.
struct Constants {
    bias: [i32; 64],
    multipliers: [i32; 64],
    shifts: [i32; 64],
    channels: usize,
    per_channel: bool,
    rounding: RequantRounding,
}

impl Constants {
    fn new(rng: &mut Rng, channels: usize, per_channel: bool) -> Constants {
        let rounding = if rng.below(2) == 0 { RequantRounding::Double } else { RequantRounding::SingleHalfToEven };
        let mut c = Constants { bias: [0; 64], multipliers: [0; 64], shifts: [0; 64], channels, per_channel, rounding };
        for o in 0..channels {
            c.bias[o] = rng.below(20_001) - 10_000;
            // Mostly right shifts; one channel in four shifts left (a multiplier above 1).
            let real = if rng.below(4) == 0 {
                1.0 + rng.below(1000) as f64 * 1e-3
            } else {
                0.0005 + rng.below(1000) as f64 * 2e-6
            };
            let r = quant::quantize_multiplier(real);
            (c.multipliers[o], c.shifts[o]) = (r.multiplier, r.shift);
        }
        c
    }

    fn quant(&self) -> ChannelQuant<'_> {
        let m = if self.per_channel { self.channels } else { 1 };
        ChannelQuant {
            bias: &self.bias[..self.channels],
            multipliers: &self.multipliers[..m],
            shifts: &self.shifts[..m],
            rounding: self.rounding,
        }
    }
}

/// One convolution: `(in_channels, in_h, in_w, out_channels, kernel, stride, dilation, pad, nhwc)`.
type Case = (usize, usize, usize, usize, usize, usize, usize, usize, bool);

fn geometry((cin, h, w, cout, k, stride, dilation, pad, nhwc): Case) -> Conv2d {
    let span = dilation * (k - 1) + 1;
    let (out_h, out_w) = ((h + 2 * pad - span) / stride + 1, (w + 2 * pad - span) / stride + 1);
    let strides = |c, h, w| if nhwc { ImageStrides::nhwc(c, h, w) } else { ImageStrides::nchw(c, h, w) };
    Conv2d {
        batch: 1,
        in_channels: cin,
        in_h: h,
        in_w: w,
        out_channels: cout,
        out_h,
        out_w,
        kernel_h: k,
        kernel_w: k,
        stride_h: stride,
        stride_w: stride,
        dilation_h: dilation,
        dilation_w: dilation,
        pad_top: pad,
        pad_left: pad,
        groups: 1,
        x_strides: strides(cin, h, w),
        y_strides: strides(cout, out_h, out_w),
        x_zero_point: 0,
        w_zero_point: 0,
        y_zero_point: 0,
        act_min: 0,
        act_max: 0,
    }
}

fn check_conv<T: QuantElem>(rng: &mut Rng, case: Case, to_elem: fn(u8) -> T) {
    let mut p = geometry(case);
    p.x_zero_point = T::MIN + rng.below(256);
    p.y_zero_point = T::MIN + rng.below(256);
    (p.act_min, p.act_max) = (T::MIN + rng.below(20), T::MAX - rng.below(20));
    let x: [T; 1024] = core::array::from_fn(|_| to_elem(rng.byte()));
    let w: [i8; 4096] = core::array::from_fn(|_| rng.byte() as i8);
    let x = &x[..p.in_channels * p.in_h * p.in_w];
    let w = &w[..p.out_channels * p.taps()];
    let per_channel = rng.below(2) == 1;
    let c = Constants::new(rng, p.out_channels, per_channel);
    let outputs = p.out_channels * p.out_h * p.out_w;
    let (mut want, mut got) = ([T::default(); 1024], [T::default(); 1024]);
    let mut scratch = [T::default(); 1024];
    quant::conv2d(&p, x, w, &c.quant(), &mut want[..outputs], &mut scratch);
    assert!(super::conv2d(&p, x, w, &c.quant(), &mut got[..outputs]), "{case:?}: the DSP kernel takes it");
    assert_eq!(got[..outputs], want[..outputs], "{case:?}");
    assert!(want[..outputs].iter().any(|&v| v != want[0]), "{case:?}: a test whose outputs vary");
}

#[test]
fn convolutions_match_the_portable_kernel() {
    let mut rng = Rng(0x5EED_1234_ABCD_0001);
    let cases: &[Case] = &[
        (8, 5, 5, 6, 1, 1, 1, 0, false),  // pointwise, NCHW
        (16, 3, 5, 5, 1, 1, 1, 0, true),  // pointwise, NHWC, odd positions and channels
        (12, 6, 6, 4, 1, 2, 1, 0, false), // pointwise, stride 2
        (4, 5, 4, 7, 3, 1, 1, 1, false),  // 3x3 padded
        (8, 7, 7, 3, 3, 2, 1, 1, true),   // 3x3 stride 2, NHWC
        (3, 9, 9, 5, 3, 2, 1, 1, false),  // 3 input channels (27 taps: a tail)
        (1, 10, 6, 9, 4, 2, 1, 1, false), // 1 input channel (16 taps)
        (2, 7, 7, 4, 3, 1, 2, 2, false),  // dilation 2
        (5, 4, 4, 3, 1, 1, 1, 0, false),  // 5 taps: one group and a tail
        (40, 3, 3, 3, 3, 1, 1, 1, false), // 360 taps: two windows at a time
        (8, 2, 1, 3, 1, 1, 1, 0, false),  // 2 positions: two windows at a time
    ];
    for &case in cases {
        check_conv(&mut rng, case, |b| b as i8);
        check_conv(&mut rng, case, |b| b);
    }
}

#[test]
fn oversized_windows_and_asymmetric_weights_stay_portable() {
    let mut p = geometry((80, 3, 3, 2, 3, 1, 1, 1, false));
    assert!(p.taps() > super::MAX_TAPS);
    let (x, w, mut y) = ([0i8; 720], [0i8; 1440], [0i8; 18]);
    let c = Constants::new(&mut Rng(7), 2, false);
    assert!(!super::conv2d(&p, &x, &w, &c.quant(), &mut y));
    p = geometry((4, 3, 3, 2, 1, 1, 1, 0, false));
    p.w_zero_point = 1;
    assert!(!super::conv2d(&p, &x[..36], &w[..8], &c.quant(), &mut y));
}

fn check_fully_connected<T: QuantElem>(rng: &mut Rng, (batch, k, n): (usize, usize, usize), to_elem: fn(u8) -> T) {
    let p = FullyConnected {
        batch,
        in_features: k,
        out_features: n,
        w_zero_point: 0,
        y_zero_point: T::MIN + rng.below(256),
        act_min: T::MIN,
        act_max: T::MAX,
    };
    let x: [T; 3456] = core::array::from_fn(|_| to_elem(rng.byte()));
    let w: [i8; 4608] = core::array::from_fn(|_| rng.byte() as i8);
    let (x, w) = (&x[..batch * k], &w[..n * k]);
    let c = Constants::new(rng, n, n > 1);
    let (mut want, mut got) = ([T::default(); 64], [T::default(); 64]);
    quant::fully_connected(&p, x, w, &c.quant(), &mut want[..batch * n]);
    assert!(super::fully_connected(&p, x, w, &c.quant(), &mut got[..batch * n]), "{batch}x{k}x{n}");
    assert_eq!(got[..batch * n], want[..batch * n], "{batch}x{k}x{n}");
}

#[test]
fn fully_connected_matches_the_portable_kernel() {
    let mut rng = Rng(0x5EED_1234_ABCD_0002);
    for shape in [(1, 64, 12), (2, 27, 7), (1, 640, 5), (3, 3, 1), (1, 1152, 4)] {
        check_fully_connected(&mut rng, shape, |b| b as i8);
        check_fully_connected(&mut rng, shape, |b| b);
    }
}

fn check_depthwise<T: QuantElem>(rng: &mut Rng, case: Case, to_elem: fn(u8) -> T) {
    let mut p = geometry(case);
    if p.pad_left > 1 {
        // Padding above and below only (rows wholly outside the input, no column outside).
        p.pad_left = 0;
        p.out_w = (p.in_w - p.kernel_w) / p.stride_w + 1;
        p.y_strides = ImageStrides::nchw(p.out_channels, p.out_h, p.out_w);
    }
    p.groups = p.in_channels;
    p.x_zero_point = T::MIN + rng.below(256);
    p.y_zero_point = T::MIN + rng.below(256);
    (p.act_min, p.act_max) = (T::MIN + rng.below(20), T::MAX - rng.below(20));
    let x: [T; 1024] = core::array::from_fn(|_| to_elem(rng.byte()));
    let w: [i8; 256] = core::array::from_fn(|_| rng.byte() as i8);
    let x = &x[..p.in_channels * p.in_h * p.in_w];
    let w = &w[..p.out_channels * p.kernel_h * p.kernel_w];
    let per_channel = rng.below(2) == 1;
    let c = Constants::new(rng, p.out_channels, per_channel);
    let outputs = p.out_channels * p.out_h * p.out_w;
    let (mut want, mut got) = ([T::default(); 1024], [T::default(); 1024]);
    quant::depthwise_conv2d(&p, x, w, &c.quant(), &mut want[..outputs]);
    assert!(super::depthwise_conv2d(&p, x, w, &c.quant(), &mut got[..outputs]), "{case:?}: the DSP kernel takes it");
    assert_eq!(got[..outputs], want[..outputs], "{case:?}");
    assert!(want[..outputs].iter().any(|&v| v != want[0]), "{case:?}: a test whose outputs vary");
}

#[test]
fn depthwise_convolutions_match_the_portable_kernel() {
    let mut rng = Rng(0x5EED_1234_ABCD_0003);
    let cases: &[Case] = &[
        (4, 7, 5, 4, 3, 1, 1, 1, false),  // KWS's 3x3 on a narrow plane, padded
        (3, 9, 10, 3, 3, 2, 1, 1, false), // stride 2
        (5, 6, 6, 5, 3, 1, 1, 1, true),   // NHWC
        (2, 8, 8, 2, 4, 1, 1, 2, false),  // 4x4 (two full pairs), padded above and below only
        (3, 5, 7, 3, 1, 1, 1, 0, false),  // 1x1
        (2, 9, 9, 2, 2, 2, 1, 0, false),  // 2x2 stride 2
    ];
    for &case in cases {
        check_depthwise(&mut rng, case, |b| b as i8);
        check_depthwise(&mut rng, case, |b| b);
    }
}
