//! Winograd convolutions (for speed, not memory; x86-64 targets, after the blocked layout's
//! rewrite): each blocked 3x3 convolution that `runtime_min::winograd_applies` to becomes an
//! [`Op::ConvWinograd`] with its weights transformed at build time (`G g G^T` per input and
//! output channel, [`rt::winograd_kernel`]), laid out as `rt::winograd_weight_index` says.
//!
//! The kernel takes 16 products per 2x2 outputs where the direct one takes 36, and rounds
//! differently (within the tolerance the tests hold every model to against onnxruntime); it needs
//! scratch for one chunk of transformed tiles, which raises the arena where the layer is at its
//! peak (MNIST's second layer: 73,728 bytes). [`crate::compile::compile_model`] compiles again
//! without it when that breaks the SRAM budget.

use std::collections::HashMap;

use sramfit_runtime_min::{self as rt, Conv2d, ConvWeights};

use super::pack::relaid;
use crate::ir::{Graph, Op, TensorId};
use crate::ops::conv_blocked::ConvBlocked;
use crate::ops::conv_winograd::ConvWinograd;

/// Turns every blocked convolution the Winograd kernel computes into one; returns how many.
/// Convolutions sharing a weight tensor share its transformed copy.
pub fn winograd(g: &mut Graph) -> usize {
    let mut turned = 0;
    let mut copies: HashMap<TensorId, TensorId> = HashMap::new();
    for i in 0..g.nodes.len() {
        let Op::ConvBlocked(ConvBlocked(p)) = g.nodes[i].op else { continue };
        let w = g.nodes[i].inputs[1];
        let Some(values) = g.tensors[w].data().and_then(|d| d.as_f32()) else { continue };
        if !rt::winograd_applies(&p) || values.len() < p.out_channels * p.in_channels * 9 {
            continue;
        }
        let Some(copy) = relaid(g, &mut copies, w, "winograd", |values| transformed(&p, values)) else { continue };
        g.nodes[i].inputs[1] = copy;
        g.nodes[i].op = Op::ConvWinograd(ConvWinograd(Conv2d { weights: ConvWeights::KMajor, ..p }));
        turned += 1;
    }
    if turned > 0 {
        super::remove_unused_tensors(g);
    }
    turned
}

/// The weights `values` of `p` (in the layout `p.weights` names) transformed for the Winograd
/// kernel.
fn transformed(p: &Conv2d, values: &[f32]) -> Vec<f32> {
    let (m, depths) = (p.out_channels, p.in_channels * 9);
    let mut u = vec![0.0; rt::winograd_weights_len(p)];
    for oc in 0..m {
        let (start, stride) = p.weights.column(m, depths, oc);
        for ic in 0..p.in_channels {
            let g: [f32; 9] = std::array::from_fn(|tap| values[start + (ic * 9 + tap) * stride]);
            for (xi, v) in rt::winograd_kernel(&g).into_iter().enumerate() {
                u[rt::winograd_weight_index(p, xi, ic, oc)] = v;
            }
        }
    }
    u
}
