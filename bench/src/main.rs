//! `cargo run --release -p sramfit-bench [NAME...]`: single-thread, batch-1 latency of the code `model!`
//! generates, against tract (optimized plan) on the same ONNX file and, when Python `onnxruntime`
//! is installed, onnxruntime with one intra-op thread (a worker subprocess per model,
//! `bench/ort_bench.py`, that loads the model once and times runs on request).
//!
//! Every engine runs on one core (the bench pins itself, and so its workers, to the core it
//! starts on) and the engines alternate every [`ROUND_TIME`] or so over [`ROUNDS`] rounds (the
//! order flips each round), so a noisy machine moves all of them together; the table reports
//! per-inference medians with their 10th-90th percentile spread, the ratios, sramfit's median over
//! onnxruntime's per round (the median and spread over the rounds of the ratio of the two
//! engines' medians in that round), the GFLOP/s sramfit reaches (2 x multiply-accumulates /
//! median) and its share of this core's f32 FMA peak (derivation printed with the table).
//!
//! sramfit's kernels are the ones a user's own crate gets, built without any flags: the best path
//! the CPU runs, detected at run time (the table's header names it); `-- --kernel-path NAME` forces
//! another (`portable`, `avx2+fma`, `avx512`).
//!
//! The int8 rows are the QDQ files of `tests/models/quant/` (float ports, integer arithmetic inside):
//! onnxruntime runs them with its integer kernels (`session.qdqisint8allowed`, int8 x int8 as in
//! the fixtures), tract in its own quantized ops; a second table puts each int8 row's sramfit time
//! next to its float twin's, timed in the same alternating rounds (the float rows' own figures
//! come from other minutes of the run), and next to onnxruntime's int8 run of the same file. The header names the int8 kernels that ran (x86-64: AVX2, or AVX-512 VNNI).
//!
//! `-- --layers` (with `--features layers`) adds the time of every step of each model after the
//! tables ([`layers`]); `-- --json FILE` writes every figure printed to `FILE` as well (header,
//! rows, int8 rows, steps).
//!
//! `-- --rewrites` instead times each model with and without the memory-saving rewrites
//! ([`rewrites`]).

/// Calls `$callback! { module: "name" => "path", ... }` with the bench models, then `$extra` (more
/// entries), so that the latency table and `--rewrites` time one list.
macro_rules! bench_models {
    ($callback:ident $(, $($extra:tt)*)?) => {
        $callback! {
            kws: "keyword spotting DS-CNN" => "../tests/models/kws_dscnn.onnx",
            vww: "visual wake words MobileNetV1-0.25" => "../tests/models/vww_mobilenetv1.onnx",
            resnet8: "ResNet-8 (CIFAR)" => "../tests/models/resnet8.onnx",
            autoencoder: "FC autoencoder" => "../tests/models/fc_autoencoder.onnx",
            mnist: "MNIST CNN" => "../tests/models/mnist_cnn.onnx",
            mobilenetv2: "MobileNetV2-0.35 96x96" => "../tests/models/arch/mobilenetv2_035.onnx",
            resnet18: "ResNet-18 64x64" => "../tests/models/arch/resnet18.onnx",
            transformer: "transformer encoder layer" => "../tests/models/arch/transformer_encoder.onnx",
            kws_int8: "keyword spotting DS-CNN, int8 QDQ" => "../tests/models/quant/kws_dscnn_qdq_s8.onnx",
            vww_int8: "visual wake words MobileNetV1-0.25, int8 QDQ" => "../tests/models/quant/vww_mobilenetv1_qdq_s8.onnx",
            resnet8_int8: "ResNet-8 (CIFAR), int8 QDQ" => "../tests/models/quant/resnet8_qdq_s8.onnx",
            autoencoder_int8: "FC autoencoder, int8 QDQ" => "../tests/models/quant/fc_autoencoder_qdq_s8.onnx",
            mnist_int8: "MNIST CNN, int8 QDQ" => "../tests/models/quant/mnist_cnn_qdq_s8.onnx",
            mobilenetv2_int8: "MobileNetV2-0.35 96x96, int8 QDQ" => "../tests/models/quant/mobilenetv2_035_qdq_s8.onnx",
            $($($extra)*)?
        }
    };
}

mod layers;
mod rewrites;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sramfit_planner_core::compile::compile_model;
use sramfit_planner_core::report::PlanReport;
use sramfit_planner_core::request::Request;
use tract_onnx::prelude::*;

