//! Resize of the two innermost axes (nearest or bilinear; ONNX Resize, Upsample):
//! `runtime_min::resize_nearest` / `resize_linear`.

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min as rt;

use super::literal::f32_expr;
use super::{OpKind, Operands, Scratch, Step, Target};

/// Resize of the two innermost axes (nearest with `nearest` set, else bilinear).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResizeOp {
    /// Geometry, scales and coordinate mode.
    pub params: rt::Resize,
    /// Rounding of nearest-neighbour resize; `None` for linear.
    pub nearest: Option<rt::NearestMode>,
}

impl OpKind for ResizeOp {
    fn kernel_name(&self) -> &'static str {
        match self.nearest {
            Some(_) => "resize_nearest",
            None => "resize_linear",
        }
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let (p, x, y) = (params(&self.params), &s.inputs[0], &s.output);
        match self.nearest {
            Some(m) => {
                let m = nearest_mode(m);
                quote!(::sramfit::kernels::resize_nearest(&#p, #m, #x, #y);)
            }
            None => quote!(::sramfit::kernels::resize_linear(&#p, #x, #y);),
        }
    }

    fn macs(&self, _: &Operands<'_>) -> u64 {
        0
    }

    fn scratch(&self) -> Scratch {
        Scratch::NONE
    }

    fn stack_bytes(&self, target: Target) -> u64 {
        rt::resize_stack_bytes(target) as u64
    }

    fn plane_order(&self) -> Option<crate::ops::PlaneOrder> {
        None
    }

    fn in_place_inputs(&self, _: &Operands<'_>) -> Vec<usize> {
        Vec::new()
    }
}

/// A [`rt::Resize`] expression.
fn params(p: &rt::Resize) -> TokenStream {
    let rt::Resize { batch_channels, in_h, in_w, out_h, out_w, scale_h, scale_w, coord } = *p;
    let (scale_h, scale_w) = (f32_expr(scale_h), f32_expr(scale_w));
    let coord = match coord {
        rt::CoordMode::HalfPixel => quote!(HalfPixel),
        rt::CoordMode::HalfPixelSymmetric => quote!(HalfPixelSymmetric),
        rt::CoordMode::PytorchHalfPixel => quote!(PytorchHalfPixel),
        rt::CoordMode::AlignCorners => quote!(AlignCorners),
        rt::CoordMode::Asymmetric => quote!(Asymmetric),
        rt::CoordMode::TfHalfPixelForNn => quote!(TfHalfPixelForNn),
    };
    quote!(::sramfit::kernels::Resize {
        batch_channels: #batch_channels, in_h: #in_h, in_w: #in_w, out_h: #out_h, out_w: #out_w,
        scale_h: #scale_h, scale_w: #scale_w, coord: ::sramfit::kernels::CoordMode::#coord,
    })
}

/// A [`rt::NearestMode`] expression.
fn nearest_mode(m: rt::NearestMode) -> TokenStream {
    match m {
        rt::NearestMode::RoundPreferFloor => quote!(::sramfit::kernels::NearestMode::RoundPreferFloor),
        rt::NearestMode::RoundPreferCeil => quote!(::sramfit::kernels::NearestMode::RoundPreferCeil),
        rt::NearestMode::Floor => quote!(::sramfit::kernels::NearestMode::Floor),
        rt::NearestMode::Ceil => quote!(::sramfit::kernels::NearestMode::Ceil),
    }
}

#[cfg(feature = "onnx")]
pub(crate) mod lower {
    use tract_onnx::tract_core::ops::nn::{NearestUpsample, Resize};

    use sramfit_runtime_min as rt;

    use super::ResizeOp;
    use crate::ops::lowering::{Lowered, Lowerer, TractNode};
    use crate::ops::Op;

    pub(crate) const LOWERINGS: &[Lowerer] = &[
        Lowerer { accepts: |n| n.op_is::<NearestUpsample>(), min_inputs: 1, lower: upsample },
        Lowerer { accepts: |n| n.op_is::<Resize>(), min_inputs: 1, lower: core_resize },
        // tract-onnx-opl's Resize (the ONNX op with options core's Resize lacks).
        Lowerer { accepts: |n| n.op.name() == "Resize", min_inputs: 1, lower: onnx_resize },
    ];

    fn upsample(t: &TractNode<'_>) -> Result<Lowered, String> {
        let op = t.node.op_as::<NearestUpsample>().ok_or("not a NearestUpsample")?;
        let scales: Vec<f32> = op.scales.iter().map(|&s| s as f32).collect();
        resize(&ResizeSpec::upsample(), &scales, t)
    }

    fn core_resize(t: &TractNode<'_>) -> Result<Lowered, String> {
        let op = t.node.op_as::<Resize>().ok_or("not a Resize")?;
        let spec = ResizeSpec {
            coord: format!("{:?}", op.coord_transformer),
            interpolator: format!("{:?}", op.interpolator),
            nearest: format!("{:?}", op.nearest),
        };
        resize(&spec, &scales(t, op.optional_scales_input), t)
    }

    /// tract-onnx-opl's Resize, read from its Debug form.
    fn onnx_resize(t: &TractNode<'_>) -> Result<Lowered, String> {
        let (spec, scales_input) = ResizeSpec::from_onnx_debug(&format!("{:?}", t.node.op))?;
        resize(&spec, &scales(t, scales_input), t)
    }

    /// A resize's options by their tract names (`Debug` forms, shared by tract-core's and
    /// tract-onnx-opl's Resize).
    struct ResizeSpec {
        coord: String,
        interpolator: String,
        nearest: String,
    }

    impl ResizeSpec {
        /// tract's integer `NearestUpsample`: `out[i] = in[i / scale]`.
        fn upsample() -> ResizeSpec {
            ResizeSpec { coord: "Asymmetric".into(), interpolator: "Nearest".into(), nearest: "Floor".into() }
        }

        /// The spec and the scales input of tract-onnx-opl's `Resize` `Debug` output, when it has
        /// no option the kernels lack (axes, ROI, antialias, exclude_outside, aspect-ratio policy).
        fn from_onnx_debug(debug: &str) -> Result<(ResizeSpec, Option<usize>), String> {
            let field = |name: &str| -> Result<String, String> {
                let start =
                    debug.find(&format!("{name}: ")).ok_or(format!("Resize without `{name}`"))? + name.len() + 2;
                let rest = &debug[start..];
                Ok(rest[..rest.find([',', '}']).unwrap_or(rest.len())].trim().to_string())
            };
            for (name, want) in [
                ("axes", "None"),
                ("antialias", "false"),
                ("exclude_outside", "false"),
                ("optional_roi_input", "None"),
                ("keep_aspect_ratio_policy", "Stretch"),
            ] {
                let got = field(name)?;
                if got != want {
                    return Err(format!("Resize with {name} = {got}"));
                }
            }
            let coord = field("coord_transformer")?;
            let coord =
                coord.strip_prefix("Plain(").and_then(|c| c.strip_suffix(')')).ok_or(format!("Resize {coord}"))?;
            let scales = field("optional_scales_input")?;
            let scales = scales.strip_prefix("Some(").and_then(|c| c.strip_suffix(')')).and_then(|c| c.parse().ok());
            let spec =
                ResizeSpec { coord: coord.to_string(), interpolator: field("interpolator")?, nearest: field("nearest")? };
            Ok((spec, scales))
        }
    }

    /// The per-axis scales of a Resize: its constant `scales` input when it has one entry per
    /// axis, else `out / in` (ONNX's definition when `sizes` is given).
    fn scales(t: &TractNode<'_>, scales_input: Option<usize>) -> Vec<f32> {
        let (input, out) = (&t.in_shapes[0], &t.out_shape);
        let given = scales_input
            .and_then(|i| t.input_konst(i))
            .and_then(|k| k.cast_to::<f32>().ok()?.to_plain_array_view::<f32>().ok().map(|v| v.iter().copied().collect()))
            .filter(|v: &Vec<f32>| v.len() == input.len());
        given.unwrap_or_else(|| {
            input.iter().zip(out).map(|(&i, &o)| if i == 0 { 1.0 } else { o as f32 / i as f32 }).collect()
        })
    }

    /// Resize of the two innermost axes (1-D: the innermost).
    fn resize(spec: &ResizeSpec, scales: &[f32], t: &TractNode<'_>) -> Result<Lowered, String> {
        let (input, out) = (&t.in_shapes[0], &t.out_shape);
        let rank = input.len();
        if rank == 0 || out.len() != rank || scales.len() != rank {
            return Err("Resize of a scalar or with mismatched ranks".into());
        }
        let lead = rank.saturating_sub(2);
        if input[..lead] != out[..lead] {
            return Err("Resize of an axis other than the two innermost".into());
        }
        let coord = match spec.coord.as_str() {
            "HalfPixel" => rt::CoordMode::HalfPixel,
            "HalfPixelSymmetric" => rt::CoordMode::HalfPixelSymmetric,
            "PytorchHalfPixel" => rt::CoordMode::PytorchHalfPixel,
            "AlignCorners" => rt::CoordMode::AlignCorners,
            "Asymmetric" => rt::CoordMode::Asymmetric,
            "TfHalfPixelForNn" => rt::CoordMode::TfHalfPixelForNn,
            c => return Err(format!("Resize coordinate mode {c}")),
        };
        let nearest = match spec.interpolator.as_str() {
            "Linear" => None,
            "Nearest" => Some(match spec.nearest.as_str() {
                "Floor" => rt::NearestMode::Floor,
                "Ceil" => rt::NearestMode::Ceil,
                "RoundPreferFloor" => rt::NearestMode::RoundPreferFloor,
                "RoundPreferCeil" => rt::NearestMode::RoundPreferCeil,
                n => return Err(format!("Resize nearest mode {n}")),
            }),
            i => return Err(format!("Resize interpolation {i}")),
        };
        let (in_h, out_h, scale_h) =
            if rank >= 2 { (input[rank - 2], out[rank - 2], scales[rank - 2]) } else { (1, 1, 1.0) };
        let params = rt::Resize {
            batch_channels: input[..lead].iter().product(),
            in_h,
            in_w: input[rank - 1],
            out_h,
            out_w: out[rank - 1],
            scale_h,
            scale_w: scales[rank - 1],
            coord,
        };
        Ok(Lowered::new(Op::Resize(ResizeOp { params, nearest }), vec![0]))
    }
}
