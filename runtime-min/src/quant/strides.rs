//! Addressing of a batch of feature maps by strides, so one kernel serves NHWC and NCHW.

/// Strides, in elements, of a batch of feature maps: element `(n, c, h, w)` is at
/// `n * self.n + c * self.c + h * self.h + w * self.w`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageStrides {
    /// Between batch entries.
    pub n: usize,
    /// Between channels.
    pub c: usize,
    /// Between rows.
    pub h: usize,
    /// Between columns.
    pub w: usize,
}

impl ImageStrides {
    /// Contiguous NHWC (TFLite's layout; channels innermost).
    pub const fn nhwc(channels: usize, height: usize, width: usize) -> Self {
        ImageStrides { n: height * width * channels, c: 1, h: width * channels, w: channels }
    }

    /// Contiguous NCHW (ONNX's layout; columns innermost).
    pub const fn nchw(channels: usize, height: usize, width: usize) -> Self {
        ImageStrides { n: channels * height * width, c: height * width, h: width, w: 1 }
    }
}
