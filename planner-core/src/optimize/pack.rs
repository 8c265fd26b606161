//! Weights packed at build time: a convolution's weights are stored in the layout its GEMM kernels
//! read ([`ConvWeights::KMajor`]: the output channels of each input value contiguous), so the
//! kernels load whole vectors of them in place, with no packing and no packing buffer at run time.
//!
//! Every ungrouped convolution whose weights are a constant gets a packed copy (the constant is
//! dropped when nothing else reads it), followed by [`slack`] zeros so that a kernel may load whole
//! vectors of output channels past the last one. Depthwise and grouped convolutions keep
//! ONNX's order (with one output channel per group both orders are the same). No result changes:
//! every kernel path sums the same products in the same order in either layout (checked by
//! `runtime-min`'s convolution tests and the rewrite property test in `safety/`).
//!
//! After the blocked layout's rewrite, the dense convolutions it made blocked have their k-major
//! weights cut into panels ([`pack_panels`], [`ConvWeights::Panels`]): their kernel then reads
//! each tile's weights as one stream, where k-major ones lie a row of all output channels apart.
//! Also no result changes (`runtime-min/tests/blocked.rs`).

use std::collections::HashMap;

use sramfit_runtime_min::{takes_panels, Conv2d, ConvWeights, PANEL};

use crate::ir::{Graph, Op, TensorId};
use crate::ops::conv_blocked::ConvBlocked;
use crate::tensor::Data;

/// Zeros after the packed weights of `out_channels` channels: up to the next multiple of 16. The
/// kernels load the output channels of one input value in vectors of 8 or 16 from multiples of 16
/// (two vectors only for a block of more than one vector's rows), so no load ends past the next
/// multiple of 16.
pub const fn slack(out_channels: usize) -> usize {
    out_channels.next_multiple_of(16) - out_channels
}

/// Packs the weights of every eligible convolution; returns how many were packed. Convolutions
/// that share a weight tensor share its packed copy.
pub fn pack_conv_weights(g: &mut Graph) -> usize {
    let mut packed = 0;
    let mut copies: HashMap<TensorId, TensorId> = HashMap::new();
    for i in 0..g.nodes.len() {
        let Op::Conv(p) = &g.nodes[i].op else { continue };
        let Some(&w) = g.nodes[i].inputs.get(1) else { continue };
        let Some(values) = g.tensors[w].data().and_then(|d| d.as_f32()) else { continue };
        let (oc, kk) = (p.out_channels, p.in_channels * p.kernel_h * p.kernel_w);
        if p.weights != ConvWeights::Oihw || p.groups != 1 || oc < 2 || values.len() != oc * kk {
            continue;
        }
        let Some(copy) = relaid(g, &mut copies, w, "packed", |values| {
            let mut k_major = vec![0.0; oc * kk + slack(oc)];
            for (o, row) in values.chunks_exact(kk).enumerate() {
                for (k, &v) in row.iter().enumerate() {
                    k_major[k * oc + o] = v;
                }
            }
            k_major
        }) else {
            continue;
        };
        g.nodes[i].inputs[1] = copy;
        let Op::Conv(p) = &mut g.nodes[i].op else { unreachable!("matched above") };
        p.weights = ConvWeights::KMajor;
        packed += 1;
    }
    if packed > 0 {
        super::remove_unused_tensors(g);
    }
    packed
}

