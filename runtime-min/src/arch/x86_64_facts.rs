//! What the x86-64 kernels are made of, as constants: the sizes of their stack buffers and which
//! products reach them. The kernels (`super::x86_64`, compiled for x86-64 only) size their
//! arrays and take their decisions with these constants, and [`crate::facts`] states their stack
//! needs with them; kept apart so that the facts of an x86-64 target can be computed on any host
//! (the planner runs wherever the build does). On x86-64 builds, the kernels check at compile
//! time that their buffers take exactly [`FMA_PANELS_BYTES`], [`FMA_CONV_BYTES`],
//! [`DEPTHWISE_PLANE_BYTES`], [`DEPTHWISE_BLOCKED_BYTES`] and [`DEPTHWISE_MASKED_BYTES`].

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

/// Floats of the implicit-GEMM convolution's zero-padded band of input rows (`x86_64/fma.rs`):
/// a layer with padding whose output rows read at most this much each runs on such bands.
pub(crate) const FMA_CONV_BAND: usize = 16 * 1024;
/// Bytes of the implicit-GEMM convolution's arrays: the row-vector kernels' panels, the padded
/// band of input rows (`f32`) and the tap offsets of an input staged by stride phase (`FMA_KC`
/// `u32`): 88 KiB.
pub(crate) const FMA_CONV_BYTES: usize = FMA_PANELS_BYTES + FMA_CONV_BAND * 4 + FMA_KC * 4;

/// Largest zero-padded plane (floats) of the 3x3 depthwise padded-plane kernel.
pub(crate) const DEPTHWISE_PLANE_MAX: usize = 4096;
/// Outputs per register tile of the padded-plane kernel (its buffers have this much slack).
pub(crate) const DEPTHWISE_TILE: usize = 16;

/// Bytes of the 3x3 depthwise padded-plane kernel's buffers on x86-64: the padded plane and the
/// flattened output (`f32`), and beside them nine tap offsets, the two phase extents and the two
/// slices of those arrays a layer uses (a pointer and a length each; all 8-byte words): 32.2 KiB.
pub(crate) const DEPTHWISE_PLANE_BYTES: usize = 2 * (DEPTHWISE_PLANE_MAX + DEPTHWISE_TILE) * 4 + (9 + 2 + 4) * 8;

/// Floats of global average pooling's transposed block of planes (`plane_sums.rs`): `L`
/// positions of `L` planes, on the widest vectors.
pub(crate) const PLANE_SUMS_FLOATS: usize = MAX_LANES * MAX_LANES;

/// Most taps (`kernel_h * kernel_w`) of a depthwise convolution the channel-blocked kernel runs.
pub(crate) const DEPTHWISE_BLOCKED_MAX_TAPS: usize = 25;
/// Floats of the channel-blocked depthwise kernel's staged input band (`[row][column][channel]`).
pub(crate) const DEPTHWISE_BLOCKED_STAGE: usize = 8 * 1024;
/// Floats of the channel-blocked depthwise kernel's band of outputs.
pub(crate) const DEPTHWISE_BLOCKED_OUT: usize = 2 * 1024;
/// Bytes of the channel-blocked depthwise kernel's arrays: the staged band and its outputs, a
/// vector of weights per tap and one of bias, and a band's positions transposed (`f32`, on the
/// widest vectors), a stage offset per tap (8-byte words), and one vector's worth of `f32` lanes
/// (an activation's copy): 42.9 KiB.
pub(crate) const DEPTHWISE_BLOCKED_BYTES: usize = (DEPTHWISE_BLOCKED_STAGE + DEPTHWISE_BLOCKED_OUT) * 4
    + (DEPTHWISE_BLOCKED_MAX_TAPS + 1) * MAX_LANES * 4
    + MAX_LANES * MAX_LANES * 4
    + DEPTHWISE_BLOCKED_MAX_TAPS * 8
    + MAX_LANES * 4;

/// Bytes of `conv2d_blocked`'s arrays (`x86_64/blocked.rs`, `blocked_dense.rs`), an upper
/// estimate: the depthwise and dense kernels' stage of [`DEPTHWISE_BLOCKED_STAGE`] floats and a
/// vector's channels' 9 taps as `f32` lanes, plus 64 vectors of the widest kind, more than any
/// of the kernels' tap, bias, tile and sum vectors together (at most 48): 36.6 KiB.
pub(crate) const CONV_BLOCKED_BYTES: usize = DEPTHWISE_BLOCKED_STAGE * 4 + 9 * MAX_LANES * 4 + 64 * MAX_LANES * 4;

/// Bytes of the channel-blocked conversions' arrays (`to_blocked` / `from_blocked` on x86-64):
/// the `L` vectors a transpose loads and the `L` it stores, on the widest vectors: 2 KiB.
pub(crate) const REORDER_BLOCKED_BYTES: usize = 2 * MAX_LANES * MAX_LANES * 4;

