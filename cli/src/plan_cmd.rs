//! `sramfit plan FILE.csv [--out OFFSETS.csv] [--budget-steps N | --search-long]`: plans a MiniMalloc CSV
//! instance, verifies the plan, optionally writes `id,offset` rows, and prints one JSON line
//! `{"buffers":N,"arena_bytes":N,"lower_bound":N,"algorithm":"...","optimal":B,"ms":N}`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::time::Instant;

use serde::Serialize;
use sramfit_planner_core::csv::{read_problem, write_offsets};
use sramfit_planner_core::plan::{plan_with, Algorithm, Options};
use sramfit_planner_core::verify::verify;

use crate::CliError;

/// The JSON line printed on success (fields in this order).
#[derive(Serialize)]
struct Summary {
    buffers: usize,
    arena_bytes: u64,
    lower_bound: u64,
    algorithm: Algorithm,
    optimal: bool,
    ms: u128,
}

/// Parsed arguments of `plan`.
struct Args {
    input: String,
    out: Option<String>,
    options: Options,
}

fn parse(args: Vec<String>) -> Result<Args, CliError> {
    let mut input = None;
    let mut out = None;
    let mut options = Options::default();
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| it.next().ok_or_else(|| CliError::usage(format!("{flag} needs a value")));
        match arg.as_str() {
            "--out" => out = Some(value("--out")?),
            "--search-long" => options.search_steps = Options::LONG_SEARCH_STEPS,
            "--budget-steps" => {
                let v = value("--budget-steps")?;
                options.search_steps =
                    v.parse().map_err(|_| CliError::usage(format!("--budget-steps: `{v}` is not a number")))?;
            }
            flag if flag.starts_with("--") => return Err(CliError::usage(format!("plan: unknown option `{flag}`"))),
            _ if input.is_none() => input = Some(arg),
            _ => return Err(CliError::usage(format!("plan: unexpected argument `{arg}`"))),
        }
    }
    let input = input.ok_or_else(|| {
        CliError::usage("usage: sramfit plan FILE.csv [--out OFFSETS.csv] [--budget-steps N | --search-long]")
    })?;
    Ok(Args { input, out, options })
}

/// Runs the subcommand.
pub fn run(args: Vec<String>) -> Result<(), CliError> {
    let args = parse(args)?;
    let text = std::fs::read_to_string(&args.input).map_err(|e| CliError::usage(format!("{}: {e}", args.input)))?;
    let problem = read_problem(&text).map_err(|e| CliError::usage(format!("{}: {e}", args.input)))?;
    let start = Instant::now();
    let plan = plan_with(&problem, &args.options);
    let ms = start.elapsed().as_millis();
    verify(&problem, &plan.offsets, plan.arena_bytes, &[])
        .map_err(|v| CliError::failure(format!("internal error, invalid plan: {}", v.describe(&problem))))?;
    if let Some(out) = &args.out {
        let write = |out: &str| -> std::io::Result<()> {
            let mut w = BufWriter::new(File::create(out)?);
            write_offsets(&problem, &plan.offsets, &mut w)?;
            w.flush()
        };
        write(out).map_err(|e| CliError::failure(format!("{out}: {e}")))?;
    }
    let summary = Summary {
        buffers: problem.buffers.len(),
        arena_bytes: plan.arena_bytes,
        lower_bound: plan.lower_bound.bytes,
        algorithm: plan.algorithm,
        optimal: plan.optimal,
        ms,
    };
    let line = serde_json::to_string(&summary).map_err(|e| CliError::failure(e.to_string()))?;
    println!("{line}");
    Ok(())
}