/// Cuts the k-major weights of every blocked convolution that reads them in panels
/// (`runtime_min::takes_panels`: its dense ones) into panels ([`ConvWeights::Panels`]); returns
/// how many. Convolutions sharing a weight tensor share its copy.
pub fn pack_panels(g: &mut Graph) -> usize {
    let mut packed = 0;
    let mut copies: HashMap<TensorId, TensorId> = HashMap::new();
    for i in 0..g.nodes.len() {
        let Op::ConvBlocked(ConvBlocked(p)) = g.nodes[i].op else { continue };
        let w = g.nodes[i].inputs[1];
        let Some(values) = g.tensors[w].data().and_then(|d| d.as_f32()) else { continue };
        let (m, depths) = (p.out_channels, p.in_channels * p.kernel_h * p.kernel_w);
        if !takes_panels(&p) || p.weights != ConvWeights::KMajor || values.len() < m * depths {
            continue;
        }
        let Some(copy) = relaid(g, &mut copies, w, "panels", |values| {
            // Panel by panel, depth by depth: the panel's channels of that depth's k-major row.
            let mut panels = Vec::with_capacity(m * depths);
            for start in (0..m).step_by(PANEL) {
                let channels = start..m.min(start + PANEL);
                for row in values.chunks_exact(m).take(depths) {
                    panels.extend_from_slice(&row[channels.clone()]);
                }
            }
            panels
        }) else {
            continue;
        };
        g.nodes[i].inputs[1] = copy;
        g.nodes[i].op = Op::ConvBlocked(ConvBlocked(Conv2d { weights: ConvWeights::Panels, ..p }));
        packed += 1;
    }
    if packed > 0 {
        super::remove_unused_tensors(g);
    }
    packed
}

/// The copy of constant `w` in another layout (`layout` of its values), named `NAME.suffix`, made
/// on first use and memoised in `copies` so that the convolutions sharing `w` share the copy; `None`
/// when `w` holds no f32 values.
pub(super) fn relaid(
    g: &mut Graph,
    copies: &mut HashMap<TensorId, TensorId>,
    w: TensorId,
    suffix: &str,
    layout: impl FnOnce(&[f32]) -> Vec<f32>,
) -> Option<TensorId> {
    if let Some(&copy) = copies.get(&w) {
        return Some(copy);
    }
    let values = layout(g.tensors[w].data()?.as_f32()?);
    let name = format!("{}.{suffix}", g.tensors[w].name);
    let copy = g.add_const(name, vec![values.len()], Data::F32(values));
    copies.insert(w, copy);
    Some(copy)
}

#[cfg(test)]
pub(crate) mod tests {
    use sramfit_runtime_min::{Activation, ConvInput};

    use super::*;
    use crate::ir::{Node, TensorKind};
    use crate::tensor::{DType, Data};

    /// A 1x2 convolution, stride 1, no padding, of `[1, in_channels, 4, 4]` into 4x4 planes.
    pub(crate) fn conv(in_channels: usize, out_channels: usize, groups: usize) -> Conv2d {
        Conv2d {
            batch: 1,
            in_channels,
            in_h: 4,
            in_w: 4,
            out_channels,
            out_h: 4,
            out_w: 4,
            kernel_h: 1,
            kernel_w: 2,
            stride_h: 1,
            stride_w: 1,
            dilation_h: 1,
            dilation_w: 1,
            pad_top: 0,
            pad_left: 0,
            groups,
            act: Activation::None,
            weights: ConvWeights::Oihw,
            input: ConvInput::Nchw,
        }
    }

    /// A graph `x -> conv -> y` with OIHW weights `0, 1, 2, ...`.
    fn graph(p: Conv2d) -> Graph {
        let mut g = Graph::default();
        let w_len = p.out_channels * p.in_channels / p.groups * p.kernel_h * p.kernel_w;
        let x = g.add_tensor("x", vec![1, p.in_channels, 4, 4], DType::F32, TensorKind::Input(0));
        let w = g.add_const("w", vec![w_len], Data::F32((0..w_len).map(|v| v as f32).collect()));
        let y = g.add_tensor("y", vec![1, p.out_channels, 4, 4], DType::F32, TensorKind::Activation);
        let op = Op::Conv(p);
        g.nodes.push(Node::new("conv", op, vec![x, w], y));
        g.inputs.push(x);
        g.outputs.push(y);
        g
    }

