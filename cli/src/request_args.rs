//! The command-line flags that describe what to compile, shared by `inspect` and `plan`: each sets
//! a field of the planner-core `Request`, parsed by planner-core's own parsers (dimensions, units,
//! the rewrite and limit tables), so that every `model!` option has its flag.

use sramfit_planner_core::error::{CompileError, FrontEnd};
use sramfit_planner_core::import::limits::Limits;
use sramfit_planner_core::ir::Io;
use sramfit_planner_core::optimize::Optimizations;
use sramfit_planner_core::request::{InputSpec, PoolSpec, Request};
use sramfit_planner_core::target::Target;
use sramfit_planner_core::units;

use crate::CliError;

/// The usage text of these flags.
pub fn usage() -> String {
    let rewrites: Vec<String> = Optimizations::REWRITES.iter().map(|r| format!("--no-{}", flag(r.key))).collect();
    let limits: Vec<&str> = Limits::KEYS.iter().map(|k| k.key).collect();
    format!(
        "  --input NAME=D,D,..    fix an input's shape; one dimension may be bounded: --input 'x=1,40,frames<=98'\n  \
         --sram BYTES, --flash BYTES    budgets (65536, 64KiB, 1MiB, 64kB)\n  \
         --pool NAME=SIZE[@SECTION]     a memory pool, instead of --sram (pools: {{ NAME: SIZE in \"SECTION\" }}); give two or more, hottest buffers into the first\n  \
         --io-arena             inputs and outputs in the arena (io: arena)\n  \
         --io-caller NAME       with --io-arena, input NAME stays in the caller's buffer (io: arena {{ \"NAME\": caller }})\n  \
         --no-rewrites          every rewrite off; or one at a time: {}\n                         \
         (--KEY switches one back on after --no-rewrites; --tile also asks for tiling where the\n                         \
         target puts speed first, x86-64 and AArch64, which tile only for a budget unasked)\n  \
         --tile-extra-macs PCT  tile within PCT% extra multiply-accumulates (optimize: {{ tile: PCT% }}; default 10)\n  \
         --limit KEY=VALUE      raise a build-time limit: {} (e.g. --limit fold_bytes=4GiB)\n  \
         --target TRIPLE        the target compiled for (default: this machine's)",
        rewrites.join(", "),
        limits.join(", ")
    )
}

/// A rewrite key as a flag: `in_place` -> `in-place`.
fn flag(key: &str) -> String {
    key.replace('_', "-")
}

/// Applies `arg` (taking its value from `value` when it has one) to `request`; `Ok(false)` when
/// `arg` is not one of these flags.
pub fn apply(
    request: &mut Request,
    arg: &str,
    value: &mut dyn FnMut(&str) -> Result<String, CliError>,
) -> Result<bool, CliError> {
    let bytes = |flag: &str, v: String| {
        units::parse_bytes(&v).map_err(|e| CliError::usage(format!("{flag}: `{v}`: {e} (65536, 64KiB, 1MiB, 64kB)")))
    };
    match arg {
        "--input" => {
            let v = value(arg)?;
            request.inputs.push(InputSpec::parse(&v).map_err(|e| CliError::usage(format!("--input: {e}")))?);
        }
        "--sram" => request.sram = Some(bytes(arg, value(arg)?)?),
        "--flash" => request.flash = Some(bytes(arg, value(arg)?)?),
        "--pool" => {
            let v = value(arg)?;
            request.pools.push(PoolSpec::parse(&v).map_err(|e| CliError::usage(format!("--pool: {e}")))?);
        }
        "--io-arena" => request.io = Io::Arena,
        "--io-caller" => request.caller_inputs.push(value(arg)?),
        "--no-rewrites" => request.optimizations = Optimizations::NONE,
        "--tile-extra-macs" => {
            let v = value(arg)?;
            let percent = v.trim_end_matches('%').parse::<u32>().map_err(|e| {
                CliError::usage(format!("--tile-extra-macs: `{v}`: {e} (a whole percentage such as 5 or 5%)"))
            })?;
            request
                .optimizations
                .set_tile_bound(percent)
                .map_err(|e| CliError::usage(format!("--tile-extra-macs: {e}")))?;
        }
        "--target" => request.target = Target::new(&value(arg)?),
        "--limit" => {
            let v = value(arg)?;
            let (key, amount) =
                v.split_once('=').ok_or_else(|| CliError::usage(format!("--limit: `{v}` is not KEY=VALUE")))?;
            let spec = Limits::key(key)
                .ok_or_else(|| CliError::usage(format!("--limit: {}", request.limits.set(key, 0).unwrap_err())))?;
            let parsed = match spec.bytes {
                true => units::parse_bytes(amount),
                false => units::parse_count(amount),
            };
            let n = parsed.map_err(|e| CliError::usage(format!("--limit {key}: `{amount}`: {e}")))?;
            request.limits.set(key, n).map_err(CliError::usage)?;
        }
        other => {
            let Some(name) = other.strip_prefix("--") else { return Ok(false) };
            let (key, on) = match name.strip_prefix("no-") {
                Some(key) => (key.replace('-', "_"), false),
                None => (name.replace('-', "_"), true),
            };
            if !Optimizations::REWRITES.iter().any(|r| r.key == key) {
                return Ok(false);
            }
            request.optimizations.set(&key, on).map_err(CliError::usage)?;
        }
    }
    Ok(true)
}

