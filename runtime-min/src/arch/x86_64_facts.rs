//! What the x86-64 kernels are made of, as constants: the sizes of their stack buffers and which
//! products reach them. The kernels (`super::x86_64`, compiled for x86-64 only) size their
//! arrays and take their decisions with these constants, and [`crate::facts`] states their stack
//! needs with them; kept apart so that the facts of an x86-64 target can be computed on any host
//! (the planner runs wherever the build does). On x86-64 builds, the kernels check at compile
//! time that their buffers take exactly [`FMA_PANELS_BYTES`] and [`DEPTHWISE_BYTES`].

/// The fewest rows of C (output channels of a convolution group) for which the FMA kernels
/// replace the portable GEMM.
pub(crate) const FMA_MIN_ROWS: usize = 8;

/// Lanes of the widest vectors (AVX-512: 16 `f32`).
pub(crate) const MAX_LANES: usize = 16;
/// Rows of the tallest row-vector tile on the widest vectors (two vectors).
pub(crate) const FMA_MV_MAX: usize = 2 * MAX_LANES;
/// Columns of the widest row-vector tile.
pub(crate) const FMA_NB: usize = 12;
/// Depth of one packed A panel.
pub(crate) const FMA_KC: usize = 128;

/// Bytes of the FMA kernels' panels: a packed A panel (`FMA_MV_MAX x FMA_KC`), a B panel
/// (`FMA_KC x FMA_NB`) and a staging tile (`FMA_NB x FMA_MV_MAX`), all `f32`: 23.5 KiB.
pub(crate) const FMA_PANELS_BYTES: usize = (FMA_MV_MAX * FMA_KC + FMA_KC * FMA_NB + FMA_NB * FMA_MV_MAX) * 4;

/// Largest zero-padded plane (floats) of the 3x3 depthwise padded-plane kernel.
pub(crate) const DEPTHWISE_PLANE_MAX: usize = 4096;
/// Outputs per register tile of the padded-plane kernel (its buffers have this much slack).
pub(crate) const DEPTHWISE_TILE: usize = 16;

/// Bytes of the 3x3 depthwise kernels' buffers on x86-64: the padded plane and the flattened
/// output (`f32`), nine tap offsets, the two phase extents and the `Option` tag (all 8-byte
/// words): 32.2 KiB.
pub(crate) const DEPTHWISE_BYTES: usize = 2 * (DEPTHWISE_PLANE_MAX + DEPTHWISE_TILE) * 4 + (9 + 2 + 1) * 8;
