//! `sramfit`: the command-line front end of the sramfit planner.
//!
//! Each subcommand lives in its own module and exposes `run(args) -> Result<(), CliError>`.

#[cfg(feature = "onnx")]
mod heap;
#[cfg(feature = "onnx")]
mod inspect_cmd;
mod plan_cmd;
#[cfg(feature = "onnx")]
mod plan_model_cmd;
#[cfg(feature = "onnx")]
mod request_args;

use std::fmt;
use std::process::ExitCode;

/// Top-level usage text.
const USAGE: &str = "usage: sramfit <command> [args]\n\ncommands:\n  plan FILE.csv [--out OFFSETS.csv] [--budget-steps N | --search-long]   plan a MiniMalloc CSV instance\n  plan MODEL.onnx|MODEL.tflite [--search-long] [--budget-steps N] [--algorithm NAME] [--out F] [flags]\n                                                          write the offline plan MODEL.plan.json that model! uses\n  inspect MODEL.onnx|MODEL.tflite [--json F] [--svg F] [--html F] [--timings] [flags]\n                                                          show a model's schedule, memory plan and device map\n\n`sramfit inspect --help` lists the flags (every option of model!).";

/// A failed command: the message to print and the process exit code.
pub struct CliError {
    /// Exit code: 2 for bad usage or bad input, 1 for other failures.
    pub code: u8,
    /// One-line message, printed to stderr after `sramfit: `.
    pub message: String,
}

impl CliError {
    /// Bad usage or bad input (exit code 2).
    pub fn usage(message: impl Into<String>) -> Self {
        CliError { code: 2, message: message.into() }
    }

    /// Any other failure, such as an unwritable output file (exit code 1).
    pub fn failure(message: impl Into<String>) -> Self {
        CliError { code: 1, message: message.into() }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let command = args.next();
    let args: Vec<String> = args.collect();
    let result = match command.as_deref() {
        #[cfg(feature = "onnx")]
        Some("plan") if args.iter().any(|a| is_model(a)) => plan_model_cmd::run(args),
        Some("plan") => plan_cmd::run(args),
        #[cfg(feature = "onnx")]
        Some("inspect") => inspect_cmd::run(args),
        #[cfg(not(feature = "onnx"))]
        Some("inspect") => Err(CliError::usage("inspect: this sramfit was built without the `onnx` feature")),
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(CliError::usage(format!("unknown command `{other}`\n{USAGE}"))),
        None => Err(CliError::usage(USAGE)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sramfit: {e}");
            ExitCode::from(e.code)
        }
    }
}

/// Whether a `plan` argument names a model (ONNX or TFLite) rather than a MiniMalloc CSV.
#[cfg(feature = "onnx")]
fn is_model(arg: &str) -> bool {
    let lower = arg.to_ascii_lowercase();
    lower.ends_with(".onnx") || lower.ends_with(".tflite")
}
