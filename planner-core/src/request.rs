//! What a front end asks the driver to compile: one [`Request`], built the same way by `model!`,
//! `sramfit-build` and `sramfit inspect` / `plan`, and handed to
//! [`compile::compile_model`](crate::compile::compile_model).

use std::path::PathBuf;

use crate::error::CompileError;
use crate::import::limits::Limits;
use crate::import::InputShape;
use crate::ir::Io;
use crate::optimize::Optimizations;
pub use crate::pools::PoolSpec;
use crate::target::Target;

/// The bounded dimension: its name, its range, and where it appears in the inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bound {
    /// The name written in `inputs:` (`frames`): a Rust identifier.
    pub symbol: String,
    /// Smallest length (at least 1).
    pub min: usize,
    /// Largest length: the arena is planned for it.
    pub max: usize,
    /// Every (input name, axis) that has this length.
    pub axes: Vec<(String, usize)>,
}

/// One dimension of a graph input as the user writes it: `98`, `"frames <= 98"` or
/// `"4 <= frames <= 98"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dim {
    /// A fixed extent.
    Fixed(usize),
    /// A bounded dynamic dimension: any length `min..=max` at run time, planned for `max`.
    Bounded {
        /// Its name (a Rust identifier).
        symbol: String,
        /// Smallest length (1 when not written).
        min: usize,
        /// Largest length.
        max: usize,
    },
}

impl Dim {
    /// Parses `98`, `frames <= 98` or `4 <= frames <= 98` (`_` separators allowed in numbers).
    pub fn parse(text: &str) -> Result<Dim, String> {
        let parts: Vec<&str> = text.split("<=").map(str::trim).collect();
        let is_name = |s: &str| {
            s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        let number = |s: &str| s.replace('_', "").parse::<usize>().ok();
        let positive = |s: &str| number(s).filter(|&v| v > 0);
        let (min, symbol, max) = match parts.as_slice() {
            [n] if number(n).is_some() => return Ok(Dim::Fixed(number(n).unwrap_or_default())),
            [name, max] if is_name(name) => (Some(1), *name, positive(max)),
            [min, name, max] if is_name(name) => (positive(min), *name, positive(max)),
            [name] if is_name(name) => {
                return Err(format!(
                    "dimension `{name}` has no bound: sramfit plans memory for the largest length; write \"{name} <= MAX\", e.g. \"{name} <= 98\""
                ))
            }
            _ => (None, "", None),
        };
        match (min, max) {
            (Some(min), Some(max)) if min <= max => Ok(Dim::Bounded { symbol: symbol.to_string(), min, max }),
            _ => Err(format!(
                "malformed bounded dimension \"{text}\": write \"NAME <= MAX\" or \"MIN <= NAME <= MAX\" with NAME an identifier and 1 <= MIN <= MAX, e.g. \"frames <= 98\""
            )),
        }
    }

    /// The extent the model is planned for (a bounded dimension's largest length).
    pub fn planned(&self) -> usize {
        match self {
            Dim::Fixed(d) => *d,
            Dim::Bounded { max, .. } => *max,
        }
    }
}

/// The shape of one graph input, as the user gave it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputSpec {
    /// The graph input's name.
    pub name: String,
    /// Its dimensions.
    pub dims: Vec<Dim>,
}

impl InputSpec {
    /// An input of fixed extents.
    pub fn fixed(name: &str, dims: &[usize]) -> InputSpec {
        InputSpec { name: name.to_owned(), dims: dims.iter().map(|&d| Dim::Fixed(d)).collect() }
    }

    /// Parses `NAME=D,D,..` (split at the last `=`, so names may contain one), each `D` as in
    /// [`Dim::parse`]: `input=1,40,frames<=98`.
    pub fn parse(text: &str) -> Result<InputSpec, String> {
        let bad = || format!("`{text}` is not NAME=D,D,... (e.g. input=1,49,10,1, or input=1,40,frames<=98)");
        // The name ends at the last `=` that is not part of a `<=`.
        let at =
            text.char_indices().filter(|&(i, c)| c == '=' && !text[..i].ends_with('<')).map(|(i, _)| i).next_back();
        let (name, dims) = text.split_at(at.ok_or_else(bad)?);
        let dims = &dims[1..];
        if name.is_empty() || dims.is_empty() {
            return Err(bad());
        }
        let dims = dims.split(',').map(Dim::parse).collect::<Result<Vec<_>, _>>()?;
        Ok(InputSpec { name: name.to_owned(), dims })
    }
}

