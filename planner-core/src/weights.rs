//! The weight blob: every constant tensor the schedule reads, little-endian values of its element
//! type, each at a 16-byte-aligned offset of one read-only `static` (flash on a microcontroller).

use crate::ir::{Graph, TensorKind};
use crate::liveness::{Liveness, Storage};

/// Alignment of every weight tensor in the blob, in bytes.
pub const WEIGHT_ALIGN: usize = 16;

/// Where each constant lives in the blob.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WeightLayout {
    /// Byte offset of each tensor's data (for constants the schedule reads; `None` otherwise).
    pub offsets: Vec<Option<usize>>,
    /// The blob.
    pub bytes: Vec<u8>,
}

/// Lays out the constants that some node reads (directly or through a view).
pub fn layout(g: &Graph, live: &Liveness) -> WeightLayout {
    let mut out = WeightLayout { offsets: vec![None; g.tensors.len()], bytes: Vec::new() };
    for node in &g.nodes {
        for &t in &node.inputs {
            let Storage::Const(root) = live.storage[t] else { continue };
            if out.offsets[root].is_some() {
                continue;
            }
            let TensorKind::Const(data) = &g.tensors[root].kind else { continue };
            out.bytes.resize(out.bytes.len().next_multiple_of(WEIGHT_ALIGN), 0);
            out.offsets[root] = Some(out.bytes.len());
            data.extend_le_bytes(&mut out.bytes);
        }
    }
    out
}
