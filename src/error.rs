//! The error type returned by generated `run*` functions.

use core::fmt;

use crate::DType;

/// Which argument of a `run_dyn*` / `run_typed*` call an [`Error::Shape`] or [`Error::Type`] is
/// about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Port {
    /// The number of input slices.
    InputCount,
    /// The number of output slices.
    OutputCount,
    /// The length of input `i` (graph order).
    Input(usize),
    /// The length of output `i` (graph order).
    Output(usize),
    /// The run-time length of a model's bounded dimension (`run_dyn(n, ..)` of a model with
    /// `inputs: { "x": [1, "frames <= 98", 40] }`): `expected` is the largest length accepted.
    Length,
}

/// Why a generated `run*` function refused to run. Nothing was written when it returns an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// Another call (another thread, or an interrupt that preempted a call) is using the module's
    /// shared arena. Retry later, or give each caller its own `Arena` and use `run_in`.
    Busy,
    /// A slice count or a slice length does not match what the model was planned for.
    Shape {
        /// The argument that does not match.
        port: Port,
        /// The count or length the model needs (elements, for lengths).
        expected: usize,
        /// The count or length that was passed.
        found: usize,
    },
    /// A `run_typed*` port holds another element type than the model's port (`INPUT_TYPES`,
    /// `OUTPUT_TYPES`).
    Type {
        /// The port.
        port: Port,
        /// The model's element type for it.
        expected: DType,
        /// The element type that was passed.
        found: DType,
    },
    /// Checked mode only (feature `checked`): the run-time plan check found a tensor that does not
    /// hold what the plan says: after step `step` a live tensor that step must not write had
    /// changed, or before it an input it reads no longer held what its producer wrote. This is a
    /// planner bug: please report it with the model.
    PlanViolation {
        /// The schedule step (node index) at which the check failed.
        step: usize,
        /// The name of that step's node.
        op: &'static str,
        /// The damaged tensor (`<node>.scratch` for a scratch buffer).
        tensor: &'static str,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Busy => f.write_str("the model's shared arena is in use by another call"),
            Error::Shape { port, expected, found } => {
                let what = match port {
                    Port::InputCount => "number of inputs",
                    Port::OutputCount => "number of outputs",
                    Port::Input(_) => "input length",
                    Port::Output(_) => "output length",
                    Port::Length => "length of the bounded dimension",
                };
                match port {
                    Port::Input(i) | Port::Output(i) => {
                        write!(f, "{what} {i}: expected {expected} elements, found {found}")
                    }
                    Port::Length => write!(
                        f,
                        "{what}: expected at most {expected} (and at least the model's MIN_LEN), found {found}"
                    ),
                    _ => write!(f, "{what}: expected {expected}, found {found}"),
                }
            }
            Error::Type { port, expected, found } => {
                match port {
                    Port::Input(i) => write!(f, "input {i}")?,
                    Port::Output(i) => write!(f, "output {i}")?,
                    other => write!(f, "{other:?}")?,
                }
                write!(f, ": expected `{expected}` elements, found `{found}`")
            }
            Error::PlanViolation { step, op, tensor } => write!(
                f,
                "checked mode: at step {step} (node `{op}`) tensor `{tensor}` does not hold what the plan says \
                 (a planner bug: please report it with the model)"
            ),
        }
    }
}

impl core::error::Error for Error {}
