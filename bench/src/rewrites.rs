//! `cargo run --release -p sramfit-bench -- --rewrites`: is the code the memory-saving rewrites
//! produce ever slower? Each bench model is compiled twice in this process, with the default
//! rewrites (fusion, in place, concat elision, transpose folding, scheduling, scratch fitting) and
//! with `Optimizations::NONE`, and also with every rewrite but scratch fitting (which trades speed
//! for memory on purpose: a convolution given less scratch than it prefers runs a slower kernel);
//! the builds are timed in alternating rounds (the order rotates each round). A ratio below 1 means
//! the rewritten code is faster.

use std::time::{Duration, Instant};

use crate::{RunDyn, inputs, ms, sample, stats};

/// Both builds of one model.
struct Pair {
    name: &'static str,
    inputs: &'static [&'static [usize]],
    outputs: &'static [&'static [usize]],
    /// With the default rewrites, with none, and with all but scratch fitting.
    runs: [RunDyn; BUILDS],
    /// Arena bytes of the builds.
    arenas: [usize; BUILDS],
}

macro_rules! pairs {
    ($($module:ident: $name:literal => $path:literal),* $(,)?) => {
        $(
            mod $module {
                sramfit::model! { pub mod rewritten { path: $path } }
                sramfit::model! { pub mod unfitted { path: $path, optimize: { fit_scratch: false } } }
                sramfit::model! {
                    pub mod plain {
                        path: $path,
                        optimize: {
                            fuse_activations: false, in_place: false, fit_scratch: false,
                            schedule: false, tile: false, elide_concat: false, transpose: false, subsample: false,
                            pack_weights: false,
                        },
                    }
                }
            }
        )*
        const PAIRS: &[Pair] = &[$(
            Pair {
                name: $name,
                inputs: $module::rewritten::INPUT_SHAPES,
                outputs: $module::rewritten::OUTPUT_SHAPES,
                runs: [$module::rewritten::run_dyn, $module::plain::run_dyn, $module::unfitted::run_dyn],
                arenas: [$module::rewritten::ARENA_BYTES, $module::plain::ARENA_BYTES, $module::unfitted::ARENA_BYTES],
            },
        )*];
    };
}

bench_models! {
    pairs,
    shufflenet: "ShuffleNetV2" => "../tests/models/arch/shufflenetv2.onnx",
    squeezenet: "SqueezeNet 1.1" => "../tests/models/arch/squeezenet11.onnx",
}

/// Builds per model: default rewrites, none, all but scratch fitting.
const BUILDS: usize = 3;

/// Rounds per model, each timing both builds for about [`ROUND_TIME`].
const ROUNDS: usize = 9;
const ROUND_TIME: Duration = Duration::from_millis(150);

/// Prints the table.
pub fn run() {
    println!(
        "sramfit-bench --rewrites: default rewrites vs none (and all but scratch fitting), batch 1, one thread, {ROUNDS} rotating rounds"
    );
    println!();
    println!(
        "| model | arena with / without / without fitting (bytes) | with ms (p10-p90) | without ms (p10-p90) \
         | all but fitting ms (p10-p90) | with/without | all but fitting/without |"
    );
    println!("|---|--:|--:|--:|--:|--:|--:|");
    for p in PAIRS {
        let data = inputs(p.inputs);
        let ins: Vec<&[f32]> = data.iter().map(Vec::as_slice).collect();
        let mut outs: Vec<Vec<f32>> = p.outputs.iter().map(|s| vec![0.0; s.iter().product()]).collect();
        let mut run = |k: usize| {
            let mut refs: Vec<&mut [f32]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
            (p.runs[k])(&ins, &mut refs).expect("run_dyn");
            std::hint::black_box(&refs);
        };
        // Calibrate on the slower build, so both run about ROUND_TIME per round.
        let mut once = Duration::from_micros(1);
        for k in 0..BUILDS {
            run(k);
            let start = Instant::now();
            run(k);
            once = once.max(start.elapsed());
        }
        let iterations = ((ROUND_TIME.as_secs_f64() / once.as_secs_f64()) as usize).clamp(3, 10_000);
        let mut samples: [Vec<Duration>; BUILDS] = Default::default();
        for round in 0..ROUNDS {
            for i in 0..BUILDS {
                let k = (round + i) % BUILDS;
                sample(&mut || run(k), iterations, &mut samples[k]);
            }
        }
        let [with, without, unfitted] = samples.each_mut().map(|s| stats(s));
        let cell = |(m, lo, hi): (Duration, Duration, Duration)| format!("{} ({}-{})", ms(m), ms(lo), ms(hi));
        println!(
            "| {} | {} / {} / {} | {} | {} | {} | {:.3} | {:.3} |",
            p.name,
            p.arenas[0],
            p.arenas[1],
            p.arenas[2],
            cell(with),
            cell(without),
            cell(unfitted),
            with.0.as_secs_f64() / without.0.as_secs_f64(),
            unfitted.0.as_secs_f64() / without.0.as_secs_f64()
        );
    }
}