/// Masks of the AVX-512 stride-1 depthwise kernel (`depthwise_masked.rs`): one per vector of 16
/// outputs of a plane and tap; a layer needing more runs the other kernels.
pub(crate) const DEPTHWISE_MASKS: usize = 2048;
/// Bytes of the stride-1 depthwise kernel's tables: its masks (`u16`) and an offset per tap
/// (8-byte words): 4.2 KiB.
pub(crate) const DEPTHWISE_MASKED_BYTES: usize = DEPTHWISE_MASKS * 2 + DEPTHWISE_BLOCKED_MAX_TAPS * 8;

/// Bytes of the depthwise kernels of a convolution with one input channel per group and
/// `taps` taps on x86-64: the largest of the channel-blocked kernel's and the stride-1 kernel's
/// (both for at most [`DEPTHWISE_BLOCKED_MAX_TAPS`] taps) and for 3x3 the padded-plane
/// kernel's (each is an entry point of its own, one frame at a time); 0 when none may run.
pub(crate) const fn depthwise_bytes(kernel_h: usize, kernel_w: usize) -> usize {
    let blocked = match kernel_h * kernel_w <= DEPTHWISE_BLOCKED_MAX_TAPS {
        true if DEPTHWISE_BLOCKED_BYTES > DEPTHWISE_MASKED_BYTES => DEPTHWISE_BLOCKED_BYTES,
        true => DEPTHWISE_MASKED_BYTES,
        false => 0,
    };
    match (kernel_h, kernel_w) {
        (3, 3) if DEPTHWISE_PLANE_BYTES > blocked => DEPTHWISE_PLANE_BYTES,
        _ => blocked,
    }
}

/// Bytes of the int8 kernels' staged input rows (`x86_64/int8/band.rs`): the rows a band of
/// output rows reads, padded and split by column phase. A layer whose single output row needs
/// more runs the portable kernel.
pub(crate) const INT8_BAND_BYTES: usize = 24 * 1024;
/// Output positions of one block of the int8 kernels (two vectors of eight `i32` lanes).
pub(crate) const INT8_BLOCK: usize = 16;
/// Most taps (`kernel_h * kernel_w * in_channels / groups`) of the int8 convolution kernel: its
/// packed panel holds this many taps of [`INT8_BLOCK`] positions. Larger windows run the
/// portable kernel.
pub(crate) const INT8_MAX_TAPS: usize = 1024;
/// Output channels whose starting accumulators the int8 convolution keeps at a time.
pub(crate) const INT8_CHANNEL_CHUNK: usize = 256;
/// Weight words (4 taps of one output channel, prepared for the dot product: at most 8 bytes)
/// the int8 convolution prepares at a time: the weights of a chunk of channels, fewer channels
/// than [`INT8_CHANNEL_CHUNK`] for windows of more than 16 taps (at least 4 at [`INT8_MAX_TAPS`]).
pub(crate) const INT8_WEIGHT_WORDS: usize = 1024;
/// Most taps (`kernel_h * kernel_w`) of the int8 depthwise kernel.
pub(crate) const INT8_DEPTHWISE_MAX_TAPS: usize = 64;
/// Bytes of the int8 depthwise kernel's outputs of one band of one channel, at their virtual
/// positions (copied out row by row).
pub(crate) const INT8_DEPTHWISE_OUT_BYTES: usize = 8 * 1024;

/// Stack bytes of the int8 convolution kernel's buffers on x86-64: the staged rows, the packed
/// panel (`INT8_MAX_TAPS x INT8_BLOCK` bytes), each tap's offset (`u32`), the prepared weight
/// words (8 bytes each) and the starting accumulators of a chunk of channels (`i32`): 53 KiB.
pub(crate) const INT8_CONV_BYTES: usize =
    INT8_BAND_BYTES + INT8_MAX_TAPS * INT8_BLOCK + INT8_MAX_TAPS * 4 + INT8_WEIGHT_WORDS * 8 + INT8_CHANNEL_CHUNK * 4;
/// Bytes of one channel's staged input rows in the int8 depthwise kernel (`i16` after widening).
/// A layer whose single output row needs more runs the portable kernel.
pub(crate) const INT8_DEPTHWISE_STAGED: usize = 8 * 1024;
/// Stack bytes of the int8 depthwise kernel's buffers on x86-64: the staged rows and their
/// widened copy (`i16`), the band's outputs, the tap pairs (32-byte entries) and their weights
/// (`i32`), and while pairing each tap's offset (an 8-byte word) and flag: 34.8 KiB.
pub(crate) const INT8_DEPTHWISE_BYTES: usize =
    INT8_DEPTHWISE_STAGED * 3 + INT8_DEPTHWISE_OUT_BYTES + INT8_DEPTHWISE_MAX_TAPS * (32 + 4 + 8 + 1);
