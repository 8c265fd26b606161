//! Convolution (2-D, and 1-D as `in_h = 1`; groups, depthwise, dilation, asymmetric padding):
//! `runtime_min::conv2d`, with its im2col scratch and a fused activation epilogue.

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min as rt;

use super::literal::activation;
use super::{OpKind, Operands, Scratch, Step, Target};
use crate::tensor::DType;

impl OpKind for rt::Conv2d {
    fn kernel_name(&self) -> &'static str {
        "conv2d"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let (x, w, y) = (&s.inputs[0], &s.inputs[1], &s.output);
        let (bias, scratch, p) = (s.optional(2), s.scratch_or_empty(), params(self));
        match &s.overlap {
            // A verified overlapped step: input and output in one `&mut` slice.
            Some(o) => {
                let (region, x_at, y_at) = (&o.region, o.input_at, o.output_at);
                quote!(::sramfit::kernels::conv2d_overlapped(&#p, #region, #x_at, #y_at, #w, #bias);)
            }
            None => quote!(::sramfit::kernels::conv2d(&#p, #x, #w, #bias, #y, #scratch);),
        }
    }

    fn macs(&self, o: &Operands<'_>) -> u64 {
        let per_out = (self.kernel_h * self.kernel_w * self.in_channels / self.groups.max(1)) as u64;
        o.output.len() as u64 * per_out
    }

    fn scratch(&self) -> Scratch {
        Scratch {
            dtype: DType::F32,
            preferred: rt::conv2d_scratch_len(self),
            step: rt::conv2d_scratch_per_position(self),
        }
    }

    fn stack_bytes(&self, target: Target) -> u64 {
        rt::conv2d_stack_bytes(self, target) as u64
    }

    fn plane_order(&self) -> Option<crate::ops::PlaneOrder> {
        rt::conv2d_plane_order(self)
    }

    fn in_place_inputs(&self, _: &Operands<'_>) -> Vec<usize> {
        Vec::new()
    }
}

/// A [`rt::Conv2d`] expression.
pub fn params(p: &rt::Conv2d) -> TokenStream {
    let rt::Conv2d {
        batch,
        in_channels,
        in_h,
        in_w,
        out_channels,
        out_h,
        out_w,
        kernel_h,
        kernel_w,
        stride_h,
        stride_w,
        dilation_h,
        dilation_w,
        pad_top,
        pad_left,
        groups,
        act,
        weights,
        input,
    } = *p;
    let act = activation(act);
    let weights = match weights {
        rt::ConvWeights::Oihw => quote!(::sramfit::kernels::ConvWeights::Oihw),
        rt::ConvWeights::KMajor => quote!(::sramfit::kernels::ConvWeights::KMajor),
        rt::ConvWeights::Panels => quote!(::sramfit::kernels::ConvWeights::Panels),
    };
    let input = match input {
        rt::ConvInput::Nchw => quote!(::sramfit::kernels::ConvInput::Nchw),
        rt::ConvInput::Nhwc => quote!(::sramfit::kernels::ConvInput::Nhwc),
    };
    quote!(::sramfit::kernels::Conv2d {
        batch: #batch, in_channels: #in_channels, in_h: #in_h, in_w: #in_w,
        out_channels: #out_channels, out_h: #out_h, out_w: #out_w,
        kernel_h: #kernel_h, kernel_w: #kernel_w, stride_h: #stride_h, stride_w: #stride_w,
        dilation_h: #dilation_h, dilation_w: #dilation_w, pad_top: #pad_top, pad_left: #pad_left,
        groups: #groups, act: #act, weights: #weights, input: #input,
    })
}

#[cfg(feature = "onnx")]
pub(crate) mod lower {
    use tract_onnx::tract_core::ops::cnn::{Conv, KernelFormat};

    use sramfit_runtime_min::{self as rt, Activation};

    use crate::ops::lowering::{scalar_f32, Geometry, Lowered, Lowerer, Src, TractNode};
    use crate::ops::Op;
    use crate::tensor::Data;

    pub(crate) const LOWERINGS: &[Lowerer] = &[Lowerer { accepts: |n| n.op_is::<Conv>(), min_inputs: 2, lower: conv }];

    /// The bias inputs of a (transposed) convolution: none, the per-channel tensor, or a constant
    /// made from tract's scalar bias (often 0, which tract gives where the ONNX node has none).
    pub(crate) fn bias(t: &TractNode<'_>, out_channels: usize) -> Result<Vec<Src>, String> {
        match t.in_shapes.get(2).map(|s| s.iter().product::<usize>()) {
            None => Ok(vec![]),
            Some(n) if n == out_channels => Ok(vec![Src::Input(2)]),
            Some(1) => {
                let konst = t.input_konst(2).ok_or("a computed scalar bias")?;
                let b = scalar_f32(&konst)?;
                if b == 0.0 {
                    Ok(vec![])
                } else {
                    Ok(vec![Src::Const { name: "bias", shape: vec![out_channels], data: Data::F32(vec![b; out_channels]) }])
                }
            }
            Some(n) => Err(format!("bias of {n} values for {out_channels} channels")),
        }
    }

    fn conv(t: &TractNode<'_>) -> Result<Lowered, String> {
        let op = t.node.op_as::<Conv>().ok_or("not a Conv")?;
        if op.q_params.is_some() {
            return Err("quantized convolution".into());
        }
        if op.kernel_fmt != KernelFormat::OIHW {
            return Err(format!("kernel format {:?}", op.kernel_fmt));
        }
        let g = Geometry::of(&op.pool_spec, &t.in_shapes[0], &t.out_shape)?;
        if g.rank > 2 {
            return Err("3-D convolution (1-D and 2-D are supported)".into());
        }
        let out_channels = op.pool_spec.output_channels;
        let p = rt::Conv2d {
            batch: g.batch,
            in_channels: g.channels,
            in_h: g.input[1],
            in_w: g.input[2],
            out_channels,
            out_h: g.output[1],
            out_w: g.output[2],
            kernel_h: g.kernel[1],
            kernel_w: g.kernel[2],
            stride_h: g.stride[1],
            stride_w: g.stride[2],
            dilation_h: g.dilation[1],
            dilation_w: g.dilation[2],
            pad_top: g.pad_before[1],
            pad_left: g.pad_before[2],
            groups: op.group,
            act: Activation::None,
            weights: rt::ConvWeights::Oihw,
            input: rt::ConvInput::Nchw,
        };
        let mut inputs = vec![Src::Input(0), Src::Input(1)];
        inputs.extend(bias(t, out_channels)?);
        Ok(Lowered::window(Op::Conv(p), &op.pool_spec, t.in_shapes[0].len(), inputs))
    }
}