/// A generated model's `run_dyn`.
type RunDyn = fn(&[&[f32]], &mut [&mut [f32]]) -> Result<(), sramfit::Error>;

/// One benchmarked model.
struct Bench {
    name: &'static str,
    /// Relative to this crate's directory.
    path: &'static str,
    inputs: &'static [&'static [usize]],
    outputs: &'static [&'static [usize]],
    run: RunDyn,
}

macro_rules! benches {
    ($($module:ident: $name:literal => $path:literal),* $(,)?) => {
        $( sramfit::model! { mod $module { path: $path } } )*
        const BENCHES: &[Bench] = &[$(
            Bench { name: $name, path: $path, inputs: $module::INPUT_SHAPES, outputs: $module::OUTPUT_SHAPES, run: $module::run_dyn },
        )*];
    };
}

bench_models!(benches);

/// Rounds per model; each round times every engine for about [`ROUND_TIME`].
const ROUNDS: usize = 31;
const ROUND_TIME: Duration = Duration::from_millis(30);

fn crate_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Deterministic inputs in [-1, 1).
fn inputs(shapes: &[&[usize]]) -> Vec<Vec<f32>> {
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    shapes
        .iter()
        .map(|shape| {
            (0..shape.iter().product::<usize>())
                .map(|_| {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
                })
                .collect()
        })
        .collect()
}

/// An engine: `(n, out)` runs `n` inferences and appends their times to `out`.
type Engine<'a> = Box<dyn FnMut(usize, &mut Vec<Duration>) + 'a>;

/// Times `iterations` calls of `f`, one sample per call.
fn sample(f: &mut dyn FnMut(), iterations: usize, out: &mut Vec<Duration>) {
    for _ in 0..iterations {
        let start = Instant::now();
        f();
        out.push(start.elapsed());
    }
}

/// What [`time_rounds`] measured: per engine, every sample and each round's median.
struct Timed {
    samples: Vec<Vec<Duration>>,
    round_medians: Vec<Vec<Duration>>,
}

/// Times the engines over [`ROUNDS`] rounds, each engine about [`ROUND_TIME`] per round, one
/// after the other (every other round in the opposite order): a machine whose speed moves over
/// seconds moves all of them alike, and two engines' medians of one round are a pair.
fn time_rounds(engines: &mut [(&str, Engine)]) -> Timed {
    let iterations: Vec<usize> = (engines.iter_mut())
        .map(|(_, run)| {
            let mut warm = Vec::new();
            run(2, &mut warm);
            let once = warm.last().copied().unwrap_or_default().max(Duration::from_micros(1));
            ((ROUND_TIME.as_secs_f64() / once.as_secs_f64()) as usize).clamp(3, 10_000)
        })
        .collect();
    let mut timed = Timed { samples: vec![Vec::new(); engines.len()], round_medians: vec![Vec::new(); engines.len()] };
    for round in 0..ROUNDS {
        let mut order: Vec<usize> = (0..engines.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for e in order {
            let mut this = Vec::with_capacity(iterations[e]);
            (engines[e].1)(iterations[e], &mut this);
            if !this.is_empty() {
                timed.round_medians[e].push(stats(&mut this).0);
            }
            timed.samples[e].extend(this);
        }
    }
    timed
}

/// Pins this thread, and so the onnxruntime workers it starts afterwards, to the core it runs on,
/// and returns that core: on a shared machine each core has its own slow spells (here, 1.5-2x for
/// seconds at a time, independently on either core), and engines that run on different cores
/// would not share them.
#[cfg(target_os = "linux")]
fn pin_to_this_core() -> Option<usize> {
    // SAFETY: plain system calls on a zeroed `cpu_set_t` owned by this frame.
    unsafe {
        let cpu = usize::try_from(libc::sched_getcpu()).ok()?;
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        (libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0).then_some(cpu)
    }
}

#[cfg(not(target_os = "linux"))]
fn pin_to_this_core() -> Option<usize> {
    None
}

/// The median and the 10th-90th percentiles over the rounds of `a`'s round median over `b`'s
/// (None unless both have every round).
fn paired_ratio(a: &[Duration], b: &[Duration]) -> Option<(f64, f64, f64)> {
    if a.len() != ROUNDS || b.len() != ROUNDS {
        return None;
    }
    let mut r: Vec<f64> = a.iter().zip(b).map(|(x, y)| x.as_secs_f64() / y.as_secs_f64()).collect();
    r.sort_by(f64::total_cmp);
    Some(spread(&r))
}

/// onnxruntime on one model: a `bench/ort_bench.py` worker that has loaded it and times runs on
/// request, so that a round costs no process start or session load.
struct OrtWorker {
    child: Child,
    requests: ChildStdin,
    replies: BufReader<ChildStdout>,
}

impl OrtWorker {
    /// A worker for `model`, once it has loaded the model (None when onnxruntime cannot run it).
    fn start(model: &Path) -> Option<Self> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("ort_bench.py");
        let mut child = (Command::new("python3").arg(script).arg(model))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let requests = child.stdin.take()?;
        let mut replies = BufReader::new(child.stdout.take()?);
        let mut ready = String::new();
        replies.read_line(&mut ready).ok()?;
        let worker = OrtWorker { child, requests, replies };
        (ready.trim() == "ready").then_some(worker)
    }

    /// This worker as an [`Engine`] (a failed request adds no samples).
    fn engine(&mut self) -> Engine<'_> {
        Box::new(|n, out| out.extend(self.samples(n).unwrap_or_default()))
    }

    /// The per-inference times of `iterations` runs (None when the worker failed).
    fn samples(&mut self, iterations: usize) -> Option<Vec<Duration>> {
        writeln!(self.requests, "{iterations}").ok()?;
        let mut line = String::new();
        self.replies.read_line(&mut line).ok()?;
        line.split_whitespace().map(|t| t.parse().ok().map(Duration::from_nanos)).collect()
    }
}

