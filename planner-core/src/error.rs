//! Everything that can stop a model from compiling, with the argument of the macro it is about.
//!
//! Every variant's message names the cause and the fix, phrased for the front end the user wrote
//! the option in ([`CompileError::render`] with a [`FrontEnd`]: `model!`'s `sram: 64 KiB`,
//! `sramfit-build`'s `.sram(65536)`, the CLI's `--sram 64KiB`); [`CompileError::argument`] says
//! which macro argument a compile error should point at.

use std::fmt;
use std::path::{Path, PathBuf};

/// The macro argument an error is about (so the macro can put the error's span on it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Argument {
    /// `path:` — the model file itself.
    Path,
    /// `inputs:` — the input shapes.
    Inputs,
    /// `sram:` — the arena budget.
    Sram,
    /// `flash:` — the weight budget.
    Flash,
    /// `limits:` — the build-time resource limits.
    Limits,
    /// `io:` — where the inputs and outputs live.
    Io,
    /// `pools:` — the memory pools.
    Pools,
}

/// Where the user wrote the options, so that a message's fix is written the way they write it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrontEnd {
    /// `sramfit::model! { .. }`.
    Macro,
    /// `sramfit_build::Model` in a build script.
    BuildScript,
    /// The `sramfit` command line.
    Cli,
}

impl FrontEnd {
    /// How to fix graph input `input` to `dims` (each a number or `"NAME <= MAX"`).
    fn input_fix(self, input: &str, dims: &[String]) -> String {
        match self {
            FrontEnd::Macro => format!("inputs: {{ \"{input}\": [{}] }}", dims.join(", ")),
            FrontEnd::BuildScript if dims.iter().all(|d| d.parse::<usize>().is_ok()) => {
                format!(".input({input:?}, &[{}])", dims.join(", "))
            }
            FrontEnd::BuildScript => {
                let quoted: Vec<String> = dims.iter().map(|d| format!("\"{}\"", d.trim_matches('"'))).collect();
                format!(".input_dims({input:?}, &[{}])", quoted.join(", "))
            }
            FrontEnd::Cli => {
                let bare: Vec<&str> = dims.iter().map(|d| d.trim_matches('"')).collect();
                let value = format!("{input}={}", bare.join(",").replace(' ', ""));
                match value.contains('<') {
                    true => format!("--input '{value}'"),
                    false => format!("--input {value}"),
                }
            }
        }
    }

    /// How to set limit `key` to `value` (bytes when `bytes`).
    #[cfg(feature = "onnx")]
    fn limit_fix(self, key: &str, value: u64, bytes: bool) -> String {
        let human = if bytes { crate::units::round_up_units(value) } else { value.to_string() };
        match self {
            FrontEnd::Macro => format!("limits: {{ {key}: {human} }}"),
            FrontEnd::BuildScript => format!(".limit({key:?}, {value})"),
            FrontEnd::Cli => format!("--limit {key}={}", human.replace(' ', "")),
        }
    }

    /// The name of budget option `what` (`sram` or `flash`).
    pub(crate) fn budget(self, what: &str) -> String {
        match self {
            FrontEnd::Macro => format!("`{what}`"),
            FrontEnd::BuildScript => format!("`.{what}(..)`"),
            FrontEnd::Cli => format!("`--{what}`"),
        }
    }

    /// Where a relative model path is resolved from.
    fn path_help(self) -> &'static str {
        match self {
            FrontEnd::Macro => "`path` is relative to the directory of the crate's Cargo.toml",
            FrontEnd::BuildScript => {
                "a relative path in `Model::new` is relative to the directory of the crate's Cargo.toml"
            }
            FrontEnd::Cli => "a relative path is relative to the current directory",
        }
    }
}

/// One operator the runtime cannot execute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnsupportedOp {
    /// The ONNX node name (as tract names it).
    pub node: String,
    /// The operator (tract's name for it).
    pub op: String,
    /// Why, when more specific than "not implemented".
    pub reason: String,
}

