//! Every rewrite (the memory-saving ones and weight packing) keeps outputs bit-identical: random
//! models shaped for the rewrites (`build/rewrite_graphs.rs`: activations after convolutions and
//! matrix products, elementwise chains, concatenations of single-use branches, multi-reader
//! branches, transposed operands, strided 1x1 convolutions, unfolded BatchNormalizations,
//! expanded convolution chains that patch-based execution runs in bands of rows, their depthwise
//! steps overlapping input and output, chains of pointwise and depthwise convolutions between
//! whole blocks of 16 channels that run on channel-blocked tensors) are compiled with every rewrite on
//! (in checked mode) and with `Optimizations::NONE`, run on the same random inputs, and compared
//! bit for bit; scale/shift folding and Winograd convolutions, which round differently, are
//! compared within 1e-5 of the graph's largest output magnitude. More graphs:
//! `SRAMFIT_REWRITE_GRAPHS=1000 cargo test -p sramfit-safety --test rewrite_graphs -- --nocapture`
//! (and `SRAMFIT_REWRITE_SEED=N` for another range).

// The generated `run` takes one argument per graph input and output; random graphs have many.
#![allow(clippy::too_many_arguments)]

#[path = "../../tests/common/mod.rs"]
mod common;

use common::RunDyn;

/// What the rewrites did on one graph (from the optimised build's `Applied`).
pub struct Applied {
    fused: usize,
    in_place: usize,
    elided: usize,
    transposes: usize,
    /// Subsampling copies folded into a 1x1 convolution's stride.
    subsampled: usize,
    packed: usize,
    reordered: bool,
    /// Chains run in bands of rows (patch-based execution).
    tiled: usize,
    /// Steps whose output overlaps their input in one buffer.
    overlapped: usize,
    /// Scale/shift steps folded in the folded build.
    folds: usize,
    /// Convolutions on channel-blocked tensors.
    blocked: usize,
    /// Winograd convolutions in the folded build.
    winograd: usize,
}

/// Both builds of one graph.
pub struct Pair {
    opt: RunDyn,
    plain: RunDyn,
    /// The build with scale/shift folding and Winograd convolutions too, where either changes
    /// something.
    folded: Option<RunDyn>,
    inputs: &'static [&'static [usize]],
    outputs: &'static [&'static [usize]],
    /// Arena bytes with and without the rewrites.
    arenas: (usize, usize),
    applied: Applied,
}

/// One generated graph.
pub struct RewriteGraph {
    seed: u64,
    file: &'static str,
    ops: &'static str,
    compiled: Result<Pair, &'static str>,
}

include!(concat!(env!("OUT_DIR"), "/rewrite_graphs.rs"));

/// Whether two runs' outputs (as bits) agree within `tolerance` of the largest magnitude among
/// all their outputs (at least 1; NaN where both are NaN). The scale is the graph's, not each
/// output's: an output bounded by a last Clip or Sigmoid can be far smaller than the sums whose
/// rounding it carries (seed 193 of 200: a [-0.5, 0.5] Clip of a convolution of values near 1000,
/// 1.2e-4 apart after Winograd, 9e-8 of the graph's largest output).
fn close(a: &[Vec<u32>], b: &[Vec<u32>], tolerance: f32) -> Option<usize> {
    let f = |v: &[u32]| v.iter().map(|&x| f32::from_bits(x)).collect::<Vec<f32>>();
    let (a, b): (Vec<Vec<f32>>, Vec<Vec<f32>>) = (a.iter().map(|v| f(v)).collect(), b.iter().map(|v| f(v)).collect());
    let all = a.iter().chain(&b).flatten();
    let scale = all.filter(|v| v.is_finite()).fold(1.0f32, |m, v| m.max(v.abs()));
    let near = |x: &f32, y: &f32| (x.is_nan() && y.is_nan()) || (x - y).abs() <= tolerance * scale;
    (0..a.len()).find(|&k| a[k].len() != b[k].len() || !a[k].iter().zip(&b[k]).all(|(x, y)| near(x, y)))
}

