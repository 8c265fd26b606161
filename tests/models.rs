//! Whole models through `model!`, checked against onnxruntime (committed fixtures) and tract.

mod common;


sramfit::model! { mod mlp { path: "tests/models/mlp.onnx" } }

#[test]
fn mlp_matches_references() {
    common::check_model("tests/models/mlp.onnx", mlp::OUTPUT_SHAPES, mlp::run_dyn);
}
