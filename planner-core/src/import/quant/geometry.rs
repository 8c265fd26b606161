//! The windows of convolutions and pools from their ONNX attributes (`kernel_shape`, `strides`,
//! `dilations`, `pads`, `auto_pad`, `ceil_mode`), and their output extents.

use super::onnx::Attrs;

/// One window operator's geometry over the spatial axes (1 or 2 of them).
pub(super) struct Window {
    /// Window extents.
    pub kernel: Vec<usize>,
    /// Strides.
    pub strides: Vec<usize>,
    /// Dilations.
    pub dilations: Vec<usize>,
    /// Padding before each axis.
    pub pads_begin: Vec<usize>,
    /// Padding after each axis.
    pub pads_end: Vec<usize>,
    /// Output extents.
    pub out: Vec<usize>,
}

impl Window {
    /// The geometry of a window of `kernel` over the spatial extents `input`; `ceil` rounds the
    /// output extents up (pools' `ceil_mode`).
    pub fn new(a: &Attrs<'_>, input: &[usize], kernel: &[usize], ceil: bool) -> Result<Window, String> {
        let rank = input.len();
        if !(1..=2).contains(&rank) || kernel.len() != rank {
            return Err(format!("a {}-D window over {rank} spatial axes (1-D and 2-D are supported)", kernel.len()));
        }
        let list = |name: &str, default: usize, len: usize| -> Result<Vec<usize>, String> {
            match a.ints(name) {
                None => Ok(vec![default; len]),
                Some(v) if v.len() == len && v.iter().all(|&x| x >= 0) => Ok(v.iter().map(|&x| x as usize).collect()),
                Some(v) => Err(format!("`{name}` {v:?} for {rank} spatial axes")),
            }
        };
        let strides = list("strides", 1, rank)?;
        let dilations = list("dilations", 1, rank)?;
        if strides.contains(&0) || dilations.contains(&0) || kernel.contains(&0) {
            return Err("a zero stride, dilation or kernel extent".into());
        }
        let spans = (0..rank).map(|i| (kernel[i] - 1).checked_mul(dilations[i]).and_then(|s| s.checked_add(1)));
        let spans: Vec<usize> = spans.collect::<Option<_>>().ok_or("a dilated window larger than any input")?;
        let span = |i: usize| spans[i];
        let auto_pad = a.string("auto_pad").unwrap_or_default();
        let (pads_begin, pads_end, out) = match auto_pad.as_str() {
            "" | "NOTSET" | "VALID" => {
                let pads = if auto_pad == "VALID" { vec![0; 2 * rank] } else { list("pads", 0, 2 * rank)? };
                let (begin, end) = (pads[..rank].to_vec(), pads[rank..].to_vec());
                let mut out = Vec::with_capacity(rank);
                for i in 0..rank {
                    let padded = input[i].checked_add(begin[i]).and_then(|v| v.checked_add(end[i]));
                    let padded = padded.ok_or("pads larger than any input")?;
                    if padded < span(i) {
                        return Err(format!("a window of {} over an extent of {padded}", span(i)));
                    }
                    let steps = padded - span(i);
                    let mut o = if ceil { steps.div_ceil(strides[i]) } else { steps / strides[i] } + 1;
                    // ONNX: the last window must start inside the input or its leading padding.
                    if ceil && (o - 1) * strides[i] >= input[i] + begin[i] {
                        o -= 1;
                    }
                    out.push(o);
                }
                (begin, end, out)
            }
            "SAME_UPPER" | "SAME_LOWER" => {
                let out: Vec<usize> = (0..rank).map(|i| input[i].div_ceil(strides[i])).collect();
                let total: Vec<usize> = (0..rank)
                    .map(|i| {
                        (out[i].saturating_sub(1).saturating_mul(strides[i]).saturating_add(span(i)))
                            .saturating_sub(input[i])
                    })
                    .collect();
                let upper = auto_pad == "SAME_UPPER";
                let begin: Vec<usize> = total.iter().map(|&t| if upper { t / 2 } else { t.div_ceil(2) }).collect();
                let end = total.iter().zip(&begin).map(|(t, b)| t - b).collect();
                (begin, end, out)
            }
            other => return Err(format!("auto_pad {other}")),
        };
        Ok(Window { kernel: kernel.to_vec(), strides, dilations, pads_begin, pads_end, out })
    }
}

/// The (height, width) of one or two spatial values: a 1-D operator is 2-D with height `fill`.
pub(super) fn hw(v: &[usize], fill: usize) -> (usize, usize) {
    match *v {
        [w] => (fill, w),
        [h, w, ..] => (h, w),
        [] => (fill, fill),
    }
}

#[cfg(test)]
mod tests {
    use tract_onnx::pb;

    use super::*;

    fn attr_ints(name: &str, v: &[i64]) -> pb::AttributeProto {
        pb::AttributeProto { name: name.into(), ints: v.to_vec(), ..Default::default() }
    }

    #[test]
    fn explicit_same_and_ceil_geometry() {
        let attrs = [attr_ints("pads", &[4, 1, 5, 1]), attr_ints("strides", &[2, 2])];
        let w = Window::new(&Attrs(&attrs), &[49, 10], &[10, 4], false).unwrap();
        assert_eq!(w.out, vec![25, 5]);
        let same = [pb::AttributeProto { name: "auto_pad".into(), s: b"SAME_LOWER".to_vec(), ..Default::default() }];
        let w = Window::new(&Attrs(&same), &[5], &[4], false).unwrap();
        assert_eq!((w.pads_begin, w.pads_end, w.out), (vec![2], vec![1], vec![5]));
        let attrs = [attr_ints("strides", &[2])];
        // (6 - 3) / 2 = 1.5: floor gives 2 windows, ceil 3 (the third starts at 4, inside).
        assert_eq!(Window::new(&Attrs(&attrs), &[6], &[3], false).unwrap().out, vec![2]);
        assert_eq!(Window::new(&Attrs(&attrs), &[6], &[3], true).unwrap().out, vec![3]);
    }
}