/// Everything the driver needs to compile one model, whichever front end asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The ONNX file, resolved (absolute, or relative to the current directory).
    pub path: PathBuf,
    /// The path as the user wrote it, for messages.
    pub shown_path: PathBuf,
    /// Shapes fixing or bounding the model's input dimensions.
    pub inputs: Vec<InputSpec>,
    /// Graph rewrites to run before planning (all on by default).
    pub optimizations: Optimizations,
    /// Where the graph inputs and outputs live (the caller's buffers by default).
    pub io: Io,
    /// With `io: arena`, the graph inputs that stay in the caller's buffers all the same (a
    /// sensor's DMA target), by name: `io: arena { "image": caller }`.
    pub caller_inputs: Vec<String>,
    /// The arena budget in bytes, checked by the driver ([`crate::budget::check`]).
    pub sram: Option<u64>,
    /// The weight budget in bytes.
    pub flash: Option<u64>,
    /// Build-time resource limits.
    pub limits: Limits,
    /// The target compiled for (its scratch and stack figures).
    pub target: Target,
    /// Use the offline plan beside the model (`MODEL.plan.json`, see [`crate::offline`]) when it
    /// matches. `model!` and `sramfit-build` do; `sramfit plan`, which writes those files, does not.
    pub use_plan_file: bool,
    /// Checked mode: the generated code checks the plan around every step at run time.
    pub checked: bool,
    /// Memory pools (`pools: { sram: 128 KiB, psram: 8 MiB in ".psram" }`): empty for the single
    /// arena (the default); otherwise every buffer goes to one of them ([`crate::pools`]).
    pub pools: Vec<PoolSpec>,
}

impl Request {
    /// The model at `path` (shown as written) with every default: rewrites on, `io: caller`, no
    /// budgets, default limits, the host target, no plan file, unchecked.
    pub fn new(path: impl Into<PathBuf>) -> Request {
        let path = path.into();
        Request {
            shown_path: path.clone(),
            path,
            inputs: Vec::new(),
            optimizations: Optimizations::default(),
            io: Io::Caller,
            caller_inputs: Vec::new(),
            sram: None,
            flash: None,
            limits: Limits::default(),
            target: Target::host(),
            use_plan_file: false,
            checked: false,
            pools: Vec::new(),
        }
    }

    /// Checks [`Request::pools`] ([`crate::pools::check_specs`]) and what they cannot be combined
    /// with: an `sram` budget (each pool's size is its budget), `io: arena` and a bounded dimension
    /// (not supported with pools); an error naming `pools` and the fix.
    pub fn check_pools(&self) -> Result<(), CompileError> {
        if self.pools.is_empty() {
            return Ok(());
        }
        let bad = |message: String| Err(CompileError::BadOption { option: "pools", message });
        if let Err(message) = crate::pools::check_specs(&self.pools) {
            return bad(message);
        }
        if self.sram.is_some() {
            return bad(
                "`sram` and `pools` both bound the activations: each pool's size is its budget, so remove `sram`"
                    .into(),
            );
        }
        if self.io == Io::Arena {
            return bad("`io: arena` is not supported with pools (the inputs and outputs would need a pool of their own): use `io: caller`, or one arena without `pools`".into());
        }
        if self.inputs.iter().flat_map(|i| &i.dims).any(|d| matches!(d, Dim::Bounded { .. })) {
            return bad("a bounded dynamic dimension is not supported with pools (each class of lengths would need its own assignment): fix the dimension to a number, or use one arena without `pools`".into());
        }
        Ok(())
    }

    /// The indices (into the graph's inputs, ascending) of [`Request::caller_inputs`] in `g`, whose
    /// inputs are named `names`: an error naming the option when a name is no input of the model,
    /// or when they are given without `io: arena`.
    pub fn caller_input_indices(&self, names: &[&str]) -> Result<Vec<usize>, CompileError> {
        let bad = |message: String| CompileError::BadOption { option: "io", message };
        if self.io != Io::Arena && !self.caller_inputs.is_empty() {
            return Err(bad(
                "caller-placed inputs are the exceptions of `io: arena`; with `io: caller` every input is the caller's already"
                    .into(),
            ));
        }
        let mut found = Vec::new();
        for name in &self.caller_inputs {
            let Some(i) = names.iter().position(|n| n == name) else {
                let known: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
                return Err(bad(format!(
                    "`{name}` is not an input of the model, so it cannot stay in the caller's buffer; its inputs are: {}",
                    known.join(", ")
                )));
            };
            if found.contains(&i) {
                return Err(bad(format!("input `{name}` is placed twice; name it once")));
            }
            found.push(i);
        }
        found.sort_unstable();
        Ok(found)
    }

