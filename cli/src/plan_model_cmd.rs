//! `sramfit plan MODEL.onnx [--search-long] [--budget-steps N] [--algorithm NAME] [--input NAME=D,..]...
//! [--out FILE]`: plans a model ahead of time and writes the offline plan file `MODEL.plan.json`
//! beside it (see `sramfit_planner_core::offline`), which `model!` and `sramfit-build` then use
//! instead of planning during the build, after verifying it.
//!
//! Prints what the build-time planner finds and what was written, e.g.
//! `kws_dscnn.onnx: arena 64000 B (lower bound 64000 B, proven optimal, search); the build-time planner finds 64000 B; wrote models/kws_dscnn.plan.json`.

use std::path::PathBuf;
use std::time::Instant;

use sramfit_planner_core::compile::compile_model;
use sramfit_planner_core::offline::{plan_path, PlanFile};
use sramfit_planner_core::plan::{plan_using, plan_with, Algorithm, Options};
use sramfit_planner_core::request::Request;
use sramfit_planner_core::verify::verify;

use crate::request_args::{self, one_line};
use crate::CliError;

/// Usage line of the model form of `plan`.
pub fn usage() -> String {
    format!(
        "usage: sramfit plan MODEL.onnx [--search-long] [--budget-steps N] [--algorithm NAME] [--out FILE.plan.json] [flags]\n{}",
        request_args::usage()
    )
}

/// Parsed arguments.
#[derive(Debug)]
struct Args {
    /// What to plan (never from an existing plan file: this command replaces it).
    request: Request,
    search_steps: Option<u64>,
    algorithm: Option<Algorithm>,
    out: Option<String>,
}

fn parse(args: Vec<String>) -> Result<Args, CliError> {
    let mut out = Args { request: Request::new(""), search_steps: None, algorithm: None, out: None };
    let mut model = None;
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| it.next().ok_or_else(|| CliError::usage(format!("{flag} needs a value")));
        if request_args::apply(&mut out.request, &arg, &mut value)? {
            continue;
        }
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
            "--out" => out.out = Some(value("--out")?),
            "-h" | "--help" => return Err(CliError::usage(usage())),
            flag if flag.starts_with("--") => return Err(CliError::usage(format!("plan: unknown option `{flag}`"))),
            _ if model.is_none() => model = Some(arg),
            _ => return Err(CliError::usage(format!("plan: unexpected argument `{arg}`"))),
        }
    }
    let model: String = model.ok_or_else(|| CliError::usage(usage()))?;
    (out.request.path, out.request.shown_path) = (model.clone().into(), model.into());
    Ok(out)
}

/// Runs the subcommand.
pub fn run(args: Vec<String>) -> Result<(), CliError> {
    let args = parse(args)?;
    let model = args.request.path.clone();
    let shown = args.request.shown_path.display().to_string();
    if !args.request.pools.is_empty() {
        return Err(CliError::usage(
            "--pool: a plan file holds a single-arena plan, and pools are always planned afresh; see them with `sramfit inspect MODEL --pool ..`",
        ));
    }
    // The build-time plan, computed fresh (an existing plan file is what this command replaces).
    let program =
        compile_model(&args.request).map_err(|e| CliError::usage(format!("{shown}: {}", one_line(&e))))?.into_program();
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

    let bytes = std::fs::read(&model).map_err(|e| CliError::usage(format!("{shown}: {e}")))?;
    let file = PlanFile::new(&bytes, problem, &plan, options.search_steps);
    let out = args.out.map_or_else(|| plan_path(&model), PathBuf::from);
    std::fs::write(&out, file.to_json()).map_err(|e| CliError::failure(format!("{}: {e}", out.display())))?;
    println!(
        "{}: arena {} B (lower bound {} B, {}, {}, {seconds:.1} s); the build-time planner finds {} B; wrote {}",
        shown,
        plan.arena_bytes,
        plan.lower_bound.bytes,
        if plan.optimal { "proven optimal" } else { "not proven optimal" },
        plan.algorithm,
        program.plan.arena_bytes,
        out.display()
    );
    Ok(())
}
