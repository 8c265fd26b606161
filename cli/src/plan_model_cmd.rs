//! `sramfit plan MODEL.onnx [--search-long] [--budget-steps N] [--algorithm NAME] [--input NAME=D,..]...
//! [--out FILE]`: plans a model ahead of time and writes the offline plan file `MODEL.plan.json`
//! beside it (see `sramfit_planner_core::offline`), which `model!` and `sramfit-build` then use
//! instead of planning during the build, after verifying it.
//!
//! Prints what the build-time planner finds and what was written, e.g.
//! `kws_dscnn.onnx: arena 64000 B (lower bound 64000 B, proven optimal, search); the build-time planner finds 64000 B; wrote models/kws_dscnn.plan.json`.

use std::path::PathBuf;
use std::time::Instant;

use sramfit_planner_core::compile::{compile_model, ModelSpec};
use sramfit_planner_core::import::InputShape;
use sramfit_planner_core::offline::{plan_path, PlanFile};
use sramfit_planner_core::plan::{plan_using, plan_with, Algorithm, Options};
use sramfit_planner_core::verify::verify;

use crate::inspect_cmd::{one_line, parse_input};
use crate::CliError;

/// Usage line of the model form of `plan`.
pub const USAGE: &str = "usage: sramfit plan MODEL.onnx [--search-long] [--budget-steps N] [--algorithm NAME] [--input NAME=1,49,10,1]... [--out FILE.plan.json]";

/// Parsed arguments.
#[derive(Debug, Default)]
struct Args {
    model: String,
    inputs: Vec<InputShape>,
    search_steps: Option<u64>,
    algorithm: Option<Algorithm>,
    out: Option<String>,
}

fn parse(args: Vec<String>) -> Result<Args, CliError> {
    let mut out = Args::default();
    let mut model = None;
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| it.next().ok_or_else(|| CliError::usage(format!("{flag} needs a value")));
        match arg.as_str() {
            "--search-long" => out.search_steps = Some(Options::LONG_SEARCH_STEPS),
            "--budget-steps" => {
                let v = value("--budget-steps")?;
                out.search_steps =
                    Some(v.parse().map_err(|_| CliError::usage(format!("--budget-steps: `{v}` is not a number")))?);
            }
            "--algorithm" => {
                let v = value("--algorithm")?;
                let names: Vec<&str> = Algorithm::ALL.iter().map(|a| a.name()).collect();
                out.algorithm = Some(*Algorithm::ALL.iter().find(|a| a.name() == v).ok_or_else(|| {
                    CliError::usage(format!("--algorithm: `{v}` is not one of {}", names.join(", ")))
                })?);
            }
            "--input" => out.inputs.push(parse_input(&value("--input")?)?),
            "--out" => out.out = Some(value("--out")?),
            "-h" | "--help" => return Err(CliError::usage(USAGE)),
            flag if flag.starts_with("--") => return Err(CliError::usage(format!("plan: unknown option `{flag}`"))),
            _ if model.is_none() => model = Some(arg),
            _ => return Err(CliError::usage(format!("plan: unexpected argument `{arg}`"))),
        }
    }
    out.model = model.ok_or_else(|| CliError::usage(USAGE))?;
    Ok(out)
}

/// Runs the subcommand.
pub fn run(args: Vec<String>) -> Result<(), CliError> {
    let args = parse(args)?;
    let model = PathBuf::from(&args.model);
    // The build-time plan, computed fresh (an existing plan file is what this command replaces).
    let spec = ModelSpec { path: model.clone(), inputs: args.inputs.clone(), ..Default::default() };
    let program = compile_model(&spec).map_err(|e| CliError::usage(format!("{}: {}", args.model, one_line(&e))))?;
    let problem = &program.live.problem;
    let options =
        Options { search_steps: args.search_steps.unwrap_or(Options::DEFAULT_SEARCH_STEPS), ..Options::default() };
    let start = Instant::now();
    let plan = match args.algorithm {
        Some(a) => plan_using(problem, a, &options),
        None => plan_with(problem, &options),
    };
    let seconds = start.elapsed().as_secs_f64();
    // The same check every plan gets before code is emitted (the build verifies the file again).
    verify(problem, &plan.offsets, plan.arena_bytes, &[])
        .map_err(|v| CliError::failure(format!("internal error, invalid plan: {}", v.describe(problem))))?;

    let bytes = std::fs::read(&model).map_err(|e| CliError::usage(format!("{}: {e}", args.model)))?;
    let file = PlanFile::new(&bytes, problem, &plan, options.search_steps);
    let out = args.out.map_or_else(|| plan_path(&model), PathBuf::from);
    std::fs::write(&out, file.to_json()).map_err(|e| CliError::failure(format!("{}: {e}", out.display())))?;
    println!(
        "{}: arena {} B (lower bound {} B, {}, {}, {seconds:.1} s); the build-time planner finds {} B; wrote {}",
        args.model,
        plan.arena_bytes,
        plan.lower_bound.bytes,
        if plan.optimal { "proven optimal" } else { "not proven optimal" },
        plan.algorithm,
        program.plan.arena_bytes,
        out.display()
    );
    Ok(())
}
