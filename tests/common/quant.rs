//! Quantized fixtures (`tests/models/quant/`, scripts/README.md "Quantized ONNX fixtures"): typed
//! tensors with onnxruntime's outputs, run through a generated module's `run_typed`, compared in
//! quantization steps of each output.
#![allow(dead_code)]

use sramfit::{DType, TensorMut, TensorRef};

/// One typed tensor of a fixture; values as `f64` (exact for every element type used).
pub struct QTensor {
    pub name: String,
    pub dtype: DType,
    pub data: Vec<f64>,
    /// Scale per element's channel: one value, or one per index of `axis`.
    pub scales: Vec<f64>,
    pub axis: usize,
    /// Elements per index of `axis`.
    pub inner: usize,
}

/// The `(scale, zero point)` of each port, `None` for float ports and per-axis ones.
pub type PortQuant = Vec<Option<(f32, i32)>>;

/// The [`PortQuant`] the fixture gives its inputs and outputs: what a generated module's
/// `INPUT_QUANT` / `OUTPUT_QUANT` state.
pub fn port_quant(model_rel: &str) -> (PortQuant, PortQuant) {
    let path = super::repo_path(&super::fixture_of(model_rel));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let ports = |list: &serde_json::Value| -> PortQuant {
        (list.as_array().unwrap().iter())
            .map(|t| {
                let q = &t["quant"];
                let integer = t["dtype"].as_str() != Some("float32");
                match (q["scale"].as_f64(), q["zero_point"].as_i64()) {
                    (Some(scale), Some(zp)) if integer => Some((scale as f32, zp as i32)),
                    _ => None,
                }
            })
            .collect()
    };
    (ports(&v["inputs"]), ports(&v["outputs"]))
}

/// Inputs and onnxruntime's outputs.
pub struct Sample {
    pub inputs: Vec<QTensor>,
    pub outputs: Vec<QTensor>,
}

fn dtype(name: &str) -> DType {
    match name {
        "float32" => DType::F32,
        "int8" => DType::I8,
        "uint8" => DType::U8,
        "int16" => DType::I16,
        "int32" => DType::I32,
        other => panic!("fixture dtype {other}"),
    }
}