impl Drop for OrtWorker {
    fn drop(&mut self) {
        // The worker exits when its stdin closes; do not leave it running if it does not.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// (median, 10th percentile, 90th percentile).
fn stats(samples: &mut [Duration]) -> (Duration, Duration, Duration) {
    samples.sort();
    spread(samples)
}

/// (median, 10th percentile, 90th percentile) of sorted, non-empty `values`.
fn spread<T: Copy>(values: &[T]) -> (T, T, T) {
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.1), at(0.9))
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}

/// This core's f32 FMA peak in GFLOP/s, and how it was found: measured, as the rate of
/// independent fused multiply-adds on the widest vectors the CPU runs (AVX-512 or AVX2+FMA, 16
/// chains, well over the FMA latency times its ports), at whatever clock the core holds under
/// that load. (A clock from `/proc/cpuinfo` is the nominal one: turbo runs faster, AVX-512 may
/// run slower.)
fn fma_peak() -> (f64, String) {
    let (rate, isa, lanes) = fma_rate();
    let peak = rate * lanes as f64 * 2.0;
    let how = format!(
        "f32 FMA peak of one core: {rate:.2} G FMA instructions/s measured ({isa}, 16 independent chains) x {lanes} lanes x 2 flops = {peak:.1} GFLOP/s"
    );
    (peak, how)
}

/// Fused multiply-add instructions per nanosecond on the widest vectors this CPU runs, its
/// instruction set, and their lanes (the best of 5 runs of 16 million, a few milliseconds each).
fn fma_rate() -> (f64, &'static str, usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        /// `fn $name(n)`: `n` rounds of 16 independent chains of `$fmadd` on `$set1` vectors,
        /// compiled with `$features` (the accumulators go to `black_box`, so nothing is dropped).
        macro_rules! chains {
            ($name:ident, $features:literal, $set1:ident, $fmadd:ident) => {
                #[target_feature(enable = $features)]
                fn $name(n: u64) {
                    let (b, c) = ($set1(std::hint::black_box(0.999_999)), $set1(1e-7));
                    let mut acc = [$set1(1.0); 16];
                    for _ in 0..n {
                        for a in acc.iter_mut() {
                            *a = $fmadd(*a, b, c);
                        }
                    }
                    std::hint::black_box(acc);
                }
            };
        }
        chains!(chains512, "avx512f", _mm512_set1_ps, _mm512_fmadd_ps);
        chains!(chains256, "avx2,fma", _mm256_set1_ps, _mm256_fmadd_ps);
        let time = |f: &dyn Fn(u64)| {
            let n = 1_000_000;
            (0..5)
                .map(|_| {
                    let start = Instant::now();
                    f(std::hint::black_box(n));
                    (n * 16) as f64 / start.elapsed().as_nanos() as f64
                })
                .fold(0.0, f64::max)
        };
        if is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F.
            return (time(&|n| unsafe { chains512(n) }), "AVX-512", 16);
        }
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has AVX2 and FMA.
            return (time(&|n| unsafe { chains256(n) }), "AVX2+FMA", 8);
        }
    }
    (0.0, "no FMA vectors", 1)
}