/// Why a model did not compile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompileError {
    /// The model file does not exist.
    NotFound {
        /// The resolved path.
        path: PathBuf,
    },
    /// The path exists but is not a regular file.
    NotAFile {
        /// The resolved path.
        path: PathBuf,
    },
    /// The file could not be read.
    Io {
        /// The resolved path.
        path: PathBuf,
        /// The OS error.
        message: String,
    },
    /// The file is not a valid model (ONNX: not protobuf, truncated, or rejected by tract; TFLite:
    /// a flatbuffer the verifier rejects, or inconsistent tensors).
    InvalidModel {
        /// The resolved path.
        path: PathBuf,
        /// What the decoder said.
        message: String,
    },
    /// The model declares no graph inputs.
    NoInputs,
    /// `inputs:` names a tensor that is not a graph input.
    UnknownInput {
        /// The name given.
        name: String,
        /// The model's input names.
        known: Vec<String>,
    },
    /// `inputs:` gives a shape of the wrong rank.
    InputRank {
        /// The input.
        name: String,
        /// Rank declared by the model.
        model_rank: usize,
        /// Rank given.
        given_rank: usize,
    },
    /// An input dimension is symbolic and was not fixed with `inputs:`.
    SymbolicDim {
        /// The input.
        input: String,
        /// Axis index.
        axis: usize,
        /// The dimension's symbol (or `?`).
        symbol: String,
        /// The input's shape with the symbol shown, for the suggested line.
        shape: Vec<String>,
    },
    /// A tensor other than a float32 activation or weight survived constant folding.
    UnsupportedType {
        /// Tensor name.
        tensor: String,
        /// Its element type.
        dtype: String,
    },
    /// Operators the runtime lacks.
    Unsupported(Vec<UnsupportedOp>),
    /// A tensor's size does not fit in `usize` bytes.
    ShapeOverflow {
        /// Tensor name.
        tensor: String,
    },
    /// The plan file beside the model matches it but cannot be used (unreadable, malformed, or its
    /// plan fails verification).
    PlanFile {
        /// The plan file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// A bounded dynamic dimension (`inputs: { "x": [1, "frames <= 98", 40] }`) cannot vary over its
    /// whole range: the model fails at some length, or a step's code is not the same code at every
    /// length up to integer expressions of the length.
    DynamicDim {
        /// The dimension's name as written in `inputs:` (e.g. `frames`).
        symbol: String,
        /// The node whose code or shape depends on the length in a way sramfit cannot express.
        node: Option<String>,
        /// What goes wrong, at which length.
        message: String,
    },
    /// The planner produced a plan the verifier rejected (a bug in sramfit: please report it).
    PlanRejected {
        /// The verifier's description.
        message: String,
    },
    /// A build-time resource limit (`limits:`, `import::limits::Limits`) would be exceeded.
    #[cfg(feature = "onnx")]
    Limit {
        /// The limit's key (`fold_bytes`, `fold_tensor_bytes`, `nodes`, `tensor_elements`).
        key: &'static str,
        /// The node that would exceed it (empty for the node count).
        node: String,
        /// Its operator.
        op: String,
        /// What it would make (e.g. `a constant of 17179869184 bytes [1, 4096, 1024, 1024]`).
        what: String,
        /// The quantity (bytes, elements or nodes).
        amount: u64,
        /// The limit.
        limit: u64,
        /// Whether `amount` and `limit` count bytes (else elements or nodes).
        bytes: bool,
    },
    /// The planned arena exceeds the `sram` budget.
    SramBudget {
        /// Arena bytes the plan needs.
        needed: u64,
        /// The budget.
        budget: u64,
        /// The over-budget report ([`crate::budget::sram_overflow_report`]): lower bound, peak
        /// step and its largest tensors, the rewrites tried.
        report: String,
    },
    /// A memory pool's plan exceeds its size (`pools:`, [`crate::pools`]).
    PoolBudget {
        /// The pool's name.
        pool: String,
        /// Bytes its plan needs.
        needed: u64,
        /// Its size.
        budget: u64,
        /// What it holds, its lower bound and what the earlier pools hold.
        report: String,
    },
    /// The weights exceed the `flash` budget.
    FlashBudget {
        /// Weight bytes.
        needed: u64,
        /// The budget.
        budget: u64,
    },
    /// An option of the request is malformed (an unknown rewrite or limit, a malformed dimension).
    BadOption {
        /// The option as `model!` names it (`inputs`, `optimize`, `limits`, ...).
        option: &'static str,
        /// What is wrong and how to write it.
        message: String,
    },
}

