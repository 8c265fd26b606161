//! Max and average pooling over (D,) H, W: `runtime_min::max_pool2d` / `avg_pool2d`.

use proc_macro2::TokenStream;
use quote::quote;
use sramfit_runtime_min as rt;

use super::{OpKind, Operands, Scratch, Step, Target};

/// Which reduction a pooling window computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolKind {
    /// The largest value.
    Max,
    /// The mean (padding counted or not: [`rt::Pool2d::count_include_pad`]).
    Avg,
}

/// A pooling step.
#[derive(Clone, Debug, PartialEq)]
pub struct Pool {
    /// Max or average.
    pub kind: PoolKind,
    /// The geometry.
    pub params: rt::Pool2d,
}

impl OpKind for Pool {
    fn kernel_name(&self) -> &'static str {
        match self.kind {
            PoolKind::Max => "max_pool2d",
            PoolKind::Avg => "avg_pool2d",
        }
    }

    fn emit(&self, s: &Step<'_>) -> TokenStream {
        let (p, x, y) = (params(&self.params), &s.inputs[0], &s.output);
        let kernel = match self.kind {
            PoolKind::Max => quote!(::sramfit::kernels::max_pool2d),
            PoolKind::Avg => quote!(::sramfit::kernels::avg_pool2d),
        };
        match &s.overlap {
            // A verified overlapped step: input and output in one `&mut` slice, split by planes.
            Some(o) => {
                let (region, x_at, y_at) = (&o.region, o.input_at, o.output_at);
                quote!(::sramfit::kernels::pool2d_overlapped(&#p, #kernel, #region, (#x_at, #y_at));)
            }
            None => quote!(#kernel(&#p, #x, #y);),
        }
    }

    fn macs(&self, _: &Operands<'_>) -> u64 {
        0
    }

    fn scratch(&self) -> Scratch {
        Scratch::NONE
    }

    fn stack_bytes(&self, target: Target) -> u64 {
        rt::pool2d_stack_bytes(target) as u64
    }

    /// Pooling one image's planes has one (`runtime_min::pool2d_plane_order`).
    fn plane_order(&self) -> Option<crate::ops::PlaneOrder> {
        rt::pool2d_plane_order(&self.params)
    }

    fn in_place_inputs(&self, _: &Operands<'_>) -> Vec<usize> {
        Vec::new()
    }
}

/// A [`rt::Pool2d`] expression.
pub(super) fn params(p: &rt::Pool2d) -> TokenStream {
    let rt::Pool2d {
        batch,
        channels,
        in_d,
        out_d,
        kernel_d,
        stride_d,
        dilation_d,
        pad_front,
        pad_back,
        in_h,
        in_w,
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
        pad_bottom,
        pad_right,
        count_include_pad,
    } = *p;
    quote!(::sramfit::kernels::Pool2d {
        batch: #batch, channels: #channels, in_d: #in_d, out_d: #out_d, kernel_d: #kernel_d,
        stride_d: #stride_d, dilation_d: #dilation_d, pad_front: #pad_front, pad_back: #pad_back, in_h: #in_h, in_w: #in_w, out_h: #out_h, out_w: #out_w,
        kernel_h: #kernel_h, kernel_w: #kernel_w, stride_h: #stride_h, stride_w: #stride_w,
        dilation_h: #dilation_h, dilation_w: #dilation_w, pad_top: #pad_top, pad_left: #pad_left,
        pad_bottom: #pad_bottom, pad_right: #pad_right, count_include_pad: #count_include_pad,
    })
}

#[cfg(feature = "onnx")]
pub(crate) mod lower {
    use tract_onnx::tract_core::ops::cnn::{MaxPool, PoolSpec, SumPool};

    use sramfit_runtime_min as rt;

    use super::{Pool, PoolKind};
    use crate::ops::lowering::{Geometry, Lowered, Lowerer, Src, TractNode};
    use crate::ops::Op;

    pub(crate) const LOWERINGS: &[Lowerer] = &[
        Lowerer { accepts: |n| n.op_is::<MaxPool>(), min_inputs: 1, lower: max_pool },
        Lowerer { accepts: |n| n.op_is::<SumPool>(), min_inputs: 1, lower: sum_pool },
    ];

    fn max_pool(t: &TractNode<'_>) -> Result<Lowered, String> {
        let op = t.node.op_as::<MaxPool>().ok_or("not a MaxPool")?;
        if op.with_index_outputs.is_some() {
            return Err("MaxPool with an index output".into());
        }
        let params = geometry(&op.pool_spec, t, false)?;
        let op_ = Op::Pool(Pool { kind: PoolKind::Max, params });
        Ok(Lowered::window(op_, &op.pool_spec, t.in_shapes[0].len(), vec![Src::Input(0)]))
    }

    fn sum_pool(t: &TractNode<'_>) -> Result<Lowered, String> {
        let op = t.node.op_as::<SumPool>().ok_or("not a SumPool")?;
        if !op.normalize {
            return Err("un-normalised sum pooling".into());
        }
        let params = geometry(&op.pool_spec, t, op.count_include_pad)?;
        let op_ = Op::Pool(Pool { kind: PoolKind::Avg, params });
        Ok(Lowered::window(op_, &op.pool_spec, t.in_shapes[0].len(), vec![Src::Input(0)]))
    }

    fn geometry(spec: &PoolSpec, t: &TractNode<'_>, count_include_pad: bool) -> Result<rt::Pool2d, String> {
        let g = Geometry::of(spec, &t.in_shapes[0], &t.out_shape)?;
        Ok(rt::Pool2d {
            batch: g.batch,
            channels: g.channels,
            in_d: g.input[0],
            out_d: g.output[0],
            kernel_d: g.kernel[0],
            stride_d: g.stride[0],
            dilation_d: g.dilation[0],
            pad_front: g.pad_before[0],
            pad_back: g.pad_after[0],
            in_h: g.input[1],
            in_w: g.input[2],
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
            pad_bottom: g.pad_after[1],
            pad_right: g.pad_after[2],
            count_include_pad,
        })
    }
}
