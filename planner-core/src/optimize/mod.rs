//! Graph rewrites between import and liveness that make the plan smaller without changing any
//! result bit (all but [`fold_affine`] and [`winograd`], which round differently, for speed): each
//! is switchable ([`Optimizations`]) and what it did is reported ([`Applied`]), in the module docs
//! of the expansion and in `sramfit inspect`.
//!
//! Graph passes rewrite the graph ([`rewrite_graph`]); storage passes decide which tensors share
//! bytes and how much scratch each kernel gets ([`storage`]), recording every decision in
//! [`crate::liveness::Sharing`] / [`Liveness`] for the storage verifier to check:
//!
//! - [`in_place`]: an elementwise step overwrites an input nobody reads later (checked by
//!   [`crate::verify::verify_in_place`]);
//! - [`elide_concat`]: a concatenation's inputs are written into their slices of its output;
//! - [`overlap`]: a step whose kernel consumes its input plane by plane or row by row (a
//!   depthwise convolution or pooling of NCHW planes, an int8 convolution or pooling of NHWC
//!   images) writes its output over the input planes it has read, the two in one buffer
//!   with the output starting a proven number of bytes before the input, kept while it lowers the
//!   lower bound (checked by [`crate::verify::verify_in_place`]);
//! - [`fit_scratch`]: a convolution whose preferred im2col scratch would raise the peak gets
//!   smaller tiles or none (direct convolution);
//! - [`schedule`] and [`exact_schedule`]: memory-aware execution orders (greedy, and exact for
//!   small graphs), kept when their lower bound is smaller;
//! - [`tile`]: after scheduling, a chain of row-local layers around the peak runs one band of
//!   output rows at a time (patch-based execution, the overlapping rows recomputed), kept when it
//!   lowers the lower bound within a bound on the extra MACs; the bands are ordinary steps on
//!   band-sized tensors joined by a concatenation, so it adds no sharing of its own;
//! - [`fuse`]: an activation (Relu, Clip, LeakyRelu, HardSwish, Sigmoid, Tanh) that is the only
//!   reader of a convolution's, matrix product's or `f32` Add's output becomes that kernel's
//!   epilogue, so the intermediate tensor never exists;
//! - [`transpose`]: a copy that only transposes a matrix product's operand becomes that product's
//!   strides, and an NHWC-to-NCHW copy a convolution's NHWC input layout, so the transposed tensor
//!   never exists; [`sink_transpose`] first moves transposes
//!   below elementwise steps, so that a pair that undoes itself (an NHWC graph's layout changes)
//!   cancels;
//! - [`subsample`]: a copy that subsamples a 1x1 convolution's feature map (tract's
//!   `Downsample` of a strided 1x1 convolution) becomes that convolution's stride;
//! - [`fold_affine`] (for speed, not memory): a per-channel scale or shift by a constant after a
//!   convolution (an unfolded BatchNormalization; a pointwise convolution that tract made a
//!   matrix product becomes a 1x1 convolution first) goes into its weights and bias;
//! - [`pack`] (for speed, not memory): convolution weights are stored in the layout the GEMM
//!   kernels read in place, so nothing is repacked at run time;
//! - [`blocked`] (for speed, not memory; x86-64 targets; after scheduling and tiling, on the
//!   order they chose): chains of pointwise and 3x3 depthwise convolutions run on
//!   channel-blocked tensors, converted at the chains' ends, where that does not raise the lower
//!   bound;
//! - [`winograd`] (for speed; x86-64 targets, after [`blocked`]): blocked 3x3 convolutions of at
//!   least 32 input channels at stride 1 run by Winograd's F(2x2, 3x3), their weights transformed
//!   at build time; rounds differently, and its scratch raises the arena where such a layer is at
//!   the peak.

pub mod blocked;
pub mod elide_concat;
pub mod exact_schedule;
pub mod fit_scratch;
pub mod fold_affine;
pub mod fuse;
pub mod in_place;
pub mod overlap;
pub mod pack;
pub mod schedule;
pub mod sink_transpose;
#[cfg(test)]
mod storage_tests;
pub mod subsample;
pub mod tile;
pub mod transpose;
pub mod winograd;

use serde::{Deserialize, Serialize};

