//! In-place execution (seed 000 section 6.1): an elementwise step whose kernel can overwrite an
//! input ([`crate::ops::OpKind::in_place_inputs`]) writes its output into that input's buffer when
//! the three conditions hold — same size and type (the kernel fact), this step is the input's last
//! reader (through any view), and the input is an arena tensor (not the caller's input or output,
//! not a constant) that no other input of the step shares. The output then joins the input's
//! buffer, whose life extends to the output's last use; [`crate::verify::verify_in_place`] checks
//! every decision independently.

use crate::ir::{Graph, Io, TensorId, TensorKind};
use crate::liveness::{Sharing, Uses};

/// Decides the in-place steps of `g` in schedule order (after concat elision, whose parts never
/// overwrite); returns how many.
pub fn choose_in_place(g: &Graph, uses: &Uses, sharing: &mut Sharing) -> usize {
    // In-place steps may also overwrite a graph input, and write a graph output, when those live in
    // the arena (the caller's own buffers are never overwritten or shared).
    let may_share = |r: TensorId| match g.tensors[r].kind {
        TensorKind::Activation => g.io == Io::Arena || !uses.holds_output[r],
        TensorKind::Input(i) => g.input_in_arena(i),
        TensorKind::Const(_) => false,
    };
    // The owner of each view root's buffer so far: decisions only ever point a fresh output root
    // at an input's owner, which is final, so each lookup is one step.
    let mut owner = sharing.owners(g, uses);
    let mut chosen_steps = 0;
    for (i, n) in g.nodes.iter().enumerate() {
        let out = uses.roots[n.output];
        let chosen = n.in_place_inputs(&g.tensors).into_iter().find(|&k| {
            let r = uses.roots[n.inputs[k]];
            may_share(r)
                && may_share(out)
                && sharing.part_of[out].is_none()
                && uses.last_use[r] == Some(i)
                && n.inputs.iter().enumerate().all(|(j, &t)| j == k || owner[uses.roots[t]] != owner[r])
        });
        if let Some(k) = chosen {
            sharing.in_place[i] = Some(k);
            owner[out] = owner[uses.roots[n.inputs[k]]];
            chosen_steps += 1;
        }
    }
    chosen_steps
}