fn tensors(v: &serde_json::Value) -> Vec<QTensor> {
    let list = |x: &serde_json::Value| -> Vec<f64> {
        match x.as_array() {
            Some(a) => a.iter().map(|v| v.as_f64().unwrap()).collect(),
            None => x.as_f64().into_iter().collect(),
        }
    };
    (v.as_array().expect("tensors").iter())
        .map(|t| {
            let shape: Vec<usize> =
                t["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap() as usize).collect();
            let q = &t["quant"];
            let axis = q["axis"].as_u64().unwrap_or(0) as usize;
            let scales = if q.is_null() { Vec::new() } else { list(&q["scale"]) };
            let inner = if scales.len() > 1 { shape[axis + 1..].iter().product() } else { 1 };
            // serde_json does not round every decimal correctly; the fixtures' floats are f32 values.
            let dtype = dtype(t["dtype"].as_str().unwrap());
            let mut data = list(&t["data"]);
            if dtype == DType::F32 {
                data.iter_mut().for_each(|v| *v = *v as f32 as f64);
            }
            QTensor {
                name: t["name"].as_str().unwrap().to_string(),
                dtype,
                data,
                scales: scales.iter().map(|&s| s as f32 as f64).collect(),
                axis,
                inner,
            }
        })
        .collect()
}

/// The fixture's sample and its `extra_samples` (`fixture_rel`: the `.ref.json` file).
pub fn samples(fixture_rel: &str) -> Vec<Sample> {
    let path = super::repo_path(fixture_rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut all = vec![Sample { inputs: tensors(&v["inputs"]), outputs: tensors(&v["outputs"]) }];
    for s in v["extra_samples"].as_array().into_iter().flatten() {
        all.push(Sample { inputs: tensors(&s["inputs"]), outputs: tensors(&s["outputs"]) });
    }
    all
}

/// A typed buffer.
pub enum Buf {
    F32(Vec<f32>),
    I8(Vec<i8>),
    U8(Vec<u8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
}

impl Buf {
    fn new(dtype: DType, data: &[f64]) -> Buf {
        match dtype {
            DType::F32 => Buf::F32(data.iter().map(|&v| v as f32).collect()),
            DType::I8 => Buf::I8(data.iter().map(|&v| v as i8).collect()),
            DType::U8 => Buf::U8(data.iter().map(|&v| v as u8).collect()),
            DType::I16 => Buf::I16(data.iter().map(|&v| v as i16).collect()),
            DType::I32 => Buf::I32(data.iter().map(|&v| v as i32).collect()),
        }
    }

    fn as_ref(&self) -> TensorRef<'_> {
        match self {
            Buf::F32(v) => TensorRef::F32(v),
            Buf::I8(v) => TensorRef::I8(v),
            Buf::U8(v) => TensorRef::U8(v),
            Buf::I16(v) => TensorRef::I16(v),
            Buf::I32(v) => TensorRef::I32(v),
        }
    }

    fn as_mut(&mut self) -> TensorMut<'_> {
        match self {
            Buf::F32(v) => TensorMut::F32(v),
            Buf::I8(v) => TensorMut::I8(v),
            Buf::U8(v) => TensorMut::U8(v),
            Buf::I16(v) => TensorMut::I16(v),
            Buf::I32(v) => TensorMut::I32(v),
        }
    }

    fn values(&self) -> Vec<f64> {
        match self {
            Buf::F32(v) => v.iter().map(|&x| x as f64).collect(),
            Buf::I8(v) => v.iter().map(|&x| x as f64).collect(),
            Buf::U8(v) => v.iter().map(|&x| x as f64).collect(),
            Buf::I16(v) => v.iter().map(|&x| x as f64).collect(),
            Buf::I32(v) => v.iter().map(|&x| x as f64).collect(),
        }
    }
}

/// A generated module's `run_typed`.
pub type RunTyped = fn(&[TensorRef<'_>], &mut [TensorMut<'_>]) -> Result<(), sramfit::Error>;

/// How far a model's outputs are from onnxruntime's, over all samples.
#[derive(Debug, Default)]
pub struct Agreement {
    /// Largest difference in quantization steps of the output (integers: their difference).
    pub max_steps: f64,
    /// Elements compared, and those exactly equal.
    pub elements: usize,
    pub equal: usize,
    /// Largest absolute difference of float outputs onnxruntime does not quantize (a float
    /// function after the last DequantizeLinear).
    pub max_float_error: f64,
}

impl Agreement {
    pub fn equal_fraction(&self) -> f64 {
        self.equal as f64 / self.elements.max(1) as f64
    }
}

/// Runs every sample of the fixture beside the ONNX file `model_rel` through `run` and measures
/// the agreement.
pub fn agreement(model_rel: &str, out_types: &[DType], out_shapes: &[&[usize]], run: RunTyped) -> Agreement {
    agreement_with(&super::fixture_of(model_rel), out_types, out_shapes, run)
}

/// Runs every sample of the fixture `fixture_rel` through `run` and measures the agreement.
pub fn agreement_with(fixture_rel: &str, out_types: &[DType], out_shapes: &[&[usize]], run: RunTyped) -> Agreement {
    let model_rel = fixture_rel;
    let mut a = Agreement::default();
    for sample in samples(fixture_rel) {
        let inputs: Vec<Buf> = sample.inputs.iter().map(|t| Buf::new(t.dtype, &t.data)).collect();
        let mut outputs: Vec<Buf> =
            (out_types.iter().zip(out_shapes)).map(|(&d, s)| Buf::new(d, &vec![0.0; s.iter().product()])).collect();
        let refs: Vec<TensorRef<'_>> = inputs.iter().map(Buf::as_ref).collect();
        let mut muts: Vec<TensorMut<'_>> = outputs.iter_mut().map(Buf::as_mut).collect();
        run(&refs, &mut muts).unwrap_or_else(|e| panic!("{model_rel}: run_typed: {e:?}"));
        for (got, want) in outputs.iter().zip(&sample.outputs) {
            let got = got.values();
            assert_eq!(got.len(), want.data.len(), "{model_rel}: length of output {}", want.name);
            for (i, (&g, &w)) in got.iter().zip(&want.data).enumerate() {
                let diff = (g - w).abs();
                a.elements += 1;
                let steps = match (want.dtype, want.scales.len()) {
                    (DType::F32, 0) => {
                        // A float function of the same input: equal up to its last bits.
                        a.max_float_error = a.max_float_error.max(diff);
                        a.equal += usize::from(diff <= 1e-6 * w.abs().max(1.0));
                        continue;
                    }
                    // Both are dequantized integers: a whole number of steps, up to f32 rounding.
                    (DType::F32, n) => (diff / want.scales[(i / want.inner.max(1)) % n] * 1e3).round() / 1e3,
                    _ => diff,
                };
                // Dequantized outputs of the same integer are the same float.
                a.equal += usize::from(steps < 1e-3);
                a.max_steps = a.max_steps.max(steps);
            }
        }
    }
    a
}
