//! The driver every front end calls (`model!`, `sramfit-build`, `sramfit inspect` / `plan`): one
//! [`Request`](crate::request::Request) in, [`compile_model`] out: the compiled model
//! ([`Compiled`]: fixed shapes, or a bounded dimension) or one [`CompileError`]; budgets, limits and
//! panics of the ONNX loader are handled here, once, on top of [`pipeline`](crate::pipeline).

use crate::error::CompileError;
use crate::pipeline::{catching, compile_fixed, Program};

/// A model compiled for code generation.
#[derive(Clone, Debug)]
pub enum Compiled {
    /// Fixed input shapes.
    Fixed(Box<Program>),
    /// A bounded dimension: compiled at every length of its range.
    Bounded(Box<crate::dynamic::DynamicProgram>),
}

impl Compiled {
    /// The program at the planned shapes (a bounded dimension's largest length).
    pub fn program(&self) -> &Program {
        match self {
            Compiled::Fixed(p) => p,
            Compiled::Bounded(d) => &d.program,
        }
    }

    /// [`Compiled::program`], by value.
    pub fn into_program(self) -> Program {
        match self {
            Compiled::Fixed(p) => *p,
            Compiled::Bounded(d) => d.program,
        }
    }

    /// The items of the model module (to be placed inside `mod name { ... }`).
    pub fn emit(&self, options: &crate::codegen::CodegenOptions) -> proc_macro2::TokenStream {
        crate::timings::phase("codegen", || match self {
            Compiled::Fixed(p) => crate::codegen::emit(p, options),
            Compiled::Bounded(d) => crate::dynamic::emit::emit(d, options),
        })
    }
}

/// Compiles the model of `request`: imports it within its limits, rewrites, plans (or reads the
/// offline plan file) and verifies it, at every length of a bounded dimension, and checks its
/// budgets. A panic inside a dependency (the ONNX loader) is caught and returned as
/// [`CompileError::InvalidModel`], so that no front end crashes on a hostile model. Paths in
/// errors are the path as the user wrote it ([`Request::shown_path`](crate::request::Request)).
///
/// Patch-based execution declines a tiling that saves less than
/// [`Optimizations::tile_min_gain_percent`](crate::optimize::Optimizations) of the arena (left to
/// the request's target, [`Optimizations::for_target`](crate::optimize::Optimizations::for_target):
/// on x86-64 and AArch64 every tiling); when the `sram` budget or a pool is exceeded without it,
/// the model is compiled again with any gain kept, and that compilation (fitting or not) is the
/// result. Likewise a model whose Winograd convolutions' scratch
/// ([`crate::optimize::winograd`]) breaks the `sram` budget or the pools is compiled again without
/// them.
pub fn compile_model(request: &crate::request::Request) -> Result<Compiled, CompileError> {
    let compile = || {
        request.check_pools()?;
        let mut request = request.clone();
        request.optimizations = request.optimizations.for_target(&request.target);
        // Compiled again for a budget: keeping any tiling gain, and without Winograd convolutions.
        let again = |any_gain: bool, winograd: bool| {
            let mut lean = request.clone();
            if any_gain {
                lean.optimizations.tile_min_gain_percent = Some(0);
            }
            lean.optimizations.winograd &= winograd;
            compile_shapes(&lean)
        };
        // Pools too small: first keep any tiling gain, then give up the Winograd scratch too.
        let over_pools = |c: &Result<Compiled, CompileError>| matches!(c, Err(CompileError::PoolBudget { .. }));
        let mut compiled = compile_shapes(&request);
        if over_pools(&compiled) && request.optimizations.tile {
            compiled = again(true, true);
        }
        if over_pools(&compiled) && request.optimizations.winograd && request.optimizations.blocked_layout {
            compiled = again(true, false);
        }
        let compiled = compiled?;
        let applied = compiled.program().optimizations.1;
        match crate::budget::check(compiled.program(), request.sram, request.flash) {
            Err(CompileError::SramBudget { .. }) if applied.tile_declined.is_some() || applied.winograd_convs > 0 => {
                let compiled = again(applied.tile_declined.is_some(), false)?;
                crate::budget::check(compiled.program(), request.sram, request.flash)?;
                Ok(compiled)
            }
            checked => checked.map(|()| compiled),
        }
    };
    catching(&request.path, compile).map_err(|e| e.with_model_path(&request.shown_path))
}

/// `request` compiled at its fixed shapes, or at every length of its bounded dimension.
fn compile_shapes(request: &crate::request::Request) -> Result<Compiled, CompileError> {
    Ok(match request.bound()? {
        None => Compiled::Fixed(Box::new(compile_fixed(request, &request.planned_inputs())?)),
        Some(bound) => Compiled::Bounded(Box::new(crate::dynamic::compile(request, &bound)?)),
    })
}
