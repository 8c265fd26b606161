//! MicroFlow on `pretrainedResnet_quant.tflite` (see the crate docs).

use microflow::model;
use sramfit_microflow_compare::{image, values};

#[model("../../../shared/mlperf-tiny/pretrainedResnet_quant.tflite")]
struct Ic;

fn main() {
    sramfit_microflow_compare::main("pretrainedResnet_quant", |x| {
        values(&Ic::predict_quantized(image::<32, 32, 3>(x)))
    });
}
