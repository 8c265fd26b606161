//! Whole models through `model!`, checked against onnxruntime (committed fixtures) and tract.

mod common;

common::bundled_models!(common::fixtures);
