//! # sramfit
//!
//! A build-time neural-network compiler for memory-tight targets. One macro invocation loads an ONNX
//! model while your crate compiles, plans every activation into one statically sized arena, checks the
//! arena against your SRAM budget, and emits a straight-line, allocation-free `no_std` function.
//!
//! ```ignore
//! sramfit::model! {
//!     /// Keyword spotting, 12 classes.
//!     pub mod kws {
//!         path: "models/kws.onnx",
//!         sram: 64 KiB,
//!     }
//! }
//!
//! let mut scores = [0.0f32; 12];
//! kws::run(&features, &mut scores)?;
//! ```
//!
//! See the [`model!`] macro for everything the expansion contains, and the repository's README.md
//! for the list of supported operators.
#![no_std]
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

mod arena;
mod checked;
mod error;
#[cfg(feature = "probe")]
pub mod probe;
mod tensor;

pub use arena::ArenaGuard;
pub use error::{Error, Port};
pub use sramfit_macros::{model, models};
/// The kernels generated code calls (`sramfit-runtime-min`), re-exported for generated code and for
/// users who want to call a kernel directly.
pub use sramfit_runtime_min as kernels;
/// How a quantized port's integers map to reals: `real = scale * (q - zero_point)` (a generated
/// module's `INPUT_QUANT` / `OUTPUT_QUANT`).
pub use sramfit_runtime_min::quant::Quantization;
pub use sramfit_runtime_min::DType;
pub use tensor::{Element, TensorMut, TensorRef};

/// Support code for the expansion of [`model!`]. Not a stable API: only generated code should use it.
#[doc(hidden)]
pub mod __private {
    pub use crate::arena::{arena_slice, arena_slice_mut, weights_slice, ArenaGuard, StaticArena, StaticPool};
    pub use crate::tensor::{port_mut, port_ref};
    /// The call generated code makes after each step with feature `probe`.
    #[cfg(feature = "probe")]
    pub mod probe {
        pub use crate::probe::step_done;
    }

    /// Run-time plan checks, called only by expansions generated in checked mode.
    pub mod checked {
        pub use crate::checked::{overlap, Buffer, Checker, Overlap, Step, CANARY};
    }
}
