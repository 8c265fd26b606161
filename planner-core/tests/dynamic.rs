//! Bounded dynamic dimensions through the compiler core: which lengths share code, what the
//! generated expressions are, and the errors for dimensions that cannot vary.
#![cfg(feature = "onnx")]

use std::path::Path;
use std::time::Instant;

use sramfit_planner_core::codegen::CodegenOptions;
use sramfit_planner_core::dynamic::{self, DynamicProgram};
use sramfit_planner_core::error::CompileError;
use sramfit_planner_core::request::{Bound, InputSpec, Request};

/// Compiles `model` (relative to this crate) with axis `axis` of its input `input` of `dims`
/// bounded as `symbol <= max`.
fn compile(model: &str, dims: &[usize], axis: usize, symbol: &str, max: usize) -> Result<DynamicProgram, CompileError> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(model);
    let mut request = Request::new(path);
    request.inputs = vec![InputSpec::fixed("input", dims)];
    let bound = Bound { symbol: symbol.into(), min: 1, max, axes: vec![("input".into(), axis)] };
    dynamic::compile(&request, &bound)
}

#[test]
fn lengths_whose_graph_differs_get_their_own_class() {
    let start = Instant::now();
    let d = compile("../tests/models/dynamic/conv1d_gap.onnx", &[1, 40, 98], 2, "frames", 98).unwrap();
    let items = dynamic::emit::emit(&d, &CodegenOptions::default());
    eprintln!("conv1d_gap, frames <= 98: compiled and emitted in {:.2?}", start.elapsed());
    // From 40 frames on the convolution's im2col scratch fits under the activation peak (scratch
    // fitting gives it none below); at length 1 tract drops the division by the length.
    let lens: Vec<Vec<usize>> = d.classes.iter().map(|c| c.lens.clone()).collect();
    assert_eq!(lens, vec![(40..=98).collect::<Vec<_>>(), (2..=39).collect(), vec![1]]);
    let arenas: Vec<u64> = d.classes.iter().map(|c| c.program.plan.arena_bytes).collect();
    assert_eq!(d.program.plan.arena_bytes, *arenas.iter().max().unwrap());
    // The time axis appears as expressions of the length variable, named after the dimension.
    let text = items.to_string();
    assert!(text.contains("match frames { 2usize ..= 39usize =>"), "dispatch on the length");
    assert!(text.contains("[40 * frames]"), "the input length, 40 channels by `frames`");
    assert_eq!(d.input_lens[0].at(98), 40 * 98);
}

#[test]
fn strided_windows_give_floor_expressions() {
    let d = compile("../tests/models/dynamic/strided_conv.onnx", &[1, 8, 40], 2, "frames", 40).unwrap();
    assert_eq!(d.classes.len(), 1);
    if std::env::var_os("SRAMFIT_PRINT").is_some() {
        let items = dynamic::emit::emit(&d, &CodegenOptions::default());
        let file: syn::File = syn::parse2(items).unwrap();
        let text = prettyplease::unparse(&file);
        println!("{}", &text[text.find("pub const DYNAMIC_DIM").unwrap_or(0)..]);
    }
    let out = d.output_shapes[0][2];
    assert_eq!(out.d, 4, "two stride-2 windows: floor((n + 3) / 4)");
    assert!((1..=40).all(|n| out.at(n) as usize == n.div_ceil(2).div_ceil(2)));
}

#[test]
fn a_dimension_flattened_into_a_fixed_gemm_cannot_vary() {
    let e = compile("../ui-tests/models/dyn_flatten_gemm.onnx", &[1, 10, 8], 1, "frames", 10).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, CompileError::DynamicDim { .. }), "{text}");
    assert!(text.contains("`frames`") && text.contains("frames = 9") && text.contains("node `fc` (Gemm)"), "{text}");
}