/// Runs `f` on `ins`; the outputs as bits.
fn run(f: RunDyn, ins: &[&[f32]], outputs: &[&[usize]]) -> Result<Vec<Vec<u32>>, sramfit::Error> {
    let mut outs: Vec<Vec<f32>> = outputs.iter().map(|s| vec![f32::NAN; s.iter().product()]).collect();
    let mut refs: Vec<&mut [f32]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
    f(ins, &mut refs)?;
    Ok(outs.iter().map(|o| o.iter().map(|x| x.to_bits()).collect()).collect())
}

#[test]
fn every_rewrite_keeps_outputs_bit_identical() {
    let mut failures = Vec::new();
    let (mut fused, mut in_place, mut elided, mut transposes, mut packed, mut reordered, mut smaller) =
        (0, 0, 0, 0, 0, 0, 0);
    let (mut folds, mut tiled, mut overlapped, mut subsampled, mut blocked, mut winograd) = (0, 0, 0, 0, 0, 0);
    let mut larger = Vec::new();
    for g in GRAPHS {
        let what = |m: &str| format!("seed {} ({}, {}): {m}", g.seed, g.ops, g.file);
        let p = match &g.compiled {
            Ok(p) => p,
            Err(e) => {
                failures.push(what(&format!("does not compile: {e}")));
                continue;
            }
        };
        (fused, in_place, elided) = (fused + p.applied.fused, in_place + p.applied.in_place, elided + p.applied.elided);
        (transposes, packed) = (transposes + p.applied.transposes, packed + p.applied.packed);
        reordered += usize::from(p.applied.reordered);
        subsampled += p.applied.subsampled;
        smaller += usize::from(p.arenas.0 < p.arenas.1);
        if p.arenas.0 > p.arenas.1 {
            larger.push(format!("seed {} ({} > {} bytes)", g.seed, p.arenas.0, p.arenas.1));
        }
        for seed in 1..=2u64 {
            let ins: Vec<Vec<f32>> =
                p.inputs.iter().map(|s| common::random(s.iter().product(), g.seed * 31 + seed)).collect();
            let ins: Vec<&[f32]> = ins.iter().map(Vec::as_slice).collect();
            match (run(p.opt, &ins, p.outputs), run(p.plain, &ins, p.outputs)) {
                (Ok(a), Ok(b)) => {
                    if let Some(k) = (0..a.len()).find(|&k| a[k] != b[k]) {
                        failures.push(what(&format!("output {k} differs (input seed {seed})")));
                    }
                }
                (Err(e), _) | (_, Err(e)) => failures.push(what(&e.to_string())),
            }
            if let Some(folded) = p.folded {
                match (run(folded, &ins, p.outputs), run(p.plain, &ins, p.outputs)) {
                    (Ok(a), Ok(b)) => {
                        if let Some(k) = close(&a, &b, 1e-5) {
                            failures.push(what(&format!("folded output {k} differs beyond 1e-5 (input seed {seed})")));
                        }
                    }
                    (Err(e), _) | (_, Err(e)) => failures.push(what(&e.to_string())),
                }
            }
        }
        folds += p.applied.folds;
        tiled += p.applied.tiled;
        overlapped += p.applied.overlapped;
        blocked += p.applied.blocked;
        winograd += p.applied.winograd;
    }
    eprintln!(
        "{} graphs: {fused} activations fused, {in_place} in-place steps, {elided} concats elided, \
         {transposes} transposes folded, {subsampled} subsamplings folded, {packed} weights packed, {reordered} reordered, {tiled} chains tiled, {overlapped} steps overlapped, {folds} scales/shifts folded, {blocked} convolutions blocked, {winograd} by Winograd; arena smaller on {smaller}, larger on {}: {larger:?}; {} failures",
        GRAPHS.len(),
        larger.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{} of {} graphs failed:\n{}", failures.len(), GRAPHS.len(), failures.join("\n"));
    // The generator's purpose: every rewrite it targets happens somewhere in the default set.
    assert!(
        fused > 0
            && in_place > 0
            && elided > 0
            && transposes > 0
            && subsampled > 0
            && packed > 0
            && folds > 0
            && tiled > 0
            && overlapped > 0
            && blocked > 0
            && winograd > 0,
        "the generator no longer exercises every rewrite"
    );
}