    #[test]
    fn ungrouped_convolution_weights_are_transposed_with_slack() {
        let mut g = graph(conv(2, 3, 1));
        assert_eq!(pack_conv_weights(&mut g), 1);
        let Op::Conv(p) = &g.nodes[0].op else { panic!("still a convolution") };
        assert_eq!(p.weights, ConvWeights::KMajor);
        let w = &g.tensors[g.nodes[0].inputs[1]];
        let TensorKind::Const(Data::F32(values)) = &w.kind else { panic!("still a constant") };
        // OIHW row o is `4o..4o + 4` (kk = 2 input channels x 2 taps); k-major puts the three
        // output channels of each k side by side.
        let mut want = vec![0.0, 4.0, 8.0, 1.0, 5.0, 9.0, 2.0, 6.0, 10.0, 3.0, 7.0, 11.0];
        want.resize(12 + 13, 0.0);
        assert_eq!(values, &want);
        assert_eq!(w.name, "w.packed");
        assert_eq!(g.tensors.len(), 3, "the unpacked constant is dropped");
    }

    #[test]
    fn convolutions_sharing_weights_share_the_packed_copy() {
        let mut g = graph(conv(2, 3, 1));
        let (x, w) = (g.nodes[0].inputs[0], g.nodes[0].inputs[1]);
        let y2 = g.add_tensor("y2", vec![1, 3, 4, 4], DType::F32, TensorKind::Activation);
        let op = Op::Conv(conv(2, 3, 1));
        g.nodes.push(Node::new("conv2", op, vec![x, w], y2));
        g.outputs.push(y2);
        assert_eq!(pack_conv_weights(&mut g), 2);
        assert_eq!(g.nodes[0].inputs[1], g.nodes[1].inputs[1]);
        let consts = g.tensors.iter().filter(|t| matches!(t.kind, TensorKind::Const(_))).count();
        assert_eq!(consts, 1, "one packed copy, the unpacked constant dropped");
    }

    /// `g`'s convolutions packed k-major, then made blocked.
    fn blocked(mut g: Graph) -> Graph {
        pack_conv_weights(&mut g);
        for n in &mut g.nodes {
            let Op::Conv(p) = n.op else { panic!("a convolution") };
            n.op = Op::ConvBlocked(ConvBlocked(p));
        }
        g
    }

    #[test]
    fn blocked_dense_convolution_weights_are_cut_into_panels() {
        // 48 output channels: a panel of 32 and one of 16; 16 input channels x 2 taps = 32 depths.
        let (m, depths) = (48, 32);
        let mut g = blocked(graph(conv(16, m, 1)));
        assert_eq!(pack_panels(&mut g), 1);
        let Op::ConvBlocked(ConvBlocked(p)) = g.nodes[0].op else { panic!("still blocked") };
        assert_eq!(p.weights, ConvWeights::Panels);
        let w = &g.tensors[g.nodes[0].inputs[1]];
        let TensorKind::Const(Data::F32(values)) = &w.kind else { panic!("still a constant") };
        // The OIHW weight `(oc, d)` is `oc * depths + d`; panel by panel, depth by depth.
        let mut want = Vec::new();
        for d in 0..depths {
            want.extend((0..32).map(|oc| (oc * depths + d) as f32));
        }
        for d in 0..depths {
            want.extend((32..48).map(|oc| (oc * depths + d) as f32));
        }
        assert_eq!(values, &want, "no slack: the dense kernel loads no vector past a panel");
        assert_eq!(w.name, "w.packed.panels");
        assert_eq!(g.tensors.len(), 3, "the k-major constant is dropped");
    }

    #[test]
    fn blocked_pointwise_convolutions_keep_k_major_weights() {
        let mut p = conv(16, 32, 1);
        p.kernel_w = 1;
        let mut g = blocked(graph(p));
        let before = g.clone();
        assert_eq!(pack_panels(&mut g), 0);
        assert_eq!(g, before);
    }

    #[test]
    fn grouped_and_single_channel_convolutions_keep_onnx_order() {
        for p in [conv(4, 4, 4), conv(4, 4, 2), conv(3, 1, 1)] {
            let mut g = graph(p);
            let before = g.clone();
            assert_eq!(pack_conv_weights(&mut g), 0, "{p:?}");
            assert_eq!(g, before);
        }
    }
}
