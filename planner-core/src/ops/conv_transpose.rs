//! Transposed convolution (2-D, and 1-D as `in_h = 1`): `runtime_min::conv_transpose2d`.

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min as rt;

use super::{OpKind, Operands, Scratch, Step, Target};

impl OpKind for rt::ConvTranspose2d {
    fn kernel_name(&self) -> &'static str {
        "conv_transpose2d"
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let (x, w, y) = (&s.inputs[0], &s.inputs[1], &s.output);
        let (bias, p) = (s.optional(2), params(self));
        quote!(::sramfit::kernels::conv_transpose2d(&#p, #x, #w, #bias, #y);)
    }

    fn macs(&self, _: &Operands<'_>) -> u64 {
        // Every input element is scattered into kernel_h * kernel_w * out_channels / groups outputs.
        let inputs = (self.batch * self.in_channels * self.in_h * self.in_w) as u64;
        inputs * (self.kernel_h * self.kernel_w * self.out_channels / self.groups.max(1)) as u64
    }

    fn scratch(&self) -> Scratch {
        Scratch::NONE
    }

    fn stack_bytes(&self, _: Target) -> u64 {
        // No local arrays.
        0
    }

    fn plane_order(&self) -> Option<crate::ops::PlaneOrder> {
        None
    }

    fn in_place_inputs(&self, _: &Operands<'_>) -> Vec<usize> {
        Vec::new()
    }
}

/// A [`rt::ConvTranspose2d`] expression.
fn params(p: &rt::ConvTranspose2d) -> TokenStream {
    let rt::ConvTranspose2d {
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
    } = *p;
    quote!(::sramfit::kernels::ConvTranspose2d {
        batch: #batch, in_channels: #in_channels, in_h: #in_h, in_w: #in_w,
        out_channels: #out_channels, out_h: #out_h, out_w: #out_w,
        kernel_h: #kernel_h, kernel_w: #kernel_w, stride_h: #stride_h, stride_w: #stride_w,
        dilation_h: #dilation_h, dilation_w: #dilation_w, pad_top: #pad_top, pad_left: #pad_left,
        groups: #groups,
    })
}

#[cfg(feature = "onnx")]
pub(crate) mod lower {
    use tract_onnx::tract_core::ops::cnn::{Deconv, KernelFormat};

    use sramfit_runtime_min as rt;

    use crate::ops::conv::lower::bias;
    use crate::ops::lowering::{dhw, Geometry, Lowered, Lowerer, Src, TractNode};
    use crate::ops::Op;

    pub(crate) const LOWERINGS: &[Lowerer] =
        &[Lowerer { accepts: |n| n.op_is::<Deconv>(), min_inputs: 2, lower: deconv }];

    /// Transposed convolution; tract gives the kernel in OIHW order `[C_out, C_in / group, kh, kw]`.
    fn deconv(t: &TractNode<'_>) -> Result<Lowered, String> {
        let op = t.node.op_as::<Deconv>().ok_or("not a Deconv")?;
        if op.kernel_format != KernelFormat::OIHW {
            return Err(format!("kernel format {:?}", op.kernel_format));
        }
        let spec = &op.pool_spec;
        let (batch, channels, spatial) = Geometry::split(spec, &t.in_shapes[0])?;
        let (_, out_channels, out_spatial) = Geometry::split(spec, &t.out_shape)?;
        let rank = spatial.len();
        if rank > 2 {
            return Err("3-D transposed convolution (1-D and 2-D are supported)".into());
        }
        if spec.kernel_shape.len() != rank || out_spatial.len() != rank || op.adjustments.len() != rank {
            return Err("kernel, input and output ranks differ".into());
        }
        let group = op.group.max(1);
        let w = &t.in_shapes[1];
        if w.len() != rank + 2 || w[0] != out_channels || w[1] * group != channels || out_channels % group != 0 {
            return Err(format!("kernel shape {w:?} for {channels} -> {out_channels} channels in {group} groups"));
        }
        let pads = spec
            .padding
            .compute_for_deconv(&spatial, &spec.kernel_shape, &spec.dilations(), &spec.strides(), &op.adjustments)
            .map_err(|e| format!("{e:#}"))?;
        let before: Vec<usize> = pads.iter().map(|p| p.pad_before).collect();
        let (input, output) = (dhw(&spatial, 1)?, dhw(&out_spatial, 1)?);
        let (kernel, stride, dilation) =
            (dhw(&spec.kernel_shape, 1)?, dhw(&spec.strides(), 1)?, dhw(&spec.dilations(), 1)?);
        let pad = dhw(&before, 0)?;
        let p = rt::ConvTranspose2d {
            batch,
            in_channels: channels,
            in_h: input[1],
            in_w: input[2],
            out_channels,
            out_h: output[1],
            out_w: output[2],
            kernel_h: kernel[1],
            kernel_w: kernel[2],
            stride_h: stride[1],
            stride_w: stride[2],
            dilation_h: dilation[1],
            dilation_w: dilation[2],
            pad_top: pad[1],
            pad_left: pad[2],
            groups: group,
        };
        let mut inputs = vec![Src::Input(0), Src::Input(1)];
        inputs.extend(bias(t, out_channels)?);
        Ok(Lowered::window(Op::ConvTranspose(p), spec, t.in_shapes[0].len(), inputs))
    }
}