/// Zeroed output buffers of `b`, one per output port.
fn output_buffers(b: &Bench) -> Vec<Vec<f32>> {
    b.outputs.iter().map(|s| vec![0.0; s.iter().product()]).collect()
}

/// Runs `b`'s sramfit build once on `ins` into `outs`.
fn run_once(b: &Bench, ins: &[&[f32]], outs: &mut [Vec<f32>]) {
    let mut refs: Vec<&mut [f32]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
    (b.run)(ins, &mut refs).expect("run_dyn");
    std::hint::black_box(&refs);
}

/// Removes `option VALUE` from `args`, returning the value (if the option was given).
fn take_option(args: &mut Vec<String>, option: &str) -> Option<String> {
    let i = args.iter().position(|a| a == option)?;
    let value = args.get(i + 1).unwrap_or_else(|| panic!("{option} takes a value")).clone();
    args.drain(i..i + 2);
    Some(value)
}

/// Puts the kernel path named after `--kernel-path` in force, if given.
fn kernel_path_option(args: &mut Vec<String>) {
    use sramfit::kernels::{KernelPath, force_kernel_path};
    let Some(name) = take_option(args, "--kernel-path") else { return };
    let path = KernelPath::ALL.into_iter().find(|p| p.name() == name).expect("portable, avx2+fma or avx512");
    force_kernel_path(path).unwrap_or_else(|_| panic!("this CPU does not run the {name} kernels"));
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    kernel_path_option(&mut args);
    let json_file = take_option(&mut args, "--json");
    let with_layers = args.iter().any(|a| a == "--layers");
    args.retain(|a| a != "--layers");
    if with_layers && !cfg!(feature = "layers") {
        panic!(
            "--layers times steps through the step probes: `cargo run --release -p sramfit-bench --features layers -- --layers`"
        );
    }
    if args.iter().any(|a| a == "--rewrites") {
        return rewrites::run();
    }
    let (peak, how) = fma_peak();
    let with_ort =
        Command::new("python3").args(["-c", "import onnxruntime"]).output().is_ok_and(|o| o.status.success());
    let pinned = pin_to_this_core();
    let core = pinned.map_or("not pinned to a core".to_owned(), |c| format!("every engine on core {c}"));
    println!("sramfit-bench: batch 1, one thread, {ROUNDS} alternating rounds per model, {core}");
    println!("{how}");
    let kernels = sramfit::kernels::kernel_path().name();
    let detected = sramfit::kernels::detected_kernel_path().name();
    let int8_kernels = sramfit::kernels::quant_kernels();
    println!(
        "sramfit kernels: {kernels} (run-time detection, no build flags; detected: {detected}); int8 kernels: {int8_kernels}"
    );
    let host = sramfit_planner_core::target::Target::host();
    let tiling = match host.memory_first() {
        true => format!(
            "patch-based execution where it saves {}% of the arena",
            sramfit_planner_core::optimize::tile::MIN_GAIN_PERCENT
        ),
        false => "speed first, no patch-based execution (it runs only for a budget here)".to_owned(),
    };
    println!("plans: `model!`'s defaults for {}: {tiling}", host.triple);
    if cfg!(feature = "layers") {
        println!("(built with feature `layers`: every step calls the step probe's hook, empty outside `--layers`)");
    }
    if !with_ort {
        println!("(onnxruntime not found: `pip install onnxruntime` to add its column)");
    }
    println!();
    println!(
        "| model | MMACs | sramfit ms (p10-p90) | tract ms (p10-p90) | onnxruntime ms (p10-p90) | sramfit/tract | sramfit/ort | sramfit/ort per round (p10-p90) | sramfit GFLOP/s | % of peak |"
    );
    println!("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    // `cargo run --release -p sramfit-bench -- resnet mnist`: only the models whose name contains
    // one of the arguments (case-insensitive).
    let filters: Vec<String> = args.iter().map(|a| a.to_lowercase()).collect();
    let selected = |b: &Bench| filters.is_empty() || filters.iter().any(|f| b.name.to_lowercase().contains(f));
    let mut medians: Vec<Medians> = Vec::new();
    let mut rows: Vec<Value> = Vec::new();
    let mut layer_tables: Vec<(&str, Vec<layers::Layer>)> = Vec::new();
    for b in BENCHES.iter().filter(|b| selected(b)) {
        let path = crate_path(b.path);
        let program = compile_model(&Request::new(&path)).expect("the model compiles").into_program();
        let step_macs: Vec<u64> =
            PlanReport::from_program(&program, b.name, &sramfit_planner_core::target::Target::host())
                .steps
                .iter()
                .map(|s| s.macs)
                .collect();
        let macs: u64 = step_macs.iter().sum();

        let data = inputs(b.inputs);
        let mut outs = output_buffers(b);
        let mut plan = tract_onnx::onnx().model_for_path(&path).expect("tract loads the model");
        for (i, shape) in b.inputs.iter().enumerate() {
            plan.set_input_fact(i, f32::fact(*shape).into()).expect("input fact");
        }
        let plan = plan.into_optimized().and_then(|m| m.into_runnable()).expect("tract optimizes the model");
        let tract_inputs: TVec<TValue> =
            data.iter().zip(b.inputs).map(|(d, s)| Tensor::from_shape(s, d).unwrap().into()).collect();

        let ins: Vec<&[f32]> = data.iter().map(Vec::as_slice).collect();
        let mut sramfit_run = || run_once(b, &ins, &mut outs);
        let mut tract_run = || {
            std::hint::black_box(plan.run(tract_inputs.clone()).expect("tract runs"));
        };
        // An int8 row times its float twin too, in the same alternating rounds, so that their
        // ratio does not depend on what else the machine ran between two rows.
        let twin = (b.name.strip_suffix(INT8)).and_then(|float| BENCHES.iter().find(|t| t.name == float));
        let mut twin_outs = twin.map_or(Vec::new(), output_buffers);
        let mut twin_run = || run_once(twin.expect("an int8 row with a float twin"), &ins, &mut twin_outs);
        let mut ort_worker = with_ort.then(|| OrtWorker::start(&path)).flatten();
        let mut engines: Vec<(&str, Engine)> = vec![
            ("sramfit", Box::new(|n, out: &mut Vec<Duration>| sample(&mut sramfit_run, n, out))),
            ("tract", Box::new(|n, out: &mut Vec<Duration>| sample(&mut tract_run, n, out))),
        ];
        if twin.is_some() {
            engines.push(("sramfit f32", Box::new(|n, out: &mut Vec<Duration>| sample(&mut twin_run, n, out))));
        }
        // onnxruntime's place among the engines (the last), when its worker started.
        let ort_index = ort_worker.as_mut().map(|w| {
            engines.push(("onnxruntime", w.engine()));
            engines.len() - 1
        });
        let timed = time_rounds(&mut engines);
        drop(engines);
        let mut samples = timed.samples;
        let ort = ort_index.map(|i| std::mem::take(&mut samples[i]));
        let paired = ort_index.and_then(|i| paired_ratio(&timed.round_medians[0], &timed.round_medians[i]));
        let (s, t) = (stats(&mut samples[0]), stats(&mut samples[1]));
        let float_twin = twin.is_some().then(|| stats(&mut samples[2]).0);
        let o = ort.filter(|o| !o.is_empty()).map(|mut o| stats(&mut o));
        let cell = |x: Option<(Duration, Duration, Duration)>| {
            x.map_or("-".into(), |(m, lo, hi)| format!("{} ({}-{})", ms(m), ms(lo), ms(hi)))
        };
        medians.push(Medians { name: b.name, sramfit: s.0, onnxruntime: o.map(|o| o.0), float_twin });
        let gflops = 2.0 * macs as f64 / s.0.as_secs_f64() / 1e9;
        let ratio = |x: Duration| s.0.as_secs_f64() / x.as_secs_f64();
        println!(
            "| {} | {:.1} | {} | {} | {} | {:.2} | {} | {} | {:.2} | {:.1}% |",
            b.name,
            macs as f64 / 1e6,
            cell(Some(s)),
            cell(Some(t)),
            cell(o),
            ratio(t.0),
            o.map_or("-".into(), |o| format!("{:.2}", ratio(o.0))),
            paired.map_or("-".into(), |(m, lo, hi)| format!("{m:.2} ({lo:.2}-{hi:.2})")),
            gflops,
            100.0 * gflops / peak
        );
        rows.push(json!({
            "model": b.name, "path": b.path, "macs": macs,
            "sramfit_ms": ms_json(Some(s)), "tract_ms": ms_json(Some(t)), "onnxruntime_ms": ms_json(o),
            "sramfit_over_tract": ratio(t.0), "sramfit_over_onnxruntime": o.map(|o| ratio(o.0)),
            "sramfit_over_onnxruntime_per_round": paired.map(|(m, lo, hi)| json!({ "median": m, "p10": lo, "p90": hi })),
            "gflops": gflops, "peak_share": gflops / peak,
        }));
        if with_layers {
            let steps = layers::time_layers(&program, &mut sramfit_run, &step_macs).expect("feature layers");
            layer_tables.push((b.name, steps));
        }
    }
    let int8_rows = int8_versus_float(&medians);
    let layer_json: Vec<Value> = (layer_tables.iter())
        .map(|(name, steps)| json!({ "model": name, "steps": layers::print(name, steps, peak) }))
        .collect();
    if let Some(file) = json_file {
        let report = json!({
            "rounds": ROUNDS, "core": pinned, "fma_peak_gflops": peak, "fma_peak": how,
            "kernels": kernels, "detected_kernels": detected, "int8_kernels": int8_kernels,
            "probes": cfg!(feature = "layers"), "onnxruntime": with_ort,
            "models": rows, "int8": int8_rows, "layers": layer_json,
        });
        let text = serde_json::to_string_pretty(&report).expect("JSON");
        std::fs::write(&file, text + "\n").unwrap_or_else(|e| panic!("cannot write {file}: {e}"));
        println!();
        println!("(every figure above written to {file})");
    }
}

/// A (median, 10th, 90th percentile) triple in milliseconds, as JSON (`null` when absent).
fn ms_json(x: Option<(Duration, Duration, Duration)>) -> Value {
    let f = |d: Duration| d.as_secs_f64() * 1e3;
    x.map_or(Value::Null, |(m, lo, hi)| json!({ "median": f(m), "p10": f(lo), "p90": f(hi) }))
}

/// The suffix naming an int8 bench row; the row without it is its float twin.
const INT8: &str = ", int8 QDQ";

/// One row's medians.
struct Medians<'a> {
    name: &'a str,
    sramfit: Duration,
    onnxruntime: Option<Duration>,
    /// An int8 row's float twin, timed in the same rounds.
    float_twin: Option<Duration>,
}

