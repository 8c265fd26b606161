//! MicroFlow on `kws_ref_model.tflite` (see the crate docs).

use microflow::model;
use sramfit_microflow_compare::{image, values};

#[model("../../../shared/mlperf-tiny/kws_ref_model.tflite")]
struct Kws;

fn main() {
    sramfit_microflow_compare::main("kws_ref_model", |x| values(&Kws::predict_quantized(image::<49, 10, 1>(x))));
}