    /// The input shapes the model is planned for (a bounded dimension at its largest length).
    pub fn planned_inputs(&self) -> Vec<InputShape> {
        let dims = |s: &InputSpec| s.dims.iter().map(Dim::planned).collect();
        self.inputs.iter().map(|s| InputShape { name: s.name.clone(), dims: dims(s) }).collect()
    }

    /// The bounded dimension of the inputs, if any: one name, with the same range wherever it
    /// appears.
    pub fn bound(&self) -> Result<Option<Bound>, CompileError> {
        let bad = |message: String| CompileError::BadOption { option: "inputs", message };
        let mut found: Option<Bound> = None;
        for input in &self.inputs {
            for (axis, d) in input.dims.iter().enumerate() {
                let Dim::Bounded { symbol, min, max } = d else { continue };
                let b = found.get_or_insert_with(|| Bound {
                    symbol: symbol.clone(),
                    min: *min,
                    max: *max,
                    axes: Vec::new(),
                });
                if &b.symbol != symbol {
                    return Err(bad(format!(
                        "a second bounded dimension `{symbol}` (the first is `{}`); sramfit supports one per model: fix the other to a number",
                        b.symbol
                    )));
                }
                if (b.min, b.max) != (*min, *max) {
                    return Err(bad(format!(
                        "`{symbol}` is bounded {min}..={max} in `{}` but {}..={} before; give it one range",
                        input.name, b.min, b.max
                    )));
                }
                b.axes.push((input.name.clone(), axis));
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounded(symbol: &str, min: usize, max: usize) -> Dim {
        Dim::Bounded { symbol: symbol.into(), min, max }
    }

    #[test]
    fn dimensions() {
        assert_eq!(Dim::parse("98"), Ok(Dim::Fixed(98)));
        assert_eq!(Dim::parse(" frames <= 98 "), Ok(bounded("frames", 1, 98)));
        assert_eq!(Dim::parse("4 <= frames <= 1_000"), Ok(bounded("frames", 4, 1000)));
        assert!(Dim::parse("frames").unwrap_err().contains("has no bound"));
        assert!(Dim::parse("5 <= frames <= 4").unwrap_err().starts_with("malformed bounded dimension"));
        assert!(Dim::parse("frames <= 0").unwrap_err().starts_with("malformed"));
        assert!(Dim::parse("2x").unwrap_err().starts_with("malformed"));
    }

    #[test]
    fn command_line_inputs() {
        let s = InputSpec::parse("input=1,49,10,1").unwrap();
        assert_eq!(s, InputSpec::fixed("input", &[1, 49, 10, 1]));
        let s = InputSpec::parse("input=1,40,frames<=98").unwrap();
        assert_eq!(s.dims, [Dim::Fixed(1), Dim::Fixed(40), bounded("frames", 1, 98)]);
        let s = InputSpec::parse("a=b=1,2").unwrap();
        assert_eq!((s.name.as_str(), s.dims.len()), ("a=b", 2));
        assert!(InputSpec::parse("input").is_err());
        assert!(InputSpec::parse("input=1,x").is_err());
        assert!(InputSpec::parse("=1").is_err());
    }

    #[test]
    fn one_bound_per_model() {
        let mut r = Request::new("m.onnx");
        r.inputs = vec![
            InputSpec { name: "a".into(), dims: vec![Dim::Fixed(1), bounded("n", 2, 9)] },
            InputSpec { name: "b".into(), dims: vec![bounded("n", 2, 9)] },
        ];
        let b = r.bound().unwrap().unwrap();
        assert_eq!((b.symbol.as_str(), b.min, b.max), ("n", 2, 9));
        assert_eq!(b.axes, [("a".to_string(), 1), ("b".to_string(), 0)]);
        assert_eq!(r.planned_inputs()[0].dims, [1, 9]);
        r.inputs[1].dims = vec![bounded("m", 2, 9)];
        assert!(r.bound().unwrap_err().to_string().contains("a second bounded dimension `m`"));
        r.inputs[1].dims = vec![bounded("n", 1, 9)];
        assert!(r.bound().unwrap_err().to_string().contains("give it one range"));
    }
}