use crate::ir::{Graph, TensorId};
use crate::liveness::{self, Liveness, Sharing, Uses};
use crate::plan;

/// One rewrite switch as the table below declares it: what every front end derives its option
/// from (the `optimize:` key of `model!`, `sramfit-build`'s `Model::optimize`, the CLI's
/// `--no-KEY` / `--KEY` flags with `_` written `-`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rewrite {
    /// The key: the [`Optimizations`] field, the macro key, the build-API argument.
    pub key: &'static str,
    /// What the rewrite does (the field's doc comment).
    pub doc: &'static str,
    /// Whether it runs when not switched.
    pub default: bool,
}

/// Declares the rewrite switches once: the [`Optimizations`] struct (one `bool` field per
/// rewrite, with its doc), its defaults, [`Optimizations::NONE`], the table
/// [`Optimizations::REWRITES`] the front ends build their options from, and
/// [`Applied::summary`]'s line per rewrite (`on` given what the rewrites did, `off` when switched
/// off). `memory` rewrites also appear in [`Applied::memory_summary`] (what a budget error lists).
macro_rules! rewrites {
    ($(
        $(#[doc = $doc:literal])*
        $key:ident: default $default:literal, memory $memory:literal,
            on |$applied:ident| $on:expr, off $off:literal;
    )*) => {
        /// Which rewrites to run. All are on by default.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
        pub struct Optimizations {
            $( $(#[doc = $doc])* #[serde(default)] pub $key: bool, )*
            /// The bound on the multiply-accumulates patch-based execution ([`tile`]) may add, in
            /// percent of the model's (default [`tile::DEFAULT_EXTRA_MACS_PERCENT`]).
            #[serde(default = "default_tile_extra_macs")]
            pub tile_extra_macs_percent: u32,
            /// The least share of the lower bound, in percent, a tiling must save to be kept (0
            /// keeps any gain): a smaller gain is not worth the band copies and the shorter kernel
            /// calls, unless the SRAM budget needs it ([`crate::compile::compile_model`] then
            /// compiles again with 0). `None` (the default): the target's
            /// ([`Optimizations::for_target`]); switching `tile` on sets [`tile::MIN_GAIN_PERCENT`].
            #[serde(default)]
            pub tile_min_gain_percent: Option<u32>,
        }

        impl Optimizations {
            /// Every rewrite off: the graph exactly as imported.
            pub const NONE: Optimizations =
                Optimizations {
                    $( $key: false, )*
                    tile_extra_macs_percent: tile::DEFAULT_EXTRA_MACS_PERCENT,
                    tile_min_gain_percent: None,
                };

            /// Every rewrite, in report order, with its key, doc and default.
            pub const REWRITES: &'static [Rewrite] = &[
                $( Rewrite { key: stringify!($key), doc: concat!($($doc, "\n",)*), default: $default }, )*
            ];

            /// Switches the rewrite `key` on or off; `Err` lists the keys when there is no such
            /// rewrite. Switching `tile` on asks for it on any target ([`tile::MIN_GAIN_PERCENT`]).
            pub fn set(&mut self, key: &str, on: bool) -> Result<(), String> {
                match key {
                    $( stringify!($key) => self.$key = on, )*
                    _ => return Err(format!("unknown rewrite `{key}`; the rewrites are {}", Self::keys())),
                }
                if key == "tile" && on {
                    self.tile_min_gain_percent.get_or_insert(tile::MIN_GAIN_PERCENT);
                }
                Ok(())
            }

            /// Switches patch-based execution on with a bound of `percent` extra multiply-accumulates;
            /// `Err` says the range when it is above [`tile::MAX_EXTRA_MACS_PERCENT`].
            pub fn set_tile_bound(&mut self, percent: u32) -> Result<(), String> {
                if percent > tile::MAX_EXTRA_MACS_PERCENT {
                    return Err(format!(
                        "a bound of {percent}% extra multiply-accumulates is more than the {}% patch-based execution allows",
                        tile::MAX_EXTRA_MACS_PERCENT
                    ));
                }
                self.set("tile", true)?;
                self.tile_extra_macs_percent = percent;
                Ok(())
            }

            /// These switches with the least tiling gain left to the target
            /// ([`Optimizations::tile_min_gain_percent`] `None`) set from `target`:
            /// [`tile::MIN_GAIN_PERCENT`] where memory comes first
            /// ([`crate::target::Target::memory_first`]), else
            /// [`tile::SPEED_FIRST_MIN_GAIN_PERCENT`] (no tiling unless a budget needs it); and
            /// `blocked_layout` off but on x86-64 (only its kernels gain from the layout).
            pub fn for_target(self, target: &crate::target::Target) -> Optimizations {
                let gain = match target.memory_first() {
                    true => tile::MIN_GAIN_PERCENT,
                    false => tile::SPEED_FIRST_MIN_GAIN_PERCENT,
                };
                let x86_64 = target.family == crate::target::Family::X86_64;
                Optimizations {
                    tile_min_gain_percent: Some(self.tile_min_gain_percent.unwrap_or(gain)),
                    blocked_layout: self.blocked_layout && x86_64,
                    ..self
                }
            }

            /// `` `a`, `b`, ... `` for messages.
            pub fn keys() -> String {
                let keys: Vec<String> = Self::REWRITES.iter().map(|r| format!("`{}`", r.key)).collect();
                keys.join(", ")
            }
        }

        impl Default for Optimizations {
            fn default() -> Self {
                Optimizations {
                    $( $key: $default, )*
                    tile_extra_macs_percent: tile::DEFAULT_EXTRA_MACS_PERCENT,
                    tile_min_gain_percent: None,
                }
            }
        }

        impl Applied {
            /// One line per rewrite, in table order: `(memory-saving, text)`.
            fn lines(&self, o: &Optimizations) -> Vec<(bool, String)> {
                vec![$(
                    ($memory, match o.$key {
                        true => { let $applied = self; $on }
                        false => String::from($off),
                    }),
                )*]
            }
        }
    };
}

rewrites! {
    /// Fuse activations into the preceding convolution, matrix product or `f32` Add ([`fuse`]).
    fuse_activations: default true, memory true,
        on |a| format!("{} activation(s) fused into the preceding kernel", a.fused_activations),
        off "activation fusion off";
    /// Let elementwise steps write over an input they read last (see [`crate::liveness`]).
    in_place: default true, memory true,
        on |a| format!("{} step(s) in place", a.in_place_steps),
        off "in-place execution off";
    /// Let the inputs of a concatenation be written straight into their slices of its output, so
    /// that the concatenation costs no copy and no extra bytes (see [`crate::liveness`]).
    elide_concat: default true, memory true,
        on |a| format!("{} concat(s) elided", a.elided_concats),
        off "concat elision off";
    /// Let a step whose kernel consumes its input plane by plane or row by row (a depthwise
    /// convolution or pooling of NCHW planes, an int8 convolution or pooling of NHWC images)
    /// write its output over the input planes it has read: one buffer for the pair, the output
    /// starting the smallest proven number of bytes before the input, where that lowers the
    /// arena's lower bound ([`overlap`]); bit-identical outputs.
    overlap: default true, memory true,
        on |a| match a.overlapped_steps {
            0 => String::from("no step overlapped (none at the peak lowered the lower bound)"),
            n => format!("{n} step(s) overlapping input and output ({} bytes fewer at those steps)", a.overlap_saved_bytes),
        },
        off "input/output overlap off";
    /// With `overlap`, overlap the int8 convolutions and poolings of NHWC images (the `.tflite`
    /// files') too, row by row: each such layer then runs as one kernel call per chunk of output
    /// rows (one row each at the smallest displacement), each re-reading its windows' rows. Off
    /// by default: it saves memory (the MLPerf Tiny KWS 16,000 -> 11,904 B) for time (its
    /// instructions on a Cortex-M4F 6.8M -> 15.2M).
    overlap_rows: default false, memory true,
        // Said only when on (with `overlap`'s count): the default report is unchanged.
        on |_a| String::from("NHWC layers overlapped row by row"),
        off "";
    /// Let a matrix product read a transposed operand through its strides instead of a copy
    /// ([`transpose`]), and move transposes below elementwise steps so that inverse pairs cancel
    /// ([`sink_transpose`]).
    transpose: default true, memory true,
        on |a| match a.cancelled_transposes {
            0 => format!("{} transpose(s) folded into matrix product strides or convolution inputs", a.folded_transposes),
            n => format!(
                "{} transpose(s) folded into matrix product strides or convolution inputs, {n} cancelled",
                a.folded_transposes
            ),
        },
        off "transpose folding off";
    /// Let a 1x1 convolution read a subsampled feature map (tract's `Downsample` of a strided 1x1
    /// convolution, ResNet's shortcuts) at a stride instead of a copy ([`subsample`]);
    /// bit-identical outputs.
    subsample: default true, memory true,
        on |a| format!("{} subsampling copies folded into convolution strides", a.folded_subsamplings),
        off "subsampling folding off";
    /// Give a kernel less scratch than it prefers (smaller im2col tiles, or the direct convolution
    /// without any) where its preferred scratch would raise the arena above the activation peak.
    fit_scratch: default true, memory true,
        on |a| format!("{} kernel(s) with reduced scratch", a.reduced_scratch),
        off "scratch fitting off";
    /// Try a memory-aware execution order and keep it when it lowers the lower bound ([`schedule`]).
    schedule: default true, memory true,
        on |a| a.schedule_line(),
        off "scheduling off";
    /// Run chains of row-local layers (convolutions, pooling, elementwise steps) around the peak
    /// one band of output rows at a time, recomputing the overlapping rows, where that lowers the
    /// arena within a bound on extra multiply-accumulates ([`Optimizations::tile_extra_macs_percent`],
    /// 10% unless set) ([`tile`]); bit-identical outputs.
    tile: default true, memory true,
        on |a| a.tile_line(),
        off "tiling off";
    /// Let patch-based execution copy the rows a band shares with the band before from it instead
    /// of computing them again (StreamNet's row caching), where that gives the lower bound: no
    /// extra multiply-accumulates, a copy of the shared rows and their bytes kept between bands.
    tile_cache: default true, memory true,
        on |a| match a.tiled {
            Some(t) if t.cached_chains > 0 => format!("{} tiled chain(s) with cached rows", t.cached_chains),
            _ => String::from("no tiled chain caches rows"),
        },
        off "row caching off";
    /// Fold a per-channel scale or shift by a constant after a convolution (an unfolded
    /// BatchNormalization) into its weights and bias ([`fold_affine`]): speed only; changes float
    /// rounding within the usual tolerance.
    fold_scale_shift: default true, memory false,
        on |a| format!("{} scale/shift step(s) folded into convolution weights", a.folded_scale_shifts),
        off "scale/shift folding off";
    /// Store convolution weights in the layout the GEMM kernels read ([`pack`]): speed only.
    pack_weights: default true, memory false,
        on |a| format!("{} convolution(s) with weights packed for the GEMM kernels", a.packed_weights),
        off "weight packing off";
    /// Run chains of pointwise and 3x3 depthwise convolutions between whole blocks of 16 channels
    /// on channel-blocked tensors, converted at the chains' ends ([`blocked`]): speed only,
    /// bit-identical outputs; x86-64 targets only (elsewhere it does nothing).
    blocked_layout: default true, memory false,
        on |a| match a.panel_weights {
            0 => format!("{} convolution(s) on channel-blocked tensors", a.blocked_convs),
            n => format!("{} convolution(s) on channel-blocked tensors ({n} with weights in panels)", a.blocked_convs),
        },
        off "channel-blocked layout off (it runs on x86-64 targets only)";
    /// Run blocked 3x3 convolutions of at least 32 input channels at stride 1 by Winograd's
    /// F(2x2, 3x3) ([`winograd`]): speed only, 16 products per 2x2 outputs instead of 36; changes
    /// float rounding within the usual tolerance, and its scratch (one chunk of transformed tiles)
    /// raises the arena where such a layer is at the peak; x86-64 targets only (after
    /// `blocked_layout`).
    winograd: default true, memory false,
        on |a| match a.winograd_convs {
            0 => String::new(),
            n => format!("{n} 3x3 convolution(s) by Winograd F(2x2, 3x3)"),
        },
        off "Winograd convolutions off";
}

/// What the rewrites did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    /// Activation nodes folded into a kernel epilogue.
    pub fused_activations: usize,
    /// Steps that write their output over an input.
    pub in_place_steps: usize,
    /// Kernels given less scratch than they prefer, so that it fits under the activation peak.
    pub reduced_scratch: usize,
    /// The lower bound in ONNX order and in the memory-aware order (when scheduling ran); the
    /// smaller one's order is the schedule.
    pub schedule_lower_bounds: Option<(u64, u64)>,
    /// Concatenations elided (their inputs written in place into the output).
    pub elided_concats: usize,
    /// Steps whose output overlaps their input in one buffer ([`overlap`]).
    #[serde(default)]
    pub overlapped_steps: usize,
    /// The bytes those steps' shared buffers take less than their input and output apart.
    #[serde(default)]
    pub overlap_saved_bytes: u64,
    /// Per-channel scale and shift steps folded into the convolution before them.
    #[serde(default)]
    pub folded_scale_shifts: usize,
    /// Transposing copies folded into a matrix product's strides or a convolution's input layout.
    pub folded_transposes: usize,
    /// Subsampling copies folded into a 1x1 convolution's stride ([`subsample`]).
    #[serde(default)]
    pub folded_subsamplings: usize,
    /// Transposing copies cancelled against another after moving below elementwise steps.
    #[serde(default)]
    pub cancelled_transposes: usize,
    /// Convolutions whose weights were packed at build time.
    #[serde(default)]
    pub packed_weights: usize,
    /// Convolutions running on channel-blocked tensors ([`blocked`]).
    #[serde(default)]
    pub blocked_convs: usize,
    /// Blocked convolutions whose weights were cut into panels ([`pack::pack_panels`]).
    #[serde(default)]
    pub panel_weights: usize,
    /// Blocked convolutions run by Winograd's F(2x2, 3x3) ([`winograd`]).
    #[serde(default)]
    pub winograd_convs: usize,
    /// Whether the exact schedule search ([`exact_schedule`]) finished within its budget: then no
    /// order has a smaller peak of live bytes (its cost model leaves out scratch and concat
    /// elision); otherwise only the greedy order was tried.
    pub exact_schedule: bool,
    /// What patch-based execution did ([`tile`]), when it tiled a chain: chains, bands, the
    /// model's MACs untiled, the MACs the recomputed rows add, the lower bound before and after.
    #[serde(default)]
    pub tiled: Option<tile::Tiled>,
    /// The bound on extra MACs tiling searched within ([`Optimizations::tile_extra_macs_percent`]).
    #[serde(default = "default_tile_extra_macs")]
    pub tile_bound_percent: u32,
    /// The best tiling found when it saved less than [`Optimizations::tile_min_gain_percent`] of
    /// the lower bound and was not kept.
    #[serde(default)]
    pub tile_declined: Option<tile::Tiled>,
    /// That least gain, in percent.
    #[serde(default = "default_tile_min_gain")]
    pub tile_min_gain_percent: u32,
}

/// [`tile::DEFAULT_EXTRA_MACS_PERCENT`], for fields read from files that lack them.
fn default_tile_extra_macs() -> u32 {
    tile::DEFAULT_EXTRA_MACS_PERCENT
}

/// [`tile::MIN_GAIN_PERCENT`], for fields read from files that lack them.
fn default_tile_min_gain() -> u32 {
    tile::MIN_GAIN_PERCENT
}

impl Applied {
    /// One line for reports, e.g. `3 activation(s) fused into the preceding kernel, 5 step(s) in
    /// place, ...`: every rewrite of [`Optimizations::REWRITES`], in its order (but
    /// `overlap_rows` when off, which says nothing).
    pub fn summary(&self, o: &Optimizations) -> String {
        let lines: Vec<String> = self.lines(o).into_iter().map(|(_, line)| line).filter(|l| !l.is_empty()).collect();
        lines.join(", ")
    }

    /// The memory-saving rewrites' part of [`Applied::summary`] (what a budget error lists).
    pub fn memory_summary(&self, o: &Optimizations) -> String {
        let lines: Vec<String> =
            self.lines(o).into_iter().filter(|(memory, l)| *memory && !l.is_empty()).map(|(_, l)| l).collect();
        lines.join(", ")
    }

    /// The tiling's report line (the rewrite is on).
    fn tile_line(&self) -> String {
        match self.tiled {
            Some(t) => format!(
                "{} chain(s) tiled in {} bands (lower bound {} -> {} bytes, {} extra MACs: {:.2}%)",
                t.chains,
                t.bands,
                t.lower_bounds.0,
                t.lower_bounds.1,
                t.extra_macs,
                100.0 * t.extra_macs as f64 / t.macs.max(1) as f64
            ),
            None => match self.tile_declined {
                Some(t) if self.tile_min_gain_percent >= tile::SPEED_FIRST_MIN_GAIN_PERCENT => format!(
                    "no chain tiled (speed first on this target: the best tiling, {} chain(s) in {} bands, would lower the lower bound from {} to {} bytes; an sram budget or pools that need it get it, as does `tile: true`)",
                    t.chains, t.bands, t.lower_bounds.0, t.lower_bounds.1
                ),
                Some(t) => format!(
                    "no chain tiled (the best tiling, {} chain(s) in {} bands, lowered the lower bound only from {} to {} bytes, less than the {}% worth its time; an sram budget that needs it gets it)",
                    t.chains, t.bands, t.lower_bounds.0, t.lower_bounds.1, self.tile_min_gain_percent
                ),
                None => {
                    format!("no chain tiled (none lowered the lower bound within {}% extra MACs)", self.tile_bound_percent)
                }
            },
        }
    }

    /// The schedule's report line (the rewrite is on).
    fn schedule_line(&self) -> String {
        let search = match self.exact_schedule {
            true => "exact search",
            false => "greedy search; the exact one exceeded its budget",
        };
        match self.schedule_lower_bounds {
            Some((onnx, aware)) if aware < onnx => {
                format!("memory-aware order (lower bound {onnx} -> {aware} bytes, {search})")
            }
            Some((onnx, _)) => format!("ONNX order kept (lower bound {onnx} bytes, no better order found by {search})"),
            None => "scheduling off".into(),
        }
    }
}

/// Runs the enabled graph passes on `g`, in place.
pub fn rewrite_graph(g: &mut Graph, o: &Optimizations) -> Applied {
    let mut applied = Applied::default();
    if o.transpose {
        applied.cancelled_transposes = sink_transpose::sink_transposes(g);
    }
    if o.fold_scale_shift {
        applied.folded_scale_shifts = fold_affine::fold_scale_shift(g);
    }
    if o.fuse_activations {
        applied.fused_activations = fuse::fuse_activations(g);
    }
    if o.transpose {
        applied.folded_transposes = transpose::fold_transposes(g);
    }
    if o.subsample {
        applied.folded_subsamplings = subsample::fold_subsampling(g);
    }
    if o.pack_weights {
        applied.packed_weights = pack::pack_conv_weights(g);
    }
    applied
}

/// Runs the enabled storage passes on `g` (concat elision, in-place execution, then overlapped
/// steps), computes liveness under their decisions, and fits each kernel's scratch.
///
/// Concat elision makes a concatenation's buffer live from its first input on, which can raise the
/// peak when that input is computed long before the others (found by the random graphs of
/// `safety/tests/rewrite_graphs.rs`): it is kept only when its lower bound is not larger than
/// without it.
pub fn storage(g: &Graph, o: &Optimizations) -> Liveness {
    let uses = Uses::of(g);
    let with = |elide: bool| {
        let mut sharing = Sharing::none(g);
        if elide {
            elide_concat::elide_concats(g, &uses, &mut sharing);
        }
        if o.in_place {
            in_place::choose_in_place(g, &uses, &mut sharing);
        }
        let mut live = match o.overlap {
            true => overlap::choose_overlaps(g, &uses, &mut sharing, o.overlap_rows),
            false => liveness::analyze(g, &uses, &sharing),
        };
        fit_scratch::add_scratch(g, &mut live, o.fit_scratch);
        live
    };
    let live = with(o.elide_concat);
    if !live.elided.contains(&true) {
        return live;
    }
    let copying = with(false);
    match plan::lower_bound(&copying.problem).bytes < plan::lower_bound(&live.problem).bytes {
        true => copying,
        false => live,
    }
}

/// With scheduling on, the execution order of `g` with the smallest lower bound among ONNX's, the
/// greedy memory-aware one and the exact search's (when it finishes within its budget), and its
/// liveness; records the bounds and whether the exact search finished in `applied`.
pub fn schedule(g: Graph, o: &Optimizations, applied: &mut Applied) -> (Graph, Liveness) {
    let live = storage(&g, o);
    if !o.schedule {
        return (g, live);
    }
    let before = plan::lower_bound(&live.problem).bytes;
    let greedy = schedule::memory_aware_order(&g);
    let onnx: Vec<usize> = (0..g.nodes.len()).collect();
    let bound = exact_schedule::peak_of(&g, o, &onnx).min(exact_schedule::peak_of(&g, o, &greedy));
    let exact = exact_schedule::exact_order(&g, o, bound);
    applied.exact_schedule = exact.is_some();
    let orders = std::iter::once(greedy).chain(exact.map(|e| e.order));
    let (mut best, mut best_bound) = ((g.clone(), live), before);
    // Every order indexes the nodes as imported: reorder that graph, not the best one so far.
    for order in orders {
        let mut reordered = g.clone();
        schedule::reorder(&mut reordered, &order);
        let live = storage(&reordered, o);
        let bound = plan::lower_bound(&live.problem).bytes;
        if bound < best_bound {
            (best, best_bound) = ((reordered, live), bound);
        }
    }
    applied.schedule_lower_bounds = Some((before, best_bound));
    if !o.tile {
        return best;
    }
    applied.tile_bound_percent = o.tile_extra_macs_percent;
    let Some((tiled, t)) = tile::tile_chains(&best.0, &best.1, o, o.tile_extra_macs_percent) else { return best };
    // The tiled graph's own schedule search (its band-major order is one of the candidates).
    let bounds = applied.schedule_lower_bounds;
    let (graph, live) = schedule(tiled, &Optimizations { tile: false, ..*o }, applied);
    let after = plan::lower_bound(&live.problem).bytes;
    applied.schedule_lower_bounds = bounds;
    let t = tile::Tiled { lower_bounds: (t.lower_bounds.0, after), ..t };
    // Left to a target the caller did not resolve ([`Optimizations::for_target`]): memory first.
    applied.tile_min_gain_percent = o.tile_min_gain_percent.unwrap_or(tile::MIN_GAIN_PERCENT);
    if !t.saves(applied.tile_min_gain_percent) {
        applied.tile_declined = Some(t);
        return best;
    }
    applied.tiled = Some(t);
    (graph, live)
}

/// Drops the nodes marked `removed` (one flag per node) in one pass, then the tensors no node,
/// input or output uses any more; nothing when no node is marked.
pub(crate) fn drop_nodes(g: &mut Graph, removed: &[bool]) {
    if !removed.contains(&true) {
        return;
    }
    let mut index = 0..;
    g.nodes.retain(|_| !removed[index.next().expect("one index per node")]);
    remove_unused_tensors(g);
}

/// Drops tensors no node and no graph port refers to, renumbering the rest (order kept).
pub(crate) fn remove_unused_tensors(g: &mut Graph) {
    let mut used = vec![false; g.tensors.len()];
    for n in &g.nodes {
        n.inputs.iter().chain([&n.output]).for_each(|&t| used[t] = true);
    }
    g.inputs.iter().chain(&g.outputs).for_each(|&t| used[t] = true);
    let mut new_id: Vec<Option<TensorId>> = vec![None; g.tensors.len()];
    let mut next = 0;
    for (t, u) in used.iter().enumerate() {
        if *u {
            new_id[t] = Some(next);
            next += 1;
        }
    }
    let old = std::mem::take(&mut g.tensors);
    g.tensors = old.into_iter().zip(&used).filter(|(_, u)| **u).map(|(t, _)| t).collect();
    let map = |t: &mut TensorId| *t = new_id[*t].expect("a used tensor keeps an id");
    for n in &mut g.nodes {
        n.inputs.iter_mut().for_each(map);
        map(&mut n.output);
    }
    g.inputs.iter_mut().for_each(map);
    g.outputs.iter_mut().for_each(map);
}
