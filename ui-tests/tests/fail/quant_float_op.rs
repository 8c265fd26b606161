// A float operator between a DequantizeLinear and a QuantizeLinear (Erf, which has no integer
// form) is an error naming the node, never a silent float fall-back inside the quantized region.
sramfit::model! {
    mod m {
        path: "models/quant_float_op.onnx",
    }
}

fn main() {}