/// sramfit's int8 time of each model next to its float twin's (timed in the same alternating
/// rounds) and to onnxruntime's int8 run of the same file; returns the rows as JSON.
fn int8_versus_float(medians: &[Medians]) -> Vec<Value> {
    let rows: Vec<(&str, &Medians, Duration)> =
        (medians.iter()).filter_map(|m| Some((m.name.strip_suffix(INT8)?, m, m.float_twin?))).collect();
    if rows.is_empty() {
        return Vec::new();
    }
    println!();
    println!(
        "| model | sramfit int8 ms | sramfit f32 ms | int8/f32 | onnxruntime int8 ms | sramfit/onnxruntime (int8) |"
    );
    println!("|---|--:|--:|--:|--:|--:|");
    let f = |d: Duration| d.as_secs_f64() * 1e3;
    (rows.into_iter())
        .map(|(name, int8, float)| {
            let ort = int8.onnxruntime;
            let over_float = int8.sramfit.as_secs_f64() / float.as_secs_f64();
            let over_ort = ort.map(|o| int8.sramfit.as_secs_f64() / o.as_secs_f64());
            println!(
                "| {name} | {} | {} | {over_float:.2} | {} | {} |",
                ms(int8.sramfit),
                ms(float),
                ort.map_or("-".into(), ms),
                over_ort.map_or("-".into(), |r| format!("{r:.2}"))
            );
            json!({
                "model": name, "int8_ms": f(int8.sramfit), "f32_ms": f(float), "int8_over_f32": over_float,
                "onnxruntime_int8_ms": ort.map(f), "int8_over_onnxruntime_int8": over_ort,
            })
        })
        .collect()
}