impl CompileError {
    /// The same error with the model path as the user wrote it instead of the resolved absolute
    /// path (and the plan file beside it), so that messages are short and stable.
    pub fn with_model_path(&self, given: &Path) -> CompileError {
        use CompileError::*;
        let path = given.to_owned();
        match self {
            NotFound { .. } => NotFound { path },
            NotAFile { .. } => NotAFile { path },
            Io { message, .. } => Io { path, message: message.clone() },
            InvalidModel { message, .. } => InvalidModel { path, message: message.clone() },
            PlanFile { path: plan, message } => {
                let beside = plan.file_name().map_or_else(|| plan.clone(), |name| given.with_file_name(name));
                PlanFile { path: beside, message: message.clone() }
            }
            other => other.clone(),
        }
    }

    /// Which macro argument this error is about.
    pub fn argument(&self) -> Argument {
        match self {
            CompileError::UnknownInput { .. }
            | CompileError::InputRank { .. }
            | CompileError::SymbolicDim { .. }
            | CompileError::DynamicDim { .. } => Argument::Inputs,
            #[cfg(feature = "onnx")]
            CompileError::Limit { .. } => Argument::Limits,
            CompileError::BadOption { option: "inputs", .. } => Argument::Inputs,
            CompileError::BadOption { option: "limits", .. } => Argument::Limits,
            CompileError::BadOption { option: "io", .. } => Argument::Io,
            CompileError::BadOption { option: "pools", .. } | CompileError::PoolBudget { .. } => Argument::Pools,
            CompileError::SramBudget { .. } => Argument::Sram,
            CompileError::FlashBudget { .. } => Argument::Flash,
            _ => Argument::Path,
        }
    }

    /// The message, with its fixes written for `front`.
    pub fn render(&self, front: FrontEnd) -> String {
        Rendered(self, front).to_string()
    }
}

impl fmt::Display for CompileError {
    /// The message as `model!` shows it ([`CompileError::render`] for another front end).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Rendered(self, FrontEnd::Macro).fmt(f)
    }
}

/// An error rendered for a front end.
struct Rendered<'a>(&'a CompileError, FrontEnd);

