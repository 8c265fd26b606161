//! MicroFlow on `vww_96_int8.tflite` (see the crate docs).

use microflow::model;
use sramfit_microflow_compare::{image, values};

#[model("../../../shared/mlperf-tiny/vww_96_int8.tflite")]
struct Vww;

fn main() {
    sramfit_microflow_compare::main("vww_96_int8", |x| values(&Vww::predict_quantized(image::<96, 96, 3>(x))));
}