/// A compile error as one line: its message (fixes written as flags) without the `= help` lines
/// except the first fix, list items joined with `;`.
pub fn one_line(e: &CompileError) -> String {
    let text = e.render(FrontEnd::Cli);
    let mut s = String::new();
    let mut fix = None;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(help) = line.strip_prefix("= help: ") {
            fix = fix.or(Some(help.to_owned()));
        } else if let Some(item) = line.strip_prefix("- ") {
            if !s.ends_with(':') {
                s.push(';');
            }
            s.push(' ');
            s.push_str(item);
        } else if !line.starts_with("= ") {
            if !s.is_empty() {
                s.push(' ');
            }
            s.push_str(line);
        }
    }
    match fix {
        Some(fix) if fix.contains("--") => format!("{s}; {fix}"),
        _ => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(args: &[&str]) -> Result<Request, CliError> {
        let mut r = Request::new("m.onnx");
        let mut it = args.iter().map(|s| s.to_string());
        while let Some(arg) = it.next() {
            let mut value = |f: &str| it.next().ok_or_else(|| CliError::usage(format!("{f} needs a value")));
            assert!(apply(&mut r, &arg, &mut value)?, "{arg} is a request flag");
        }
        Ok(r)
    }

    #[test]
    fn every_rewrite_has_its_flags() {
        for rw in Optimizations::REWRITES {
            let off = request(&[&format!("--no-{}", flag(rw.key))]).ok().unwrap();
            let mut want = Optimizations::default();
            want.set(rw.key, false).unwrap();
            assert_eq!(off.optimizations, want, "{}", rw.key);
            let only = request(&["--no-rewrites", &format!("--{}", flag(rw.key))]).ok().unwrap();
            let mut want = Optimizations::NONE;
            want.set(rw.key, true).unwrap();
            assert_eq!(only.optimizations, want, "{}", rw.key);
        }
    }

    #[test]
    fn limits_budgets_inputs_and_target() {
        let r = request(&[
            "--limit",
            "fold_bytes=4GiB",
            "--limit",
            "nodes=200_000",
            "--sram",
            "64KiB",
            "--flash",
            "1MiB",
            "--input",
            "x=1,40,frames<=98",
            "--target",
            "thumbv7m-none-eabi",
            "--io-arena",
            "--io-caller",
            "x",
        ])
        .ok()
        .unwrap();
        assert_eq!((r.limits.fold_bytes, r.limits.nodes), (4 << 30, 200_000));
        assert_eq!((r.sram, r.flash), (Some(65536), Some(1 << 20)));
        assert_eq!(r.bound().unwrap().unwrap().max, 98);
        assert_eq!(r.target, Target::new("thumbv7m-none-eabi"));
        assert_eq!((r.io, r.caller_inputs.as_slice()), (Io::Arena, &["x".to_string()][..]));
        for bad in [&["--limit", "nodes=2KiB"][..], &["--limit", "fold=1"], &["--sram", "lots"], &["--input", "x"]] {
            assert!(request(bad).is_err(), "{bad:?}");
        }
        assert!(!apply(&mut Request::new("m"), "--json", &mut |_| Ok(String::new())).ok().unwrap());
    }

    #[test]
    fn tile_bound() {
        let r = request(&["--no-tile", "--tile-extra-macs", "4%"]).ok().unwrap();
        assert!(r.optimizations.tile, "a bound switches tiling back on");
        assert_eq!(r.optimizations.tile_extra_macs_percent, 4);
        assert_eq!(request(&["--tile-extra-macs", "25"]).ok().unwrap().optimizations.tile_extra_macs_percent, 25);
        assert_eq!(Request::new("m").optimizations.tile_extra_macs_percent, 10);
        for bad in ["101", "-1", "five", "2.5"] {
            assert!(request(&["--tile-extra-macs", bad]).is_err(), "{bad}");
        }
    }

    #[test]
    fn errors_are_one_line_with_their_flag_fix() {
        let e = CompileError::NotFound { path: "m.onnx".into() };
        assert_eq!(one_line(&e), "model file not found: m.onnx");
        let e = CompileError::Unsupported(vec![
            sramfit_planner_core::error::UnsupportedOp { node: "a".into(), op: "Foo".into(), reason: String::new() },
            sramfit_planner_core::error::UnsupportedOp { node: "b".into(), op: "Bar".into(), reason: "why".into() },
        ]);
        let line = one_line(&e);
        assert!(!line.contains('\n'), "{line}");
        assert!(line.ends_with("support: node `a`: Foo; node `b`: Bar (why)"), "{line}");
        let e = CompileError::SymbolicDim {
            input: "x".into(),
            axis: 0,
            symbol: "N".into(),
            shape: vec!["N".into(), "49".into()],
        };
        assert!(one_line(&e).ends_with("; fix it with: --input x=1,49"), "{}", one_line(&e));
    }
}
