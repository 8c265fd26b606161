//! sramfit's compiler core.
//!
//! Data flows one way through this crate, and every arrow is a plain data structure:
//!
//! ```text
//! import (tract -> ir::Graph) -> rewrites -> boundary -> storage passes + liveness (Problem)
//!        -> plan (planners, lower bound) -> verify -> codegen (proc_macro2::TokenStream)
//! ```
//!
//! [`compile::compile_model`] runs the stages of one [`request::Request`] up to a verified
//! [`pipeline::Program`] (or one per class of lengths of a bounded dimension);
//! [`codegen::emit`] turns that into the items of the user's model module. Nothing here depends on
//! proc-macro types beyond `proc_macro2`, so the macro, a build script and the CLI all share it.

pub mod boundary;
pub mod budget;
pub mod codegen;
#[cfg(feature = "onnx")]
pub mod compile;
pub mod csv;
#[cfg(feature = "onnx")]
pub mod dynamic;
pub mod error;
#[cfg(feature = "onnx")]
pub mod import;
pub mod ir;
pub mod liveness;
pub mod offline;
pub mod ops;
pub mod optimize;
pub mod pipeline;
pub mod plan;
pub mod pools;
pub mod problem;
pub mod report;
#[cfg(feature = "onnx")]
pub mod request;
pub mod target;
pub mod tensor;
pub mod timings;
pub mod units;
pub mod verify;
pub mod weights;
