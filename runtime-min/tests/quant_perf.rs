//! Rough throughput of the int8 kernels (portable, and the path this CPU runs by default) next to
//! the f32 kernels on the same shapes (ignored by default; prints figures, asserts nothing about
//! time):
//! `cargo test --release -p sramfit-runtime-min --test quant_perf -- --ignored --nocapture`
mod common;
mod quant_common;

use common::Rng;
use sramfit_runtime_min::quant::{self, ChannelQuant, ImageStrides, RequantRounding};
use sramfit_runtime_min::{
    conv2d, conv2d_scratch_len, detected_kernel_path, force_kernel_path, quant_kernels, Activation, Conv2d, ConvInput,
    ConvWeights, KernelPath,
};
use std::time::Instant;

/// Milliseconds per call of `f`: the best of 7 rounds of 10 calls (the machine is shared), after
/// one warm-up call.
fn millis(mut f: impl FnMut()) -> f64 {
    f();
    (0..7)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..10 {
                f();
            }
            t.elapsed().as_secs_f64() * 1e3 / 10.0
        })
        .fold(f64::INFINITY, f64::min)
}

#[test]
#[ignore]
fn quant_perf() {
    let mut rng = Rng::new(1);
    // (in channels, out channels, input height x width, kernel, groups, stride), "same" padding:
    // KWS DS-CNN's layers (25x5), VWW / MobileNet-style layers, ResNet-8's 3x3.
    let shapes = [
        (64, 64, (25, 5), 3, 64, 1),
        (64, 64, (25, 5), 1, 1, 1),
        (32, 32, (48, 48), 3, 32, 1),
        (32, 64, (48, 48), 1, 1, 1),
        (16, 16, (32, 32), 3, 1, 1),
        (3, 16, (96, 96), 3, 1, 2),
        // MobileNetV2-0.35's: expansion, projection, strided depthwise, the last pointwise.
        (8, 48, (48, 48), 1, 1, 1),
        (48, 8, (24, 24), 1, 1, 1),
        (48, 48, (48, 48), 3, 48, 2),
        (112, 1280, (3, 3), 1, 1, 1),
        // Its depthwise layers on small planes.
        (96, 96, (12, 12), 3, 96, 1),
        (96, 96, (12, 12), 3, 96, 2),
        (144, 144, (6, 6), 3, 144, 1),
        (192, 192, (6, 6), 3, 192, 2),
        (336, 336, (3, 3), 3, 336, 1),
        // VWW's (MobileNetV1-0.25).
        (64, 64, (24, 24), 3, 64, 1),
        (128, 128, (12, 12), 3, 128, 1),
        (256, 256, (3, 3), 3, 256, 1),
    ];
    let default = quant_kernels();
    println!(
        "{:40} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "shape", "int8 NHWC", "int8 NCHW", "NCHW ONNX", "portable", "f32", "GMAC/s i8"
    );
    for (ci, co, (h, w), k, groups, stride) in shapes {
        let pad = k / 2;
        let nchw_p = quant_common::conv_nchw(ci, (h, w), co, (k, k), stride, pad, groups);
        let (oh, ow) = (nchw_p.out_h, nchw_p.out_w);
        let cpg = ci / groups;
        let macs = (co * oh * ow * k * k * cpg) as f64;
        let qp = quant::Conv2d {
            x_strides: ImageStrides::nhwc(ci, h, w),
            y_strides: ImageStrides::nhwc(co, oh, ow),
            ..nchw_p
        };
        let x: Vec<i8> = quant_common::elems(&mut rng, ci * h * w);
        let wq = quant_common::weights(&mut rng, co * k * k * cpg);
        let bias = vec![100; co];
        let (multipliers, shifts) = (vec![1_500_000_000; co], vec![-9; co]);
        let q =
            ChannelQuant { bias: &bias, multipliers: &multipliers, shifts: &shifts, rounding: RequantRounding::Double };
        let mut y = vec![0i8; co * oh * ow];
        let onnx_q = ChannelQuant { rounding: RequantRounding::SingleHalfToEven, ..q };
        let mut run_int8 = |p: &quant::Conv2d, q: &ChannelQuant| {
            let mut scratch = vec![0i8; quant::conv2d_scratch_len(p)];
            millis(|| {
                if groups == ci && groups > 1 {
                    quant::depthwise_conv2d(p, &x, &wq, q, &mut y);
                } else {
                    quant::conv2d(p, &x, &wq, q, &mut y, &mut scratch);
                }
            })
        };
        let nhwc = run_int8(&qp, &q);
        let nchw = run_int8(&nchw_p, &q);
        let onnx = run_int8(&nchw_p, &onnx_q);
        force_kernel_path(KernelPath::Portable).unwrap();
        let portable = run_int8(&nchw_p, &q);
        force_kernel_path(detected_kernel_path()).unwrap();

        let fp = Conv2d {
            batch: 1,
            in_channels: ci,
            in_h: h,
            in_w: w,
            out_channels: co,
            out_h: oh,
            out_w: ow,
            kernel_h: k,
            kernel_w: k,
            stride_h: stride,
            stride_w: stride,
            dilation_h: 1,
            dilation_w: 1,
            pad_top: pad,
            pad_left: pad,
            groups,
            act: Activation::None,
            weights: ConvWeights::Oihw,
            input: ConvInput::Nchw,
        };
        let (xf, wf, bf) = (rng.vec(ci * h * w), rng.vec(co * k * k * cpg), rng.vec(co));
        let mut yf = vec![0.0; co * oh * ow];
        let mut scratch = vec![0.0; conv2d_scratch_len(&fp)];
        let f32_ms = millis(|| conv2d(&fp, &xf, &wf, Some(&bf), &mut yf, &mut scratch));
        let name = format!("{ci}->{co} {h}x{w} k{k} g{groups} s{stride}");
        println!(
            "{name:40} {nhwc:8.3}ms {nchw:8.3}ms {onnx:8.3}ms {portable:8.3}ms {f32_ms:8.3}ms {:10.2}",
            macs / nchw * 1e-6
        );
    }
    println!(
        "int8 kernels: {default} (NHWC and NCHW columns: TFLite's double rounding; NCHW ONNX: one rounding to \
         even), portable (NCHW)"
    );
}
