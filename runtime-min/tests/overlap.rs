//! The overlapped depthwise convolution (`conv2d_overlapped`): on every kernel path this CPU has,
//! with the output placed at the smallest displacement the plane-order contract allows, it gives
//! the same bits as `conv2d` on separate buffers, and it refuses (panics) one element closer.
//!
//! Forcing a path is process-wide, so every test here holds [`PATHS`] while it runs.

mod common;

use common::*;
use sramfit_runtime_min::*;
use std::sync::Mutex;

/// Held by every test of this file: the path in force is process-wide.
static PATHS: Mutex<()> = Mutex::new(());

/// Depthwise convolutions reaching every depthwise kernel: 3x3 on a small plane (x86-64's
/// padded-plane kernel) at stride 1 and 2, with dilation, on a large plane (row-wise kernel),
/// a 5x5 and a 1x1 one (direct convolution everywhere), a padding that makes the output larger
/// than the input, with and without an activation.
fn cases() -> Vec<Conv2d> {
    use Activation::{None as A0, Relu};
    vec![
        conv_params(1, 8, 8, (12, 12), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 8, Relu),
        conv_params(1, 6, 6, (17, 15), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 6, A0),
        conv_params(1, 5, 5, (14, 14), (3, 3), (1, 1), (2, 2), (2, 2, 2, 2), 5, A0),
        conv_params(1, 4, 4, (80, 70), (3, 3), (2, 1), (1, 2), (1, 2, 1, 2), 4, Relu),
        conv_params(1, 7, 7, (9, 11), (5, 5), (1, 1), (1, 1), (2, 2, 2, 2), 7, A0),
        conv_params(1, 3, 3, (6, 6), (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 3, A0),
        conv_params(1, 4, 4, (5, 5), (3, 3), (1, 1), (1, 1), (2, 2, 2, 2), 4, A0),
    ]
}

/// The smallest element offset of the input after the output's start that the contract allows:
/// output plane `q` ends at or before input plane `q` starts, for every `q` (derived here from
/// the statement, not from the kernel).
fn min_input_offset(o: PlaneOrder) -> usize {
    (0..o.planes).map(|q| ((q + 1) * o.out_plane).saturating_sub(q * o.in_plane)).max().unwrap_or(0)
}

/// Output bits of the overlapped call with the input `at` elements after the output's start.
fn overlapped(p: &Conv2d, x: &[f32], w: &[f32], b: &[f32], at: usize) -> Vec<u32> {
    let out_len = p.out_channels * p.out_h * p.out_w;
    // Bytes outside the input hold a pattern the result must not depend on.
    let mut region = vec![f32::from_bits(0x7fc0_dead); (at + x.len()).max(out_len)];
    region[at..at + x.len()].copy_from_slice(x);
    conv2d_overlapped(p, &mut region, at, 0, w, Some(b));
    region[..out_len].iter().map(|v| v.to_bits()).collect()
}

#[test]
fn overlapped_depthwise_matches_separate_buffers_on_every_path() {
    for (i, p) in cases().into_iter().enumerate() {
        let order = conv2d_plane_order(&p).expect("a depthwise convolution has a plane order");
        let mut rng = Rng::new(40 + i as u64);
        let x = rng.vec(p.in_channels * p.in_h * p.in_w);
        let w = rng.vec(p.out_channels * p.kernel_h * p.kernel_w);
        let b = rng.vec(p.out_channels);
        let at = min_input_offset(order);
        for (path, (separate, shared)) in common::on_each_path(&PATHS, || {
            let mut y = vec![0.0; p.out_channels * p.out_h * p.out_w];
            conv2d(&p, &x, &w, Some(&b), &mut y, &mut []);
            (y.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), overlapped(&p, &x, &w, &b, at))
        }) {
            assert_eq!(separate, shared, "case {i} on {}", path.name());
        }
        // The pair takes fewer elements than two buffers.
        assert!(at + x.len() < x.len() + order.planes * order.out_plane, "case {i}");
    }
}

#[test]
fn overlapped_depthwise_refuses_a_displacement_one_element_too_small() {
    let _guard = PATHS.lock().unwrap_or_else(|e| e.into_inner());
    for (i, p) in cases().into_iter().enumerate() {
        let at = min_input_offset(conv2d_plane_order(&p).unwrap());
        let (x, w, b) = (vec![1.0; p.in_channels * p.in_h * p.in_w], vec![1.0; p.out_channels * 25], vec![0.0; 8]);
        let result = std::panic::catch_unwind(|| overlapped(&p, &x, &w, &b, at - 1));
        assert!(result.is_err(), "case {i}: input at {} accepted", at - 1);
    }
}

#[test]
fn only_depthwise_nchw_batch_one_has_a_plane_order() {
    use Activation::None as A0;
    let depthwise = conv_params(1, 4, 4, (6, 6), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 4, A0);
    assert_eq!(conv2d_plane_order(&depthwise), Some(PlaneOrder { planes: 4, in_plane: 36, out_plane: 36 }));
    let multiplier = conv_params(1, 4, 8, (6, 6), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 4, A0);
    let dense = conv_params(1, 4, 4, (6, 6), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1, A0);
    let batch = conv_params(2, 4, 4, (6, 6), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 4, A0);
    let nhwc = Conv2d { input: ConvInput::Nhwc, ..depthwise };
    for p in [multiplier, dense, batch, nhwc] {
        assert_eq!(conv2d_plane_order(&p), None, "{p:?}");
    }
}
