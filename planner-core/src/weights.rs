//! The weight blob: every constant tensor the schedule reads, little-endian values of its element
//! type, each at an aligned offset of one read-only `static` (flash on a microcontroller), the
//! static as aligned ([`WeightAlign`]).

use crate::ir::{Graph, TensorKind};
use crate::liveness::{Liveness, Storage};
use crate::target::{Family, Target};

/// Alignment in bytes of every weight tensor in the blob and of the blob itself: 16 (every
/// kernel's vectors of 4 lanes and the `i64` biases), or on x86-64 64, a cache line, so that the
/// kernels' 16-lane AVX-512 loads of weights read in place never straddle two lines (where they
/// did, fully connected layers ran 1.5x slower, ResNet-18's 512-channel layers 1.27x). A
/// microcontroller's flash pays nothing for the wider padding it does not need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WeightAlign(pub usize);

impl WeightAlign {
    /// The alignment for `target`.
    pub fn for_target(target: &Target) -> WeightAlign {
        match target.family {
            Family::X86_64 => WeightAlign(64),
            _ => WeightAlign::default(),
        }
    }
}

impl Default for WeightAlign {
    /// 16 bytes.
    fn default() -> Self {
        WeightAlign(16)
    }
}

/// Where each constant lives in the blob.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WeightLayout {
    /// Byte offset of each tensor's data (for constants the schedule reads; `None` otherwise).
    pub offsets: Vec<Option<usize>>,
    /// The blob.
    pub bytes: Vec<u8>,
    /// Alignment of every offset, and of the blob's static.
    pub align: WeightAlign,
}

/// Lays out the constants that some node reads (directly or through a view), each at a multiple
/// of the graph's [`WeightAlign`].
pub fn layout(g: &Graph, live: &Liveness) -> WeightLayout {
    let align = g.weight_align;
    let mut out = WeightLayout { offsets: vec![None; g.tensors.len()], bytes: Vec::new(), align };
    for node in &g.nodes {
        for &t in &node.inputs {
            let Storage::Const(root) = live.storage[t] else { continue };
            if out.offsets[root].is_some() {
                continue;
            }
            let TensorKind::Const(data) = &g.tensors[root].kind else { continue };
            out.bytes.resize(out.bytes.len().next_multiple_of(align.0), 0);
            out.offsets[root] = Some(out.bytes.len());
            data.extend_le_bytes(&mut out.bytes);
        }
    }
    out
}
