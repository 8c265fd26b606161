//! MicroFlow on `ad01_int8.tflite` (see the crate docs).

use microflow::model;
use sramfit_microflow_compare::{matrix, values};

#[model("../../../shared/mlperf-tiny/ad01_int8.tflite")]
struct Ad;

fn main() {
    sramfit_microflow_compare::main("ad01_int8", |x| values(&Ad::predict_quantized(matrix::<1, 640>(x))));
}