impl fmt::Display for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use CompileError::*;
        let front = self.1;
        match self.0 {
            NotFound { path } => write!(f, "model file not found: {}\n  = help: {}", path.display(), front.path_help()),
            NotAFile { path } => write!(f, "model path is not a file: {}\n  = help: point `path` at an .onnx file", path.display()),
            Io { path, message } => write!(f, "cannot read model file {}: {message}", path.display()),
            InvalidModel { path, message } if path.extension().is_some_and(|e| e == "tflite") => write!(
                f,
                "{} is not a valid TFLite model: {message}\n  = help: check that the file is a complete TFLite flatbuffer (load it with `python -c \"import tensorflow as tf; tf.lite.Interpreter('FILE')\"`)",
                path.display()
            ),
            InvalidModel { path, message } => write!(
                f,
                "{} is not a valid ONNX model: {message}\n  = help: check that the file is a complete ONNX export (open it with `python -c \"import onnx; onnx.checker.check_model('FILE')\"`)",
                path.display()
            ),
            NoInputs => write!(f, "the model has no graph inputs; sramfit needs at least one input to plan for"),
            UnknownInput { name, known } => {
                write!(f, "`inputs` names `{name}`, which is not an input of the model; its inputs are: {}", known.join(", "))
            }
            InputRank { name, model_rank, given_rank } => write!(
                f,
                "`inputs` gives `{name}` {given_rank} dimensions, but the model declares {model_rank}"
            ),
            SymbolicDim { input, axis, symbol, shape } => {
                let fixed: Vec<String> =
                    shape.iter().map(|d| if d.parse::<usize>().is_ok() { d.clone() } else { "1".into() }).collect();
                let bounded: Vec<String> = shape
                    .iter()
                    .enumerate()
                    .map(|(i, d)| match (d.parse::<usize>(), i == *axis) {
                        (Ok(_), _) => d.clone(),
                        (Err(_), true) if d != "?" => format!("\"{d} <= MAX\""),
                        (Err(_), true) => "\"len <= MAX\"".into(),
                        (Err(_), false) => "1".into(),
                    })
                    .collect();
                let fixer = match front {
                    FrontEnd::Macro => "in the macro ",
                    FrontEnd::BuildScript => "in build.rs ",
                    FrontEnd::Cli => "",
                };
                write!(
                    f,
                    "input `{input}` has a symbolic dimension `{symbol}` at axis {axis} (shape [{}]); sramfit plans memory for fixed shapes\n  = help: fix it {fixer}with: {}\n  = help: or let it vary up to a bound: {}",
                    shape.join(", "),
                    front.input_fix(input, &fixed),
                    front.input_fix(input, &bounded)
                )
            }
            UnsupportedType { tensor, dtype } => write!(
                f,
                "tensor `{tensor}` has element type {dtype}; sramfit runs float32 models (integer tensors must fold to constants)"
            ),
            Unsupported(ops) => {
                writeln!(f, "the model uses {} operator(s) sramfit's runtime does not support:", ops.len())?;
                for o in ops {
                    write!(f, "  - node `{}`: {}", o.node, o.op)?;
                    if !o.reason.is_empty() {
                        write!(f, " ({})", o.reason)?;
                    }
                    writeln!(f)?;
                }
                write!(f, "  = help: see the supported operator list in sramfit's README.md")
            }
            ShapeOverflow { tensor } => write!(f, "tensor `{tensor}` is too large: its size in bytes overflows usize"),
            PlanFile { path, message } => write!(
                f,
                "plan file {} cannot be used: {message}\n  = help: regenerate it with `sramfit plan MODEL.onnx --search-long`, or delete it to plan during the build",
                path.display()
            ),
            DynamicDim { symbol, node, message } => {
                let at = node.as_ref().map(|n| format!(" (node `{n}`)")).unwrap_or_default();
                let inputs = match front {
                    FrontEnd::Macro => "`inputs:`",
                    FrontEnd::BuildScript => "`.input_dims(..)`",
                    FrontEnd::Cli => "`--input`",
                };
                write!(
                    f,
                    "the dynamic dimension `{symbol}` cannot vary over its bound{at}: {message}\n  = help: fix `{symbol}` to one length (a number in {inputs}), or change the model so that nothing fixed depends on it"
                )
            }
            PlanRejected { message } => write!(f, "internal error: the memory plan failed verification ({message}); please report this bug"),
            #[cfg(feature = "onnx")]
            Limit { key, node, op, what, amount, limit, bytes } => {
                let unit = if *bytes { " bytes" } else { "" };
                match node.is_empty() {
                    true => write!(f, "the model has {what}")?,
                    false => write!(f, "node `{node}` ({op}) would make {what}")?,
                }
                write!(f, ", over the `{key}` limit of {limit}{unit}: sramfit stops before allocating it\n  = help: ")?;
                match *amount {
                    // A count that saturated: no machine holds it, so no limit is worth raising.
                    u64::MAX => write!(f, "no limit can allow this: check the model's shapes (a dimension is out of range)"),
                    _ => write!(
                        f,
                        "a microcontroller model does not need this; if this one does, raise the limit: {}",
                        front.limit_fix(key, *amount, *bytes)
                    ),
                }
            }
            SramBudget { needed, report, .. } => write!(
                f,
                "{report}\n  = help: raise {} to at least {needed}, or shrink the activations: fix smaller input shapes with {}, or reduce the widest layers at the peak",
                front.budget("sram"),
                match front {
                    FrontEnd::Macro => "`inputs: { \"name\": [..] }`",
                    FrontEnd::BuildScript => "`.input(\"name\", &[..])`",
                    FrontEnd::Cli => "`--input NAME=D,..`",
                }
            ),
            PoolBudget { pool, needed, report, .. } => write!(
                f,
                "{report}\n  = help: enlarge pool `{pool}` to at least {needed} bytes, or an earlier pool so that it takes more of the buffers ({})",
                match front {
                    FrontEnd::Macro => "`pools: { .. }`",
                    FrontEnd::BuildScript => "`.pool(name, bytes, section)`",
                    FrontEnd::Cli => "`--pool NAME=SIZE[@SECTION]`",
                }
            ),
            FlashBudget { needed, budget } => write!(
                f,
                "the model's weights need {needed} bytes of flash, but the {} budget is {budget} bytes: {} bytes over",
                front.budget("flash"),
                needed - budget
            ),
            BadOption { option, message } => write!(f, "`{option}`: {message}"),
        }
    }
}

impl std::error::Error for CompileError {}
