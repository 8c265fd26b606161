//! The FMA micro-kernels of the GEMM and of the implicit-GEMM convolution, written once over
//! [`Lanes`] and compiled into the entry points of [`super`] for AVX2 (8 lanes) and AVX-512F (16
//! lanes): everything here is `#[inline(always)]`, so that it is compiled with those entry
//! points' target features (a function that is not inlined would be compiled for the baseline
//! CPU, its intrinsics left as calls). Arrays of vectors are filled by loops, not
//! `core::array::from_fn`: its closure is not `#[inline(always)]`, and LLVM left the ones that
//! loaded a row tile's vectors of weights as calls, each load a call (ResNet-8's 8x8 layers ran
//! 1.15x slower for it).
//!
//! Register tiles of 12 vector accumulators (vectors of `L` lanes): [`ColumnRun::wide`], `MN` rows
//! by two vectors of columns, reads A (broadcast; its rows strided, as k-major packed weights, up
//! to a depth of 64) and B in place and stores whole vectors of C (wide outputs: matrix products,
//! pointwise convolutions); [`gemv_rows`], vectors of rows by one column (a matrix-vector product);
//! [`gemm_rows`] and [`conv_implicit`], vectors of rows (output channels) by columns (positions),
//! broadcasting B, so narrow outputs (a 2x2 feature map has 4 columns) still fill the lanes: two
//! vectors by 6 columns, or one vector by 12 when a block has at most `L` rows (16 output channels
//! on AVX-512). Their A is read in place when its rows are contiguous (convolution weights packed
//! at build time, see [`crate::ConvWeights::KMajor`]), and each tile then sums all of `k` in
//! registers; otherwise A is packed one `KC`-deep panel at a time on the stack and partial sums
//! wait in C. Each element of C is the k-ascending chain of fused multiply-adds of its row and
//! column (partial sums are stored and reloaded exactly), so a result never depends on the tile
//! that computes it, on A's layout, on the tile size an im2col scratch allows, on `n`, or on the
//! vector width.
//!
//! `unsafe` here: the unchecked reads in [`ColumnRun::wide`], [`micro`], [`micro_indirect`],
//! [`micro_row`] and [`micro_tap_rows`], whose bounds are checked once per tile (the intrinsics are in [`super::lanes`]).

use super::copy::copy_even;
use super::depthwise::{written, zeroed};
use super::kernel_columns::{conv_kernel_columns, KernelColumns};
use super::lanes::{activate, Lanes};
use crate::arch::x86_64_facts::{FMA_CONV_BAND, FMA_KC as KC, FMA_MV_MAX as MV_MAX, FMA_NB as NB};
use crate::arch::x86_64_facts::{FMA_CONV_BYTES, FMA_PANELS_BYTES, MAX_LANES};
use crate::conv_shape::{Conv2d, ConvOperands};
use crate::epilogue::{finish, finish_inlined, Bias, Gemm};
use crate::util::valid_range;
use crate::Activation;
use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
use core::mem::MaybeUninit;
use core::ops::Range;

// The stack arrays are sized for the widest vectors (`MV_MAX` rows: two vectors of AVX-512);
// narrower vectors use a part. `KC` is the depth of one packed A panel, `NB` the columns of the
// widest row-vector tile.

/// Rows of the column-vector tile ([`ColumnRun::wide`]); [`MN_SHORT`] for the few products whose
/// rows it would leave a short last block.
const MN: usize = 6;

/// Rows of the column-vector tile for products of fewer than 24 rows that are a multiple of it
/// and not of [`MN`] (8, 16, 20: MobileNetV2's projections to 8 and 16 channels), whose last block
/// of `MN` rows would compute rows that are never stored (8 rows as 6 + 2 computed 12), and for
/// the last rows of larger products that a last block of `MN` would leave short by two or four
/// ([`ColumnRun::all`]).
const MN_SHORT: usize = 4;

/// `C = act(alpha * A B + bias)` for one matrix triple (any strides), with `g.k > 0`.
///
/// Two tiles: with B column-contiguous, blocks of two (on AVX-512 four) vectors of columns run
/// on [`ColumnRun::wide`] (vectors along the columns, A and B read in place, no packing, C
/// stored as whole vectors; on AVX-512 also the [`TAIL_MIN`] or more columns left, in a tile
/// whose last vector is masked);
/// the columns left over, and every other layout, on [`gemm_rows`] (vectors along the rows; A
/// read in place when its rows are contiguous, as with weights packed at build time, else
/// packed). Both compute each element as the same k-ascending chain of fused multiply-adds, so
/// the split never changes a result.
///
/// [`ColumnRun::wide`] also takes A's rows strided, up to [`COLS_MAX_K_STRIDED`] deep (weights
/// packed at build time are broadcast from their k-major rows): a pointwise convolution with few
/// input channels (MobileNetV2's expand layers: `k` of 8 to 32) spent most of its time in
/// [`gemm_rows`]'s stores of single values (its C is written one channel row at a time, across the
/// vector of channels), which deeper products amortise.
#[inline(always)]
pub(super) fn gemm<S: Lanes>(g: &Gemm, a: &[f32], b: &[f32], bias: Bias, c: &mut [f32]) {
    let nn = 2 * S::L;
    let cols = g.b_cs == 1 && (g.a_cs == 1 || g.k <= COLS_MAX_K_STRIDED);
    let n_main = match cols {
        true => g.n - g.n % nn,
        false => 0,
    };
    let tail = match cols && S::REGISTERS >= 32 && g.n - n_main >= TAIL_MIN {
        true => g.n - n_main,
        false => 0,
    };
    if n_main + tail > 0 {
        let run = ColumnRun { g, a, b, bias, epilogue: Epilogue::of::<S>(g, bias), rows: BRows::matrix::<S>(g) };
        run.all::<S>(n_main, tail, c);
    }
    let done = n_main + tail;
    if done < g.n {
        let rest = Gemm { n: g.n - done, ..*g };
        let bias = match bias {
            Bias::Col(v) => Bias::Col(&v[done..]),
            other => other,
        };
        gemm_rows::<S>(&rest, a, &b[done * g.b_cs..], bias, &mut c[done..]);
    }
}

/// The deepest product whose A has strided rows (`a_cs != 1`) [`ColumnRun::wide`] computes:
/// measured on MobileNetV2-0.35 (`sramfit-bench --layers`), its pointwise layers with `k` up to 48
/// ran 1.5-1.7x faster on column tiles, those with `k` of 96 and 192 and 16 or 32 output channels
/// about 10% slower.
const COLS_MAX_K_STRIDED: usize = 64;

/// The fewest columns left after the whole tiles of [`ColumnRun::wide`] that it computes itself,
/// in one more tile whose last vector is masked, where the instruction set has registers to spare
/// (AVX-512; its masked loads and stores cost what the plain ones do): fewer go to the row
/// tiles. KWS's 125 positions are a tile of 64 and 61 columns left (in a tile of four vectors);
/// MobileNetV2's 12x12 maps leave 16.
const TAIL_MIN: usize = 8;

/// Where the rows of B that a column tile reads lie, from the tile's first column: `runs` runs of
/// `len` rows, run `q` starting at `(q / per_plane) * plane + (q % per_plane) * row`, its row `t`
/// [`BRows::column`] further on, a tile's vectors at [`BRows::vector_at`] in each row. A
/// matrix's B is one run of `k` rows `b_rs` apart, its vectors adjacent; a convolution's virtual
/// im2col matrix ([`conv_cols`]) is a run of `kernel_w` columns per kernel row and input channel
/// (adjacent, or alternating between two column phases at column stride 2), a tile's vectors one
/// output row or, for rows one or two vectors wide, two or four.
#[derive(Clone, Copy)]
pub(super) struct BRows {
    /// A tile's vectors lie in groups of `across` adjacent vectors, the groups `next` apart (the
    /// next output row's input, for tiles over several output rows, [`conv_cols`]).
    pub(super) across: usize,
    pub(super) next: usize,
    pub(super) runs: usize,
    pub(super) len: usize,
    pub(super) step: usize,
    pub(super) per_plane: usize,
    pub(super) row: usize,
    pub(super) plane: usize,
    /// The distance from column phase 0 to phase 1 of an input staged by column phase at column
    /// stride 2 (0 for others): a run's row `t` is column `t / 2` of phase `t % 2`.
    pub(super) phase: usize,
}

impl BRows {
    /// The rows of a matrix B: one run of `k` rows, `b_rs` apart.
    #[inline(always)]
    fn matrix<S: Lanes>(g: &Gemm) -> Self {
        BRows {
            across: COLS_MAX_VECTORS,
            next: 0,
            runs: 1,
            len: g.k,
            step: g.b_rs,
            per_plane: 1,
            row: 0,
            plane: 0,
            phase: 0,
        }
    }

    /// The offset of a tile's vector `v` from its first.
    #[inline(always)]
    pub(super) fn vector_at<S: Lanes>(&self, v: usize) -> usize {
        v / self.across * self.next + v % self.across * S::L
    }

    /// The offset of row `t` of a run from the run's start: `t * step` in one phase, `(t / 2) *
    /// step` in phase `t % 2` of two. `PHASES` is 1 or 2, a constant in the innermost loop of
    /// [`cols_micro`]; 0 reads it from `phase` (two where that is nonzero).
    #[inline(always)]
    fn column<const PHASES: usize>(&self, t: usize) -> usize {
        match PHASES == 2 || (PHASES == 0 && self.phase > 0) {
            true => t / 2 * self.step + t % 2 * self.phase,
            false => t * self.step,
        }
    }

    /// The largest offset of a row.
    #[inline(always)]
    fn last(&self) -> usize {
        let q = self.runs - 1;
        // The last row of a run, or in two phases the one before it where that is further on.
        let column = (self.len.saturating_sub(2)..self.len).map(|t| self.column::<0>(t)).max().unwrap_or(0);
        (q / self.per_plane) * self.plane + (q % self.per_plane) * self.row + column
    }
}

/// The most vectors of columns in one column tile.
pub(super) const COLS_MAX_VECTORS: usize = 4;

/// What the column tiles of one product share.
pub(super) struct ColumnRun<'a> {
    pub(super) g: &'a Gemm,
    pub(super) a: &'a [f32],
    pub(super) b: &'a [f32],
    pub(super) bias: Bias<'a>,
    pub(super) epilogue: Option<Epilogue<'a>>,
    pub(super) rows: BRows,
}

impl ColumnRun<'_> {
    /// Columns `0..n_main` (a multiple of two vectors) of C, in tiles of `ROWS` rows by two
    /// vectors of columns, then the `tail` columns after them (fewer than two vectors) in one
    /// tile of `ROWS` rows by two vectors, or of 12 rows by one, its last vector masked: every
    /// step broadcasts one value of each row of A and multiplies the vectors of a row of B. Needs
    /// `b_cs == 1`; A's rows any stride.
    ///
    /// Where the registers hold them (AVX-512's 32), tiles of four vectors come first, and more
    /// than three vectors of columns left make one more, its last vector masked: per step `ROWS`
    /// broadcasts and four loads of B for `4 * ROWS` multiply-adds instead of `ROWS` and two for
    /// `2 * ROWS`. Old and new in one process (p10): KWS's pointwise layers (64 channels, 125
    /// positions) 0.92-0.95, VWW's 8-to-16-channel layer at 48x48 and its bands 0.82-0.84, its
    /// 16-to-32 one at 24x24 0.84-0.90, its 64-channel 12x12 one 0.94-0.95, MobileNetV2's
    /// 16-to-96 expansion at 24x24 0.89, 96-to-24 at 12x12 0.96-0.99, 128-to-256 at 8x8 1.00-1.01.
    #[inline(always)]
    fn wide<S: Lanes, const ROWS: usize>(&self, span: Range<usize>, n_main: usize, tail: usize, c: &mut [f32]) {
        let n = n_main + tail;
        let wide = S::REGISTERS >= 32;
        let n4 = match wide {
            true => n - n % (4 * S::L),
            false => 0,
        };
        if n4 > 0 {
            self.tiles::<S, ROWS, 4, false, 1>(span.clone(), 0, n4, 0, c);
        }
        match n - n4 {
            r if wide && r > 3 * S::L => self.tiles::<S, ROWS, 4, true, 1>(span, n4, r, n4, c),
            _ => self.columns::<S, ROWS, 1>(span, n4, n_main - n4, tail, n4, c),
        }
    }

    /// [`ColumnRun::wide`] in tiles of [`MN`] rows, or of [`MN_SHORT`] for the products it fits
    /// better; the last rows that a last tile of `MN` would leave short by two or four in tiles of
    /// `MN_SHORT` instead, so that no tile computes rows it does not store (64 rows: ten tiles of
    /// 6 and one of 4, where the eleventh tile of 6 computed 2 rows for nothing; 32: four of 6
    /// and two of 4). Old and new in one process, p10, Zen 4: KWS's pointwise layers (64
    /// channels) 0.95-0.96, ResNet-8's 64-channel 8x8 layer 0.97.
    #[inline(always)]
    pub(super) fn all<S: Lanes>(&self, n_main: usize, tail: usize, c: &mut [f32]) {
        let m = self.g.m;
        if m < 24 && !m.is_multiple_of(MN) && m.is_multiple_of(MN_SHORT) {
            return self.wide::<S, MN_SHORT>(0..m, n_main, tail, c);
        }
        // (Columns of one vector or fewer run in tiles of 12 rows whatever `ROWS` is.)
        let short = match m % MN {
            _ if n_main + tail <= S::L => 0,
            4 => 4,
            2 if m > MN => 8,
            _ => 0,
        };
        self.wide::<S, MN>(0..m - short, n_main, tail, c);
        if short > 0 {
            self.wide::<S, MN_SHORT>(m - short..m, n_main, tail, c);
        }
    }

    /// Rows `span` and columns `j0..j0 + n_main` (a multiple of two vectors) of C, in tiles of
    /// `ROWS` rows by two vectors of columns, then the `tail` columns after them (fewer than two
    /// vectors) in one tile of `ROWS` rows by two vectors, or of 12 rows by one, its last vector
    /// masked. Column `j` of C reads B from `b0 + j - j0`.
    #[inline(always)]
    fn columns<S: Lanes, const ROWS: usize, const PHASES: usize>(
        &self,
        span: Range<usize>,
        j0: usize,
        n_main: usize,
        tail: usize,
        b0: usize,
        c: &mut [f32],
    ) {
        if n_main > 0 {
            self.tiles::<S, ROWS, 2, false, PHASES>(span.clone(), j0, n_main, b0, c);
        }
        let (j, b) = (j0 + n_main, b0 + n_main);
        match tail {
            0 => {}
            t if t > S::L => self.tiles::<S, ROWS, 2, true, PHASES>(span, j, t, b, c),
            t if t == S::L => self.tiles::<S, 12, 1, false, PHASES>(span, j, t, b, c),
            t => self.tiles::<S, 12, 1, true, PHASES>(span, j, t, b, c),
        }
    }

    /// Rows `span` and columns `j0..j0 + n` of C in tiles of `ROWS` rows by `V` vectors of
    /// columns, column `j` reading B from `b0 + j - j0`; `MASKED`: `n` is less than `V` vectors,
    /// one tile whose last vector holds `n - (V - 1) * L` columns (loaded, computed and stored
    /// masked).
    #[inline(always)]
    fn tiles<S: Lanes, const ROWS: usize, const V: usize, const MASKED: bool, const PHASES: usize>(
        &self,
        span: Range<usize>,
        j0: usize,
        n: usize,
        b0: usize,
        c: &mut [f32],
    ) {
        const { assert!(V <= COLS_MAX_VECTORS) };
        let ColumnRun { g, a, b, bias, epilogue, rows } = *self;
        let (k, l) = (g.k, S::L);
        // Columns in the last vector of each tile.
        let last = n - (V - 1) * l;
        debug_assert!(MASKED == (last < l) && (MASKED || n.is_multiple_of(V * l)));
        let width = if MASKED { n } else { V * l };
        let mut i0 = span.start;
        while i0 < span.end {
            let mr = ROWS.min(span.end - i0);
            let a_tile = &a[i0 * g.a_rs..];
            // Rows past `mr` repeat the last one: computed, never stored. With A's rows adjacent
            // (weights packed at build time) and the whole tile inside `a`, they are read as they
            // lie (constant offsets, one pointer for all rows).
            let adjacent = g.a_rs == 1 && (k - 1) * g.a_cs + ROWS <= a_tile.len();
            for j in (j0..j0 + n).step_by(V * l) {
                let mut acc = [[S::zero(); V]; ROWS];
                if g.add_to_c {
                    for (r, acc_r) in acc.iter_mut().enumerate().take(mr) {
                        let crow = &c[(i0 + r) * g.c_rs + j..][..width];
                        *acc_r = load_row::<S, V, MASKED>(crow, last);
                    }
                }
                let b_tile = &b[b0 + j - j0..];
                let acc = match adjacent {
                    true => {
                        let offsets = core::array::from_fn(|r| r);
                        cols_micro::<S, ROWS, V, MASKED, PHASES>(g, a_tile, offsets, b_tile, rows, last, acc)
                    }
                    false => {
                        let offsets = core::array::from_fn(|r| r.min(mr - 1) * g.a_rs);
                        cols_micro::<S, ROWS, V, MASKED, PHASES>(g, a_tile, offsets, b_tile, rows, last, acc)
                    }
                };
                for (r, &acc_r) in acc.iter().enumerate().take(mr) {
                    let crow = &mut c[(i0 + r) * g.c_rs + j..][..width];
                    let vectors = match (g.epilogue, epilogue) {
                        (false, _) => Some(acc_r),
                        (true, Some(e)) => Some(e.row::<S, V, MASKED>(i0 + r, j, acc_r, last)),
                        (true, None) => None,
                    };
                    match vectors {
                        Some(vs) => store_row::<S, V, MASKED>(crow, vs, last),
                        // An activation without a vector form, on a local copy (on C itself,
                        // LLVM wrote a ReLU as a masked store of the negative lanes, slow on
                        // AMD cores).
                        None => {
                            let mut vals = [0.0; COLS_MAX_VECTORS * MAX_LANES];
                            for (v, &x) in acc_r.iter().enumerate() {
                                S::store(&mut vals[v * l..], x);
                            }
                            let vals = &mut vals[..width];
                            finish_inlined(vals, g, bias, i0 + r, j);
                            crow.copy_from_slice(vals);
                        }
                    }
                }
            }
            i0 += ROWS;
        }
    }
}

/// `V` vectors of `row` (the last one's first `last` values only, when `MASKED`).
#[inline(always)]
fn load_row<S: Lanes, const V: usize, const MASKED: bool>(row: &[f32], last: usize) -> [S::V; V] {
    let l = S::L;
    let mut out = [S::zero(); V];
    for (v, o) in out.iter_mut().enumerate() {
        *o = match MASKED && v == V - 1 {
            true => {
                let part = &row[v * l..][..last];
                // SAFETY: `part` holds `last` floats.
                unsafe { S::load_first_ptr(part.as_ptr(), last) }
            }
            false => S::load(&row[v * l..]),
        };
    }
    out
}

/// Stores `V` vectors into `row` (the last one's first `last` lanes only, when `MASKED`).
#[inline(always)]
fn store_row<S: Lanes, const V: usize, const MASKED: bool>(row: &mut [f32], vs: [S::V; V], last: usize) {
    let l = S::L;
    for (v, &x) in vs.iter().enumerate() {
        match MASKED && v == V - 1 {
            true => S::store_first(&mut row[v * l..], x, last),
            false => S::store(&mut row[v * l..], x),
        }
    }
}

/// The epilogue of [`finish`] (alpha, bias, activation) where the tiles storing C's final
/// values apply it in registers: the same operations in the same order (`alpha * v`, then `+
/// bias`, then the activation), for an activation with a vector form ([`activate`]); for the
/// others the tiles store the sums and [`finish`] runs over C after them. (On AVX-512, LLVM
/// compiled [`finish_inlined`] on a column tile's 32 values into loops of 4-lane and masked
/// operations that took longer than the tile's products; after a row-vector tile, [`finish`]
/// is one more pass over C.)
#[derive(Clone, Copy)]
pub(super) struct Epilogue<'a> {
    alpha: f32,
    bias: Bias<'a>,
    act: Activation,
}

impl<'a> Epilogue<'a> {
    /// The epilogue of `g` with `bias`, where `g` has one and its activation a vector form.
    #[inline(always)]
    pub(super) fn of<S: Lanes>(g: &Gemm, bias: Bias<'a>) -> Option<Self> {
        let vector = activate::<S>(g.act, S::zero()).is_some();
        (g.epilogue && vector).then_some(Epilogue { alpha: g.alpha, bias, act: g.act })
    }

    /// [`Epilogue::of`] for the row-vector tiles, on instruction sets with registers to spare
    /// (AVX-512's 32): the AVX2 tiles keep 12 accumulators and 3 operands in its 16, and with
    /// the epilogue's bias vectors beside them LLVM spilled accumulators in the depth loop (VWW's
    /// 256-channel pointwise layer at 3x3, 1.4x slower); they store sums and [`finish`] follows.
    #[inline(always)]
    fn in_row_tiles<S: Lanes>(g: &Gemm, bias: Bias<'a>) -> Option<Self> {
        Epilogue::of::<S>(g, bias).filter(|_| S::REGISTERS >= 32)
    }

    /// `v`'s lanes scaled, their bias lanes `b` added (none for [`Bias::None`]), activated.
    #[inline(always)]
    fn apply<S: Lanes>(&self, v: S::V, b: Option<S::V>) -> S::V {
        let v = match b {
            None if self.alpha == 1.0 => v,
            None => S::mul(v, S::splat(self.alpha)),
            Some(b) => S::add(S::mul(S::splat(self.alpha), v), b),
        };
        // `of` admits only activations with a vector form.
        activate::<S>(self.act, v).unwrap_or(v)
    }

    /// [`Epilogue::apply`] on `V` vectors of C's row `i` from column `j0` (a column tile's row;
    /// when `MASKED`, the last vector's first `last` columns only). (Loops, not closures: a
    /// closure is compiled without the entry point's target features, and where LLVM did not
    /// inline it, its intrinsics became calls.)
    #[inline(always)]
    fn row<S: Lanes, const V: usize, const MASKED: bool>(
        &self,
        i: usize,
        j0: usize,
        mut acc: [S::V; V],
        last: usize,
    ) -> [S::V; V] {
        let cols = match self.bias {
            Bias::Col(b) => Some(load_row::<S, V, MASKED>(&b[j0..], last)),
            _ => None,
        };
        for (n, v) in acc.iter_mut().enumerate() {
            let b = match self.bias {
                Bias::None => None,
                Bias::Row(b) => Some(S::splat(b[i])),
                Bias::Col(_) => cols.map(|c| c[n]),
            };
            *v = self.apply::<S>(*v, b);
        }
        acc
    }

    /// [`Epilogue::apply`] on a row-vector tile: rows `i0..i0 + R * L` (those from `mr` on
    /// computed, never stored) by the columns `cols`.
    #[inline(always)]
    fn tile<S: Lanes, const R: usize, const C: usize>(
        &self,
        i0: usize,
        mr: usize,
        cols: &Cols<C>,
        acc: &mut Acc<S::V, R, C>,
    ) {
        let mut row_bias: [Option<S::V>; R] = [None; R];
        if let Bias::Row(b) = self.bias {
            for (r, rb) in row_bias.iter_mut().enumerate() {
                let start = i0 + r * S::L;
                let rows = start..(i0 + mr).clamp(start, start + S::L);
                // A whole vector of rows loaded in place (a copy of a run's length was a
                // `memcpy` call per tile); a block's last rows through a copy.
                *rb = Some(match rows.len() == S::L {
                    true => S::load(&b[start..]),
                    false => {
                        let mut lanes = [0.0; MAX_LANES];
                        lanes[..rows.len()].copy_from_slice(&b[rows]);
                        S::load(&lanes)
                    }
                });
            }
        }
        for (acc_c, &j) in acc.iter_mut().zip(&cols.j) {
            let col_bias = match self.bias {
                Bias::Col(b) => Some(S::splat(b[j])),
                _ => None,
            };
            for (v, &rb) in acc_c.iter_mut().zip(&row_bias) {
                *v = self.apply::<S>(*v, rb.or(col_bias));
            }
        }
    }
}

/// `acc[r] += sum over kk < k of a[offsets[r] + kk * a_cs] * b[row(kk)..]`'s `V` vectors,
/// `row(kk)` the offset of B's row `kk` and the vectors `vector` apart ([`BRows`]; when `MASKED`,
/// the last vector's first `last` values of each row of B only, the rest zero): the depth loop
/// of one column-vector tile, with all bounds checked before it (the accumulators stay in
/// registers: with a bounds check or a slice per row in the loop, LLVM spilled them), returning
/// the sums `acc` plus the products. The sums are passed by value: through a `&mut` to the
/// caller's array, which its epilogue indexes, LLVM stored every sum to the stack after each
/// multiply-add wherever the tile was inlined into the implicit convolution (its im2col path:
/// KWS's first layer 1.6x and MNIST's 1.5x slower; six-row tiles of four vectors there).
#[inline(always)]
fn cols_micro<S: Lanes, const ROWS: usize, const V: usize, const MASKED: bool, const PHASES: usize>(
    g: &Gemm,
    a: &[f32],
    offsets: [usize; ROWS],
    b: &[f32],
    rows: BRows,
    last: usize,
    mut acc: [[S::V; V]; ROWS],
) -> [[S::V; V]; ROWS] {
    let (k, l) = (g.k, S::L);
    let a_last = (k - 1) * g.a_cs;
    let vectors: [usize; V] = core::array::from_fn(|v| rows.vector_at::<S>(v));
    let width = vectors[V - 1] + if MASKED { last } else { l };
    assert!(rows.runs * rows.len == k && rows.per_plane > 0 && (PHASES == 2) == (rows.phase > 0));
    assert!(offsets.iter().all(|&o| o + a_last < a.len()) && rows.last() + width <= b.len());
    let (ap, bp) = (a.as_ptr(), b.as_ptr());
    let (mut at, mut run, mut plane, mut in_plane) = (0, 0, 0, 0);
    // A run of three adjacent rows (a kernel 3 wide at column stride 1) as three steps, not a
    // loop of three inside the loop over runs. Its time depended less on where the linker put the
    // code: in five builds of one benchmark (16, 4 and 1 codegen units; loops aligned to 16 and
    // 32 bytes), ResNet-8's first layer took 11.1-11.6 us this way and 11.1-14.1 us with the
    // inner loop, its 16-channel 32x32 layers 47.1-49.0 and 47.7-49.5 us (Zen 4).
    let three = PHASES == 1 && rows.len == 3 && rows.step == 1;
    for _ in 0..rows.runs {
        if three {
            // SAFETY: as below, with `column(t) = t` for t = 0, 1, 2.
            unsafe {
                let brow = bp.add(run);
                cols_step::<S, ROWS, V, MASKED>(&mut acc, ap, &offsets, g.a_cs, &vectors, last, brow, at);
                cols_step::<S, ROWS, V, MASKED>(&mut acc, ap, &offsets, g.a_cs, &vectors, last, brow.add(1), at + 1);
                cols_step::<S, ROWS, V, MASKED>(&mut acc, ap, &offsets, g.a_cs, &vectors, last, brow.add(2), at + 2);
            }
            at += 3;
        } else {
            for t in 0..rows.len {
                // SAFETY: the `at`-th depth's row of B starts at `run + column(t) <= rows.last()`, so
                // its vectors end within `width` of that, inside `b` (the last vector's masked load
                // reads `last` values); `at < k`, so `offsets[r] + at * a_cs < a.len()` (the
                // assertions above).
                unsafe {
                    let brow = bp.add(run + rows.column::<PHASES>(t));
                    cols_step::<S, ROWS, V, MASKED>(&mut acc, ap, &offsets, g.a_cs, &vectors, last, brow, at);
                }
                at += 1;
            }
        }
        in_plane += 1;
        run += rows.row;
        if in_plane == rows.per_plane {
            in_plane = 0;
            plane += rows.plane;
            run = plane;
        }
    }
    acc
}

/// One depth of [`cols_micro`]: B's row at `brow`, A's column `at`.
///
/// # Safety
/// `brow`'s vectors `vector` apart (the last one's first `last` values when `MASKED`) and
/// `ap[offsets[r] + at * a_cs]` must be readable.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn cols_step<S: Lanes, const ROWS: usize, const V: usize, const MASKED: bool>(
    acc: &mut [[S::V; V]; ROWS],
    ap: *const f32,
    offsets: &[usize; ROWS],
    a_cs: usize,
    vectors: &[usize; V],
    last: usize,
    brow: *const f32,
    at: usize,
) {
    unsafe {
        let mut bv = [S::zero(); V];
        for (v, x) in bv.iter_mut().enumerate() {
            *x = match MASKED && v == V - 1 {
                true => S::load_first_ptr(brow.add(vectors[v]), last),
                false => S::load_ptr(brow.add(vectors[v])),
            };
        }
        for (acc_r, &o) in acc.iter_mut().zip(offsets) {
            let av = S::splat(*ap.add(o + at * a_cs));
            for (acc_v, &x) in acc_r.iter_mut().zip(&bv) {
                *acc_v = S::fma(av, x, *acc_v);
            }
        }
    }
}

/// The accumulators of one row-vector tile: column `c` holds rows `0..R * L` in `R` vectors.
type Acc<V, const R: usize, const C: usize> = [[V; R]; C];

/// Working memory of the row-vector kernels (on the stack, [`FMA_PANELS_BYTES`]): the packed A panel
/// (unused when A is read in place), a B panel (columns gathered from anywhere), and a staging
/// tile between the accumulators and C's rows. Sized for the widest vectors.
struct Panels {
    a: [MaybeUninit<f32>; MV_MAX * KC],
    b: [MaybeUninit<f32>; KC * NB],
    tile: [[f32; MV_MAX]; NB],
}

// What the kernel facts say these arrays take.
const _: () = assert!(core::mem::size_of::<Panels>() == FMA_PANELS_BYTES);
const _: () = assert!(core::mem::size_of::<(Panels, [MaybeUninit<f32>; FMA_CONV_BAND], [u32; KC])>() == FMA_CONV_BYTES);

impl Panels {
    #[inline(always)]
    fn new() -> Self {
        // The panels are written where they are used (`pack_a`, `gather_b`, `zeroed`): zeroing
        // their 22 KiB on every call cost a fifth to a quarter of a VWW band's first convolution.
        Panels {
            a: [MaybeUninit::uninit(); MV_MAX * KC],
            b: [MaybeUninit::uninit(); KC * NB],
            tile: [[0.0; MV_MAX]; NB],
        }
    }
}

/// Runs `block::<S, R, C>` on the rows `i0..i0 + mr` of a row-vector kernel: two vectors by 6
/// columns, or, for a block of at most `L` rows (e.g. a convolution with 16 output channels on
/// AVX-512), one vector by 12 columns, so that no lane computes a missing row. Both shapes keep
/// 12 accumulators.
macro_rules! by_rows {
    ($s:ty, $mr:expr, $block:ident($($arg:expr),* $(,)?)) => {
        if $mr <= <$s>::L { $block::<$s, 1, 12>($($arg),*) } else { $block::<$s, 2, 6>($($arg),*) }
    };
    // The implicit GEMM's tiles as `$tiles` ([`RowTiles`]) says.
    ($s:ty, $mr:expr, $tiles:expr, $block:ident($($arg:expr),* $(,)?)) => {
        match $tiles {
            RowTiles::Twelve if $mr > <$s>::L => $block::<$s, 2, 12>($($arg),*),
            RowTiles::Eight if $mr > <$s>::L => $block::<$s, 2, 8>($($arg),*),
            RowTiles::Eight => $block::<$s, 1, 8>($($arg),*),
            _ => by_rows!($s, $mr, $block($($arg),*)),
        }
    };
}

/// The row tiles of the implicit GEMM ([`row_tiles`]), for [`by_rows!`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum RowTiles {
    /// [`by_rows!`]'s: two vectors of channels by 6 positions, or one by 12.
    Default,
    /// Two vectors of channels by 12 positions (24 accumulators, A's two vectors loaded once
    /// per 24 multiply-adds instead of 12), for rows of whole tiles of 12 (MNIST's 24-wide
    /// second layer: 126 to 116 us). Elsewhere the tiles of 6 were faster: on narrower rows the
    /// positions left go to scattered tiles, and ResNet-18's 4x4 and 2x2 maps ran 1.1x and 1.6x
    /// slower.
    Twelve,
    /// Tiles of 8 positions (two vectors of channels, or one for a block of at most `L`), for
    /// output rows 8 wide: one tile a row, where tiles of 6 left 2 positions of every row, and
    /// tiles of 12 all 8, to the tiles of scattered positions. Old against new, one process,
    /// p10: ResNet-8's stride-2 layer to 8x8 0.76-0.84; ResNet-18's 0.72-0.80; 16 output
    /// channels 0.75; unpadded 0.78; 336 input channels (a band too deep to stage: every
    /// position scattered, in tiles of 8 instead of 6) 0.87.
    Eight,
}

/// The row tiles of the implicit GEMM of `p`: the wider ones only on AVX-512, whose 32
/// registers hold their accumulators.
#[inline(always)]
fn row_tiles<S: Lanes>(p: &Conv2d) -> RowTiles {
    let whole_twelves = p.stride_w <= 2 && p.out_w.is_multiple_of(NB) && p.out_h * p.out_w >= 2 * NB;
    match S::REGISTERS >= 32 {
        true if p.out_w == 8 => RowTiles::Eight,
        true if whole_twelves => RowTiles::Twelve,
        _ => RowTiles::Default,
    }
}

/// A's rows of one row-vector tile, `kc` deep: the `R * L` values of depth `kk` at
/// `a[kk * stride..]`. Either a panel packed on the stack (`stride == R * L`) or A itself, read in
/// place (its rows contiguous: weights packed at build time, or a transposed operand).
#[derive(Clone, Copy)]
struct APanel<'a> {
    a: &'a [f32],
    stride: usize,
    kc: usize,
    /// Prefetch, at each depth, the next `R * L` rows: the next row block's panel of an A read
    /// in place, whose depths lie a stride apart. The hardware prefetchers do not follow such a
    /// walk across pages, and a layer whose weights are not in cache waits on every depth's
    /// line.
    ahead: bool,
}

impl APanel<'_> {
    /// The same panel, prefetching the next rows ([`APanel::ahead`]) when `on`.
    #[inline(always)]
    fn ahead(self, on: bool) -> Self {
        APanel { ahead: on, ..self }
    }

    /// The `R` vectors of rows at depth `kk`.
    #[inline(always)]
    fn at<S: Lanes, const R: usize>(&self, kk: usize) -> [S::V; R] {
        let row = &self.a[kk * self.stride..][..R * S::L];
        let mut out = [S::zero(); R];
        for (r, v) in out.iter_mut().enumerate() {
            *v = S::load(&row[r * S::L..]);
        }
        out
    }

    /// The panel's values with one bounds check for all of its depths: the `R` vectors of every
    /// depth `kk < kc` lie inside, from `kk * stride` (empty for an empty panel). Read with
    /// [`vectors_at`].
    #[inline(always)]
    fn checked<S: Lanes, const R: usize>(&self) -> &[f32] {
        match self.kc {
            0 => &[],
            kc => &self.a[..(kc - 1) * self.stride + R * S::L],
        }
    }
}

/// The `R` vectors of `L` values at `a[at..]`, without a bounds check.
///
/// # Safety
/// `at + R * L <= a.len()`: for `a` from [`APanel::checked`], `at = kk * stride` with `kk < kc`.
#[inline(always)]
unsafe fn vectors_at<S: Lanes, const R: usize>(a: &[f32], at: usize) -> [S::V; R] {
    let mut out = [S::zero(); R];
    for (r, v) in out.iter_mut().enumerate() {
        // SAFETY: the caller's bound.
        *v = unsafe { S::load_ptr(a.as_ptr().add(at + r * S::L)) };
    }
    out
}

/// `acc_c += av * bv`, lane by lane: one column of a row-vector tile at one depth.
#[inline(always)]
fn fma_column<S: Lanes, const R: usize>(acc_c: &mut [S::V; R], av: &[S::V; R], bv: S::V) {
    for (acc_v, &a) in acc_c.iter_mut().zip(av) {
        *acc_v = S::fma(a, bv, *acc_v);
    }
}

/// `acc += A * B` over the panel's depth, where row `kk` of B is `b[kk * bs..kk * bs + C]`.
#[inline(always)]
fn micro<S: Lanes, const R: usize, const C: usize>(ap: APanel, b: &[f32], bs: usize, acc: &mut Acc<S::V, R, C>) {
    if ap.kc == 0 {
        return;
    }
    // One bounds check per operand for the whole panel instead of three per depth.
    let a = ap.checked::<S, R>();
    let b = &b[..(ap.kc - 1) * bs + C];
    for kk in 0..ap.kc {
        if ap.ahead {
            prefetch_rows(ap.a, kk * ap.stride + R * S::L, R * S::L);
        }
        // SAFETY: `kk < kc`, so A's `R` vectors at `kk * stride` and B's `C` values at
        // `kk * bs` lie inside the slices checked above.
        let av = unsafe { vectors_at::<S, R>(a, kk * ap.stride) };
        for (c, acc_c) in acc.iter_mut().enumerate() {
            fma_column::<S, R>(acc_c, &av, S::splat(unsafe { *b.get_unchecked(kk * bs + c) }));
        }
    }
}

/// Asks for the cache lines of `a[at..at + n]` (a hint: nothing is read, and an address past
/// `a`'s end cannot fault).
#[inline(always)]
fn prefetch_rows(a: &[f32], at: usize, n: usize) {
    for l in (0..n).step_by(16) {
        // SAFETY: a prefetch neither reads nor faults; `wrapping_add` only computes the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(a.as_ptr().wrapping_add(at + l).cast()) }
    }
}

/// `acc += A * B` over the panel (depths `k0..k0 + ap.kc`), where `B[k][c] = x[base[c] + koff]`
/// with `koff` the offset of row `k` of the im2col matrix.
#[inline(always)]
fn micro_indirect<S: Lanes, const R: usize, const C: usize>(
    ap: APanel,
    p: &Conv2d,
    k0: usize,
    x: &[f32],
    base: &[usize; C],
    acc: &mut Acc<S::V, R, C>,
) {
    // One bounds check per column for the whole panel instead of one per value.
    let koff_max = koff_max(p);
    let cols: [&[f32]; C] = core::array::from_fn(|c| &x[base[c]..][..=koff_max]);
    // SAFETY (the reads below): every im2col offset is at most `koff_max`, and
    // `cols[c].len() == koff_max + 1`.
    micro_im2col::<S, R, C>(ap, p, k0, |c, ko| unsafe { *cols[c].get_unchecked(ko) }, acc);
}

/// All of C in row-vector tiles (any strides): every step multiplies the vectors of A's rows by
/// one broadcast value of each column of B.
#[inline(always)]
fn gemm_rows<S: Lanes>(g: &Gemm, a: &[f32], b: &[f32], bias: Bias, c: &mut [f32]) {
    let mv = 2 * S::L;
    let mut i0 = 0;
    if g.n == 1 && g.a_rs == 1 && !g.add_to_c {
        i0 = gemv_rows::<S, GEMV_VECTORS>(g, a, b, bias, c, 0);
        i0 = gemv_rows::<S, 4>(g, a, b, bias, c, i0);
        i0 = gemv_rows::<S, 2>(g, a, b, bias, c, i0);
        i0 = gemv_rows::<S, 1>(g, a, b, bias, c, i0);
        if g.m - i0 < S::L {
            if i0 < g.m {
                gemv_last::<S>(g, a, b, bias, c, i0);
            }
            return;
        }
    }
    let mut panels = Panels::new();
    // A streamed product stores sums; `finish` applies the epilogue after it.
    let streamed_a = streams::<S>(g, a, i0);
    let epilogue = Epilogue::in_row_tiles::<S>(g, bias).filter(|_| !streamed_a);
    if streamed_a {
        let sums = zeroed(&mut panels.a, MV_MAX * KC);
        match g.n {
            4 => streamed::<S, 4>(g, a, b, c, i0, sums),
            3 => streamed::<S, 3>(g, a, b, c, i0, sums),
            2 => streamed::<S, 2>(g, a, b, c, i0, sums),
            _ => streamed::<S, 1>(g, a, b, c, i0, sums),
        }
    } else {
        let mut i = i0;
        while i < g.m {
            let mr = mv.min(g.m - i);
            match exact_columns::<S>(g.n, mr) {
                7 => rows_block::<S, 2, 7>(g, a, b, c, i, mr, epilogue, &mut panels),
                8 => rows_block::<S, 2, 8>(g, a, b, c, i, mr, epilogue, &mut panels),
                9 => rows_block::<S, 2, 9>(g, a, b, c, i, mr, epilogue, &mut panels),
                10 => rows_block::<S, 2, 10>(g, a, b, c, i, mr, epilogue, &mut panels),
                11 => rows_block::<S, 2, 11>(g, a, b, c, i, mr, epilogue, &mut panels),
                12 => rows_block::<S, 2, 12>(g, a, b, c, i, mr, epilogue, &mut panels),
                _ => by_rows!(S, mr, rows_block(g, a, b, c, i, mr, epilogue, &mut panels)),
            }
            i += mv;
        }
    }
    if g.epilogue && epilogue.is_none() {
        for r in i0..g.m {
            finish(&mut c[r * g.c_rs..][..g.n], g, bias, r, 0);
        }
    }
}

/// The columns of [`gemm_rows`]'s tiles of two vectors of rows where they are not 6: on
/// instruction sets with 32 registers (AVX-512), all of a product's 7 to 12 columns in one tile
/// (14 to 24 accumulators; A's vectors loaded once for all of them), tiles of 8 for 16 columns,
/// instead of tiles of 6 whose last one computes columns that are never stored, and tiles of 12
/// for a multiple of 12: MobileNetV2's last pointwise layer (9 positions, 1280 rows, 320 deep)
/// 104 to 74 us, VWW's 256-channel one at 3x3 16.5 to 11.8, its 128-channel ones at 6x6 (36
/// positions) 13.8-15.6 to 12.3-13.5 us on their own (Zen 4). 0 for the tiles of [`by_rows`].
#[inline(always)]
fn exact_columns<S: Lanes>(n: usize, mr: usize) -> usize {
    match n {
        _ if mr <= S::L || S::REGISTERS < 32 => 0,
        7..=12 => n,
        16 => 8,
        _ if n.is_multiple_of(12) => 12,
        _ => 0,
    }
}

/// Depths of A that [`streamed`] multiplies per load and store of its partial sums.
const STREAM_DEPTHS: usize = 4;

/// How many depths ahead [`streamed`] asks for the lines of A it will read.
const STREAM_AHEAD: usize = 16;

/// `C = A * B` (plus C with `add_to_c`), rows `i0..` of C, for a product of `N` columns whose A
/// [`streams`]: depth outer, A read row after row in order (whole rows of the k-major weights, a
/// few sequential runs at a time, which the hardware prefetchers follow), the partial sums of a
/// chunk of rows kept in `sums` (column `c`'s at `sums[c * chunk..]`, vectors along the rows)
/// and updated [`STREAM_DEPTHS`] depths per load and store. Each element is the k-ascending
/// chain of fused multiply-adds of the row tiles; the caller applies the epilogue.
#[inline(always)]
fn streamed<S: Lanes, const N: usize>(g: &Gemm, a: &[f32], b: &[f32], c: &mut [f32], i0: usize, sums: &mut [f32]) {
    let l = S::L;
    // Rows per chunk: whole vectors, all columns' sums in `sums`.
    let chunk = (sums.len() / N) / l * l;
    let mut r0 = i0;
    while r0 < g.m {
        let rows = chunk.min(g.m - r0);
        let width = rows.next_multiple_of(l);
        for (col, part) in sums.chunks_exact_mut(chunk).take(N).enumerate() {
            for (r, v) in part[..width].iter_mut().enumerate() {
                *v = match g.add_to_c && r < rows {
                    true => c[(r0 + r) * g.c_rs + col],
                    false => 0.0,
                };
            }
        }
        // `streams` checked that every row block's A lies inside `a`: the last vector's rows too.
        assert!((g.k - 1) * g.a_cs + r0 + width <= a.len() && (g.k - 1) * g.b_rs + N <= b.len());
        let mut k0 = 0;
        while k0 + STREAM_DEPTHS <= g.k {
            stream_depths::<S, N, STREAM_DEPTHS>(g, a, b, k0, r0, width, chunk, sums);
            k0 += STREAM_DEPTHS;
        }
        while k0 < g.k {
            stream_depths::<S, N, 1>(g, a, b, k0, r0, width, chunk, sums);
            k0 += 1;
        }
        for (col, part) in sums.chunks_exact(chunk).take(N).enumerate() {
            for (r, &v) in part[..rows].iter().enumerate() {
                c[(r0 + r) * g.c_rs + col] = v;
            }
        }
        r0 += rows;
    }
}

/// [`streamed`]'s partial sums of rows `r0..r0 + width` updated over depths `k0..k0 + D`: per
/// vector of rows, its `N` sums loaded, `D` vectors of A times B's broadcast values added in
/// depth order, the sums stored.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn stream_depths<S: Lanes, const N: usize, const D: usize>(
    g: &Gemm,
    a: &[f32],
    b: &[f32],
    k0: usize,
    r0: usize,
    width: usize,
    chunk: usize,
    sums: &mut [f32],
) {
    let l = S::L;
    let mut bv = [[S::zero(); N]; D];
    for (d, bd) in bv.iter_mut().enumerate() {
        for (col, v) in bd.iter_mut().enumerate() {
            *v = S::splat(b[(k0 + d) * g.b_rs + col]);
        }
    }
    assert!((k0 + D - 1) * g.a_cs + r0 + width <= a.len() && (N - 1) * chunk + width <= sums.len());
    let (ap, sp) = (a.as_ptr(), sums.as_mut_ptr());
    for v in (0..width).step_by(l) {
        // SAFETY: `v + l <= width`, so each sum's vector lies inside `sums` and each depth's row of
        // A inside `a` (the assertion above).
        unsafe {
            let mut acc = [S::zero(); N];
            for (col, x) in acc.iter_mut().enumerate() {
                *x = S::load_ptr(sp.add(col * chunk + v));
            }
            for (d, bd) in bv.iter().enumerate() {
                let at = (k0 + d) * g.a_cs + r0 + v;
                _mm_prefetch::<_MM_HINT_T0>(ap.wrapping_add(at + STREAM_AHEAD * g.a_cs).cast());
                let av = S::load_ptr(ap.add(at));
                for (x, &bc) in acc.iter_mut().zip(bd) {
                    *x = S::fma(av, bc, *x);
                }
            }
            for (col, &x) in acc.iter().enumerate() {
                S::store(core::slice::from_raw_parts_mut(sp.add(col * chunk + v), l), x);
            }
        }
    }
}

/// Values of A from which [`gemm_rows`], reading A in place for at most [`STREAM_MAX_N`]
/// columns, goes over its depth in the outer loop ([`streamed`]). With so few columns each value
/// of A feeds a few multiply-adds, and an A that is not in cache is read at memory speed:
/// ResNet-18's last convolutions (9 MiB of weights each, 4 output positions, products of 512 x
/// 128 per im2col block). Row blocks outer, the kernels read each block's rows over all of `k`,
/// a few values every `a_cs`, a stride of kilobytes that the hardware prefetchers do not follow
/// across pages (measured 3.4 ms for one such layer with its weights streamed from DRAM); depth
/// outer, in passes of 16 depths over row tiles of two vectors by 6 columns, 2.6 ms (AVX2); in
/// [`streamed`], whole rows of A in order, 1.15 against 1.4 ms with its weights from memory,
/// 0.5 against 0.9 ms from L3 (AVX-512, Zen 4). With more columns, reloading the partial sums
/// cost more than it saved (MobileNetV2's last pointwise layer, 9 columns, ran 2x slower).
const STREAM_MIN: usize = 64 * 1024;

/// The most columns of a product whose A [`gemm_rows`] streams. (With 9, on AVX-512, the
/// partial sums' loads and stores made MobileNetV2's last pointwise layer and VWW's 256-channel
/// one at 3x3, weights in cache, 1.35 and 1.5x slower than the row tiles.)
const STREAM_MAX_N: usize = 4;

/// Whether [`gemm_rows`] streams A (rows `i0..` of it): at most [`STREAM_MAX_N`] columns, A read
/// in place by every row block, and at least [`STREAM_MIN`] values.
#[inline(always)]
fn streams<S: Lanes>(g: &Gemm, a: &[f32], i0: usize) -> bool {
    let rows = (g.m - i0).next_multiple_of(2 * S::L);
    g.n <= STREAM_MAX_N && g.a_rs == 1 && (g.m - i0) * g.k >= STREAM_MIN && (g.k - 1) * g.a_cs + i0 + rows <= a.len()
}

/// Vectors of rows of the widest one-column tile of [`gemv_rows`] (8 accumulators in flight);
/// the rows left go to tiles of 4, 2 and 1 vectors. Each accumulator is one output's chain over
/// all of `k`, so a narrow product needs the wide tiles to hide the FMA latency: MNIST's first
/// fully connected layer (32 outputs, 9216 deep) took 79 us in tiles of one vector, 18 us in one
/// tile of four.
const GEMV_VECTORS: usize = 8;

/// Whether a [`gemv_rows`] tile of `V` vectors over `values` values of A asks for A's lines
/// [`STREAM_AHEAD`] depths ahead: on AVX-512, for tiles of one or two vectors (one or two chains of
/// fused multiply-adds, latency-bound, whose loads the core does not issue far enough ahead) over
/// at least [`STREAM_MIN`] values. Measured against the tiles without it (same process, p10):
/// MNIST's first fully connected layer (32 outputs, 9216 deep) 0.79-0.82, 16 outputs 9216 or 4608
/// deep 0.63-0.69, 32 outputs 2304 deep 0.81-0.94; where it is not asked: 288 deep (A in L1)
/// 1.07-1.13 with it, tiles of 8 vectors 0.98-1.00, AVX2 (tiles of 2 and 4 vectors) 0.97-1.17.
#[inline(always)]
fn prefetches_gemv<S: Lanes, const V: usize>(values: usize) -> bool {
    S::L == MAX_LANES && V <= 2 && values >= STREAM_MIN
}

/// A product with one column (a matrix-vector product: a pointwise convolution at one position)
/// from row `i0` on, in tiles of `V` vectors of rows (`V * L` rows), A read in place: every step
/// multiplies the `V` vectors of A's rows at one depth by one broadcast value of B. Stops before
/// the first tile whose rows lie past `m` or whose last depth's vectors lie past `a`'s end, and
/// returns its first row. Each element is the same k-ascending chain of fused multiply-adds as
/// in [`rows_block`], which a tile of 6 or 12 columns would compute with all but one column
/// repeated (and without the row-vector kernels' stack panels, which take longer to set up than
/// a small layer takes to compute).
#[inline(always)]
fn gemv_rows<S: Lanes, const V: usize>(
    g: &Gemm,
    a: &[f32],
    b: &[f32],
    bias: Bias,
    c: &mut [f32],
    mut i0: usize,
) -> usize {
    let rows = V * S::L;
    let ahead = prefetches_gemv::<S, V>(rows * g.k);
    while i0 + rows <= g.m && (g.k - 1) * g.a_cs + i0 + rows <= a.len() {
        let mut acc = [S::zero(); V];
        for kk in 0..g.k {
            if ahead {
                prefetch_rows(a, (kk + STREAM_AHEAD) * g.a_cs + i0, rows);
            }
            let av = &a[kk * g.a_cs + i0..][..rows];
            let bv = S::splat(b[kk * g.b_rs]);
            for (v, acc_v) in acc.iter_mut().enumerate() {
                *acc_v = S::fma(S::load(&av[v * S::L..]), bv, *acc_v);
            }
        }
        store_gemv::<S>(g, bias, c, i0, &acc, rows);
        i0 += rows;
    }
    i0
}

/// The last `g.m - i0` rows (fewer than a vector) of a one-column product, as [`gemv_rows`]
/// computes whole vectors of them, with masked loads that read nothing past the last row. KWS's
/// and ResNet-8's fully connected layers (12 and 10 outputs, 64 deep) otherwise went to
/// [`gemm_rows`]' row tiles, whose packing of A took most of their time: 1.0-1.1 against 0.2 us
/// on their own (old and new code alternating in one process, Zen 4, three builds).
#[inline(always)]
fn gemv_last<S: Lanes>(g: &Gemm, a: &[f32], b: &[f32], bias: Bias, c: &mut [f32], i0: usize) {
    let rows = g.m - i0;
    let mut acc = S::zero();
    for kk in 0..g.k {
        let av = &a[kk * g.a_cs + i0..][..rows];
        // SAFETY: `av` holds the `rows` floats the masked load reads.
        let x = unsafe { S::load_first_ptr(av.as_ptr(), rows) };
        acc = S::fma(x, S::splat(b[kk * g.b_rs]), acc);
    }
    store_gemv::<S>(g, bias, c, i0, &[acc], rows);
}

/// Stores the first `rows` lanes of a one-column tile's accumulators `acc` (rows `i0..`) into C,
/// each through the epilogue.
#[inline(always)]
fn store_gemv<S: Lanes>(g: &Gemm, bias: Bias, c: &mut [f32], i0: usize, acc: &[S::V], rows: usize) {
    for (v, &acc_v) in acc.iter().enumerate() {
        let mut lanes = [0.0; MAX_LANES];
        S::store(&mut lanes, acc_v);
        for (l, &value) in lanes[..S::L.min(rows - v * S::L)].iter().enumerate() {
            let i = i0 + v * S::L + l;
            let crow = &mut c[i * g.c_rs..][..1];
            crow[0] = value;
            if g.epilogue {
                finish(crow, g, bias, i, 0);
            }
        }
    }
}

/// Rows `i0..i0 + mr` of [`gemm_rows`] in tiles of `R * L` rows by `C` columns, over the
/// [`Passes`] of A's depth, the last applying `epilogue`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn rows_block<S: Lanes, const R: usize, const C: usize>(
    g: &Gemm,
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
    i0: usize,
    mr: usize,
    epilogue: Option<Epilogue>,
    panels: &mut Panels,
) {
    let passes = Passes::new::<S, R>(g, a, i0);
    for k0 in passes.starts(g) {
        let Panels { a: apack, b: bpack, tile } = &mut *panels;
        let blk = passes.block::<S, R>(g, a, i0, mr, k0, epilogue, apack);
        rows_pass::<S, R, C>(g, b, c, &blk, bpack, tile);
    }
}

/// One pass of the row-vector kernels: C's rows `blk.i0..blk.i0 + blk.mr`, all columns, plus A
/// times B over the pass's depth.
#[inline(always)]
fn rows_pass<S: Lanes, const R: usize, const C: usize>(
    g: &Gemm,
    b: &[f32],
    c: &mut [f32],
    blk: &Block,
    bpack: &mut [MaybeUninit<f32>; KC * NB],
    tile: &mut [[f32; MV_MAX]; NB],
) {
    let (i0, mr) = (blk.i0, blk.mr);
    for j0 in (0..g.n).step_by(C) {
        let cols = Cols::<C>::run(j0, C.min(g.n - j0));
        let mut acc: Acc<S::V, R, C> = [[S::zero(); R]; C];
        if blk.accumulate {
            load_tile::<S, R, C>(g, c, i0, mr, &cols, tile, &mut acc);
        }
        for (kb, kc) in blk.b_blocks() {
            let in_place = b_rows_in_place::<C>(g, b.len(), j0, kb, kc);
            if in_place > 0 {
                let panel = blk.panel(kb, in_place).ahead(j0 == 0 && blk.in_place);
                micro::<S, R, C>(panel, &b[kb * g.b_rs + j0..], g.b_rs, &mut acc);
            }
            if in_place < kc {
                let (k1, rest) = (kb + in_place, kc - in_place);
                let packed = gather_b::<C>(g, b, &cols, k1, rest, bpack);
                micro::<S, R, C>(blk.panel(k1, rest), packed, C, &mut acc);
            }
        }
        store_tile::<S, R, C>(g, c, i0, mr, &cols, tile, blk.last, acc);
    }
}

/// The rows and depth one pass of the row-vector kernels computes: rows `i0..i0 + mr`, depth
/// `k0..k0 + kc`, with A's rows read from `a` (positioned at depth `k0`) every `stride` values.
struct Block<'a> {
    i0: usize,
    mr: usize,
    k0: usize,
    kc: usize,
    /// C already holds partial sums to add to (earlier passes, or `Gemm::add_to_c`).
    accumulate: bool,
    a: &'a [f32],
    stride: usize,
    /// A is read in place over all of `k` (its next rows lie `R * L` values on at every depth),
    /// and the first tile prefetches them ([`APanel::ahead`]).
    in_place: bool,
    /// The epilogue its tiles apply as they store C, on the last pass of a product whose
    /// epilogue has a vector form.
    last: Option<Epilogue<'a>>,
}

impl Block<'_> {
    /// A's rows at depths `kb..kb + kc` of this pass.
    #[inline(always)]
    fn panel(&self, kb: usize, kc: usize) -> APanel<'_> {
        APanel { a: &self.a[(kb - self.k0) * self.stride..], stride: self.stride, kc, ahead: false }
    }

    /// The pass's depth in blocks of at most `KC` (a B panel's depth): `(start, length)`.
    #[inline(always)]
    fn b_blocks(&self) -> impl Iterator<Item = (usize, usize)> {
        let end = self.k0 + self.kc;
        (self.k0..end).step_by(KC).map(move |kb| (kb, KC.min(end - kb)))
    }
}

/// How the row-vector kernels go over A's depth for one block of rows: once over all of `k` when
/// A's rows are read in place ([`a_in_place`]), with the tiles' sums in registers throughout;
/// otherwise once per `KC`-deep panel, packed on the stack first, the tiles' partial sums waiting
/// in C in between.
#[derive(Clone, Copy)]
struct Passes {
    in_place: bool,
}

impl Passes {
    #[inline(always)]
    fn new<S: Lanes, const R: usize>(g: &Gemm, a: &[f32], i0: usize) -> Self {
        Passes { in_place: a_in_place::<S, R>(g, a, i0) }
    }

    /// Where each pass starts in A's depth.
    #[inline(always)]
    fn starts(self, g: &Gemm) -> core::iter::StepBy<core::ops::Range<usize>> {
        (0..g.k).step_by(if self.in_place { g.k } else { KC })
    }

    /// The pass starting at depth `k0`, with A's panel packed into `apack` unless it is read in
    /// place.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn block<'a, S: Lanes, const R: usize>(
        self,
        g: &Gemm,
        a: &'a [f32],
        i0: usize,
        mr: usize,
        k0: usize,
        epilogue: Option<Epilogue<'a>>,
        apack: &'a mut [MaybeUninit<f32>; MV_MAX * KC],
    ) -> Block<'a> {
        if self.in_place {
            let (a, accumulate, last) = (&a[i0..], g.add_to_c, epilogue);
            return Block { i0, mr, k0: 0, kc: g.k, accumulate, a, stride: g.a_cs, in_place: true, last };
        }
        let kc = KC.min(g.k - k0);
        let a = pack_a::<S, R>(g, a, i0, mr, k0, kc, apack);
        let accumulate = k0 > 0 || g.add_to_c;
        let last = epilogue.filter(|_| k0 + kc == g.k);
        let stride = R * S::L;
        Block { i0, mr, k0, kc, accumulate, a, stride, in_place: false, last }
    }
}

/// Whether the row-vector kernels read rows `i0..i0 + R * L` of A in place: they are contiguous
/// (`a_rs == 1`) and the last depth's vectors lie inside `a` (rows past `m` are read, computed and
/// never stored).
#[inline(always)]
fn a_in_place<S: Lanes, const R: usize>(g: &Gemm, a: &[f32], i0: usize) -> bool {
    g.a_rs == 1 && (g.k - 1) * g.a_cs + i0 + R * S::L <= a.len()
}

/// How many of B's rows `k0..k0 + kc` [`micro`] reads in place for a tile of `C` columns from
/// column `j0`: with B's columns contiguous, every row whose `C` values from `j0` lie inside `b`
/// (`b_len` values). A short last tile reads past its columns (into the next row: computed,
/// never stored) instead of gathering its columns: MobileNetV2's last pointwise layer (9
/// columns, tiles of 6) spent a third of its time gathering. The remaining rows (the last ones
/// of such a tile, or all of them when B's columns are strided) go through [`gather_b`].
#[inline(always)]
fn b_rows_in_place<const C: usize>(g: &Gemm, b_len: usize, j0: usize, k0: usize, kc: usize) -> usize {
    let Some(room) = b_len.checked_sub(j0 + C).filter(|_| g.b_cs == 1) else { return 0 };
    // Row `k`'s read ends at `k * b_rs + j0 + C`: rows `0..fit` stay inside `b`.
    let fit = match g.b_rs {
        0 => k0 + kc,
        rs => room / rs + 1,
    };
    fit.saturating_sub(k0).min(kc)
}

/// Gathers rows `k0..k0 + kc` of B's columns `cols` into `bpack` for [`micro`] (row stride `C`,
/// missing columns zero); returns them.
#[inline(always)]
fn gather_b<'a, const C: usize>(
    g: &Gemm,
    b: &[f32],
    cols: &Cols<C>,
    k0: usize,
    kc: usize,
    bpack: &'a mut [MaybeUninit<f32>; KC * NB],
) -> &'a [f32] {
    let j0 = cols.j[0];
    let packed = &mut bpack[..kc * C];
    for (kk, dst) in packed.chunks_exact_mut(C).enumerate() {
        let base = (k0 + kk) * g.b_rs + j0 * g.b_cs;
        for (jj, d) in dst.iter_mut().enumerate() {
            d.write(if jj < cols.n { b[base + jj * g.b_cs] } else { 0.0 });
        }
    }
    // SAFETY: every element of `packed` was written above.
    unsafe { written(packed) }
}

/// The columns of C one tile computes: `j[..n]` (the rest repeat the last one: computed, never
/// stored). Any set of columns, so that a convolution can group the positions it reads the same
/// way.
#[derive(Clone, Copy)]
struct Cols<const C: usize> {
    j: [usize; C],
    n: usize,
}

impl<const C: usize> Cols<C> {
    /// Columns `j0..j0 + n`.
    #[inline(always)]
    fn run(j0: usize, n: usize) -> Self {
        Cols { j: core::array::from_fn(|c| j0 + c.min(n - 1)), n }
    }

    /// The first column, when the tile's `C` columns are consecutive.
    #[inline(always)]
    fn run_start(&self) -> Option<usize> {
        let j0 = self.j[0];
        (self.n == C && (0..C).all(|c| self.j[c] == j0 + c)).then_some(j0)
    }
}

/// Loads the partial sums `C[i0..i0 + mr, cols]` into `acc` (through `tile`; lanes outside the
/// tile keep stale values, never stored).
#[inline(always)]
fn load_tile<S: Lanes, const R: usize, const C: usize>(
    g: &Gemm,
    c: &[f32],
    i0: usize,
    mr: usize,
    cols: &Cols<C>,
    tile: &mut [[f32; MV_MAX]; NB],
    acc: &mut Acc<S::V, R, C>,
) {
    for (&j, col) in cols.j.iter().zip(tile.iter_mut()).take(cols.n) {
        for (r, v) in col.iter_mut().enumerate().take(mr) {
            *v = c[(i0 + r) * g.c_rs + j];
        }
    }
    for (acc_c, col) in acc.iter_mut().zip(tile.iter()) {
        for (r, v) in acc_c.iter_mut().enumerate() {
            *v = S::load(&col[r * S::L..]);
        }
    }
}

/// Stores `acc` to `C[i0..i0 + mr, cols]`, `epilogue` applied first (the last pass): row by row
/// ([`Lanes::store_rows`]) when the columns are consecutive and the instruction set can, else
/// value by value through `tile`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn store_tile<S: Lanes, const R: usize, const C: usize>(
    g: &Gemm,
    c: &mut [f32],
    i0: usize,
    mr: usize,
    cols: &Cols<C>,
    tile: &mut [[f32; MV_MAX]; NB],
    epilogue: Option<Epilogue>,
    mut acc: Acc<S::V, R, C>,
) {
    if let Some(e) = epilogue {
        e.tile::<S, R, C>(i0, mr, cols, &mut acc);
    }
    let acc = &acc;
    if let Some(j0) = cols.run_start() {
        if S::store_rows::<R, C>(acc, mr, &mut c[i0 * g.c_rs + j0..], g.c_rs) {
            return;
        }
    }
    for (acc_c, col) in acc.iter().zip(tile.iter_mut()) {
        for (r, &v) in acc_c.iter().enumerate() {
            S::store(&mut col[r * S::L..], v);
        }
    }
    for r in 0..mr {
        let crow = &mut c[(i0 + r) * g.c_rs..];
        for (&j, col) in cols.j.iter().zip(tile.iter()).take(cols.n) {
            crow[j] = col[r];
        }
    }
}

/// Packs `A[i0..i0 + mr, k0..k0 + kc]` into `ap` as `kc` rows of `R * L` values (rows past `mr`
/// zero); returns them.
#[inline(always)]
fn pack_a<'a, S: Lanes, const R: usize>(
    g: &Gemm,
    a: &[f32],
    i0: usize,
    mr: usize,
    k0: usize,
    kc: usize,
    ap: &'a mut [MaybeUninit<f32>],
) -> &'a [f32] {
    let a = &a[i0 * g.a_rs..];
    let ap = &mut ap[..kc * R * S::L];
    for (kk, dst) in ap.chunks_exact_mut(R * S::L).enumerate() {
        let col = (k0 + kk) * g.a_cs;
        let (live, pad) = dst.split_at_mut(mr);
        for (r, d) in live.iter_mut().enumerate() {
            d.write(a[r * g.a_rs + col]);
        }
        pad.fill(MaybeUninit::new(0.0));
    }
    // SAFETY: every element of `ap` was written above (each row's `mr` values and its padding).
    unsafe { written(ap) }
}

/// Walks the rows of a convolution's im2col matrix from a given one: for each, the offset of its
/// value from the top-left input value of a position's receptive field, and the tap's displacement
/// (rows, columns) from that value. Incremental: a few additions per row, no multiplication.
#[derive(Clone, Copy)]
struct Taps {
    /// Offsets of the current input channel's plane, kernel row and kernel column.
    plane: usize,
    row: usize,
    col: usize,
    kh: usize,
    kw: usize,
    kernel_h: usize,
    kernel_w: usize,
    /// Offset steps between input channels, kernel rows and kernel columns.
    plane_step: usize,
    row_step: usize,
    col_step: usize,
    dilation_h: usize,
}

impl Taps {
    /// The walk from row `k` (`(ic, kh, kw)` in row-major order).
    #[inline(always)]
    fn at(p: &Conv2d, k: usize) -> Self {
        let ksize = p.kernel_h * p.kernel_w;
        let (ic, r) = (k / ksize, k % ksize);
        let (kh, kw) = (r / p.kernel_w, r % p.kernel_w);
        let (plane_step, row_step, col_step) = (p.in_h * p.in_w, p.dilation_h * p.in_w, p.dilation_w);
        Taps {
            plane: ic * plane_step,
            row: kh * row_step,
            col: kw * col_step,
            kh,
            kw,
            kernel_h: p.kernel_h,
            kernel_w: p.kernel_w,
            plane_step,
            row_step,
            col_step,
            dilation_h: p.dilation_h,
        }
    }

    /// The current row's tap displacement (rows, columns).
    #[inline(always)]
    fn tap(&self) -> (usize, usize) {
        (self.kh * self.dilation_h, self.col)
    }

    /// The current row's offset; moves to the next row.
    #[inline(always)]
    fn next(&mut self) -> usize {
        let off = self.plane + self.row + self.col;
        self.kw += 1;
        self.col += self.col_step;
        if self.kw == self.kernel_w {
            self.kw = 0;
            self.col = 0;
            self.kh += 1;
            self.row += self.row_step;
            if self.kh == self.kernel_h {
                self.kh = 0;
                self.row = 0;
                self.plane += self.plane_step;
            }
        }
        off
    }
}

/// Output positions collected for one tile of [`conv_block`]: their columns of C and the input
/// row and column of their top-left input value (negative in the padding).
struct Positions<const C: usize> {
    j: [usize; C],
    corner: [(isize, isize); C],
    n: usize,
}

impl<const C: usize> Positions<C> {
    #[inline(always)]
    fn new() -> Self {
        Positions { j: [0; C], corner: [(0, 0); C], n: 0 }
    }

    /// The tile's columns (missing ones repeat the last position).
    #[inline(always)]
    fn cols(&self) -> Cols<C> {
        Cols { j: core::array::from_fn(|c| self.j[c.min(self.n - 1)]), n: self.n }
    }

    /// Where the tile's input values are (missing columns repeat the last position).
    #[inline(always)]
    fn input(&self, inside: bool) -> TileInput<C> {
        let corners = core::array::from_fn(|c| self.corner[c.min(self.n - 1)]);
        match inside {
            true => TileInput::Inside(corners),
            false => TileInput::Border(corners),
        }
    }
}

/// Convolution of one (image, group) as an implicit GEMM, without im2col scratch: C (`ocg` rows
/// by `out_h * out_w` positions) = weights (`ocg` by `icg * kernel_h * kernel_w`) times the im2col
/// matrix, whose values are read straight from `xg`. Positions whose receptive field lies inside
/// the input are grouped into tiles (in any order, so a feature map's border never splits them)
/// that read `xg[base + offset]`; the border positions are grouped into tiles of their own, whose
/// columns are gathered, with zeros for the padding, into a stack panel. Weights packed at build
/// time ([`crate::ConvWeights::KMajor`]) are read in place, each tile running over all of `k` with
/// its sums in registers; other weights are packed one `KC`-deep panel at a time. Results are
/// bit-identical to im2col followed by [`gemm`]: same k order, same fused multiply-adds.
///
/// A convolution with padding whose input rows fit ([`band_rows`]) runs instead on bands of
/// output rows, each over a zero-padded copy of the input rows it reads ([`pad_band`]), where
/// every position is inside: on small feature maps most positions touch the padding, and
/// gathering their columns (once per block of output channels) cost more than the products
/// (ResNet-8's 8x8 layer, 64 channels: 153 us with the gathers, 89 us on padded bands).
///
/// On AVX-512, a stride-1 convolution whose output rows are narrower than a row tile and whose
/// positions fill tiles of four vectors (8x8 and 7x7 maps) runs instead on the column tiles over
/// its input staged once per kernel column ([`KernelColumns`]): old against new in one process,
/// p10, ResNet-8's 64-channel 8x8 layer 0.69-0.71, ResNet-18's 128-channel 8x8 layers
/// 0.66-0.73, 256 channels at 8x8 0.34 and at 7x7 0.43-0.47, a 16x8 map 0.69; 12x12 and 6x6
/// maps, whose rows the row tiles take whole, stay on them (1.4-1.6x slower on the column
/// tiles), as do stride-2 layers (their im2col copy, the same tiles: ResNet-8's 32-to-64
/// channel layer to 8x8 1.1-1.3x slower). A strided 1x1 convolution runs on the im2col path
/// at any depth ([`subsamples`]). A layer whose input the stride-phase staging takes
/// ([`Phases`]) runs on it, ahead of the im2col path: KWS's first layer (10x4 taps, one input
/// channel, 5 outputs a row) in 0.86-0.90 of the im2col path's time on AVX-512, old and new code
/// alternating in one process (p10).
#[inline(always)]
pub(super) fn conv_implicit<S: Lanes>(p: &Conv2d, ops: ConvOperands) {
    let ConvOperands { icg, ocg, x: xg, w: wg, bias, y: yg } = ops;
    let kk = icg * p.kernel_h * p.kernel_w;
    let positions = p.out_h * p.out_w;
    let g = conv_gemm(p, ocg, kk, positions);
    let mut band = [MaybeUninit::uninit(); FMA_CONV_BAND];
    let on_cols = conv_cols_fit::<S>(p, &g);
    let phases = Phases::of::<S>(p, icg, kk);
    let im2col = im2col_rows::<S>(p, &g).filter(|_| (!on_cols || subsamples(p)) && phases.is_none());
    if let Some(rows) = im2col {
        for oh0 in (0..p.out_h).step_by(rows) {
            let bo = rows.min(p.out_h - oh0);
            let cols = match subsamples(p) {
                true => subsampled_band::<S>(p, icg, xg, oh0, bo, &mut band),
                false => im2col_band::<S>(p, icg, xg, oh0, bo, &mut band),
            };
            let n = bo * p.out_w;
            let gb = Gemm { n, b_rs: n, b_cs: 1, ..g };
            gemm::<S>(&gb, wg, cols, bias, &mut yg[oh0 * p.out_w..]);
        }
        return;
    }
    let mut panels = Panels::new();
    if let Some(phases) = phases {
        let staged = phases.stage(p, icg, xg, &mut band);
        let mv = 2 * S::L;
        let epilogue = Epilogue::in_row_tiles::<S>(&g, bias);
        for i0 in (0..g.m).step_by(mv) {
            let mr = mv.min(g.m - i0);
            by_rows!(S, mr, phase_block(p, &g, &phases, staged, wg, yg, i0, mr, epilogue, &mut panels));
            if epilogue.is_none() {
                for r in i0..i0 + mr {
                    finish(&mut yg[r * g.c_rs..][..g.n], &g, bias, r, 0);
                }
            }
        }
        return;
    }
    if let Some(staging) = KernelColumns::of::<S>(p, &g) {
        conv_kernel_columns::<S>(p, &g, &staging, xg, wg, bias, yg, &mut band);
        return;
    }
    let Some(rows) = band_rows(p, icg, on_cols) else {
        match on_cols {
            true => conv_cols::<S, 1>(p, &g, xg, wg, bias, yg),
            false => conv_rows::<S>(p, &g, xg, wg, bias, yg, 0, &mut panels),
        }
        return;
    };
    for oh0 in (0..p.out_h).step_by(rows) {
        let q = pad_band::<S>(p, icg, xg, oh0, rows.min(p.out_h - oh0), on_cols, &mut band);
        let gb = Gemm { n: q.conv.out_h * q.conv.out_w, ..g };
        let j0 = oh0 * p.out_w;
        match on_cols {
            true if p.stride_w == 2 => conv_cols::<S, 2>(&q.conv, &gb, q.x, wg, bias, &mut yg[j0..]),
            true => conv_cols::<S, 1>(&q.conv, &gb, q.x, wg, bias, &mut yg[j0..]),
            false => conv_rows::<S>(&q.conv, &gb, q.x, wg, bias, yg, j0, &mut panels),
        }
    }
}

/// Whether [`conv_implicit`] runs `p` (its GEMM `g`) on [`conv_cols`]: on instruction sets with
/// registers to spare (AVX-512), for weights packed k-major, output rows of whole vectors (tiles
/// of two, then one; or rows one vector wide, two rows a tile) read at column stride 1 from
/// adjacent columns, or at column stride 2 from bands staged by column phase ([`pad_band`]),
/// shallow windows too (ahead of the im2col path: no im2col copy). Measured on AVX-512 (Zen 4),
/// against the row tiles: ResNet-8's 16-channel 32x32 layer 59 to 49 us; against the im2col
/// path, its 3-channel first layer 15 to 11 us; rows leaving a masked tile ran slower (MNIST's
/// 24-wide rows 17.5 to 22 us, a 37-wide row 1.6x slower). At column stride 2 (Sapphire Rapids,
/// against the im2col path and the row tiles, old and new code alternating in one process): VWW's
/// first layer (3 to 8 channels, 96x96 to 48x48) 27 to 16 us, MobileNetV2's (to 16 channels) 35
/// to 25, ResNet-8's 16 to 32 channels at 32x32 27 to 22.
#[inline(always)]
fn conv_cols_fit<S: Lanes>(p: &Conv2d, g: &Gemm) -> bool {
    let whole = p.out_w.is_multiple_of(S::L);
    // At stride 2 only where one output row's input, split by column phase, fits a band.
    let staged = |icg| p.stride_w == 1 || band_rows(p, icg, true).is_some();
    let columns = (1..=2).contains(&p.stride_w) && p.dilation_w == 1 && staged(g.k / (p.kernel_h * p.kernel_w));
    S::REGISTERS >= 32 && g.a_rs == 1 && columns && whole
}

/// A convolution without padding (or one band of it over its padded rows, [`pad_band`]) at column
/// stride 1 or 2 on [`gemm`]'s column tiles, by output rows: vectors along the rows' positions,
/// each read from an input row in place (B is the virtual im2col matrix whose row for input
/// channel `ic` and tap `(kh, kw)` starts at `ic * in_h * in_w + kh * dilation_h * in_w + kw`,
/// [`BRows`]), the weights broadcast from their k-major rows, the epilogue in registers, C stored
/// as whole vectors. At column stride 2 (`PHASES == 2`) the input is a band staged by column
/// phase ([`pad_band`]; `in_w` the width of one phase's rows, each channel's two phases one after
/// the other): tap `kw` of output column `ow` is at column `ow + kw / 2` of phase `kw % 2`. Rows
/// one vector wide run two to a tile (their positions are adjacent in C). The same k-ascending
/// chains as the row tiles ([`conv_rows`]), without their transposed stores; on AVX-512 its tiles
/// keep 16 or 24 accumulators, a row's last vector (rows of an odd number of vectors) up to 16.
///
/// On AVX-512, at column stride 1, rows one or two vectors wide run in tiles of four vectors
/// over four or two output rows ([`ColumnRun::all`]: 6 output channels a tile, 4 for 16
/// channels; [`BRows::across`]), the rows left over as above: per depth, four loads of the
/// input and 6 broadcasts for 24 multiply-adds, against two loads and 8 broadcasts for 16.
/// Old against new in one process (p10, Zen 4), in three of four code layouts (16 and 4
/// codegen units, loops aligned to 32 bytes): ResNet-8's first layer 0.89-0.91, its 16-channel
/// 32x32 layers 0.95-0.98, its 32-channel 16x16 layer and ResNet-18's 64-channel 16x16 layers
/// 0.99-1.00; in the fourth (one codegen unit), where KWS's pointwise layer (its tiles' vector
/// offsets the same constants as before) ran 1.05, 1.08 and 1.01.
#[inline(always)]
fn conv_cols<S: Lanes, const PHASES: usize>(p: &Conv2d, g: &Gemm, x: &[f32], w: &[f32], bias: Bias, y: &mut [f32]) {
    let (l, row_in, plane) = (S::L, p.stride_h * p.in_w, p.in_h * p.in_w);
    let stacked = p.out_w == l;
    // Rows one or two vectors wide: tiles of four vectors over four or two output rows.
    let group = match PHASES == 1 && S::REGISTERS >= 32 {
        true if stacked => 4,
        true if p.out_w == 2 * l => 2,
        _ => 0,
    };
    let rows = BRows {
        across: if stacked { 1 } else { 2 },
        next: row_in,
        runs: g.k / p.kernel_w,
        len: p.kernel_w,
        step: 1,
        per_plane: p.kernel_h,
        row: p.dilation_h * p.in_w,
        plane: PHASES * plane,
        phase: if PHASES == 2 { plane } else { 0 },
    };
    let run = ColumnRun { g, a: w, b: x, bias, epilogue: Epilogue::of::<S>(g, bias), rows };
    // Output rows per call, past the groups: one row (tiles of two vectors, then one of one), or
    // two rows one vector wide.
    let step = if stacked { 2 } else { 1 };
    // Tiles of 12 rows, or of 8 for products of a multiple of 8 rows but not of 12.
    let twelve = g.m.is_multiple_of(CONV_COLS_ROWS) || !g.m.is_multiple_of(8);
    let mut oh = 0;
    while oh < p.out_h {
        let (j, b0) = (oh * p.out_w, oh * row_in);
        if group > 0 && oh + group <= p.out_h {
            ColumnRun { b: &x[b0..], ..run }.all::<S>(4 * l, 0, &mut y[j..]);
            oh += group;
            continue;
        }
        // The last of an odd number of one-vector rows: a tile of one vector.
        let (n_main, tail) = match (stacked, oh + step > p.out_h) {
            (_, true) => (0, l),
            (true, false) => (2 * l, 0),
            (false, false) => (p.out_w / (2 * l) * (2 * l), p.out_w % (2 * l)),
        };
        match twelve {
            true => run.columns::<S, CONV_COLS_ROWS, PHASES>(0..g.m, j, n_main, 0, b0, y),
            false => run.columns::<S, 8, PHASES>(0..g.m, j, n_main, 0, b0, y),
        }
        // A last vector of positions: the same tiles, or of 16 rows (16 accumulators) for
        // products of a multiple of 16 rows.
        let (j, b0) = (j + n_main, b0 + n_main);
        if tail > 0 {
            match (g.m.is_multiple_of(16), twelve) {
                (true, _) => run.tiles::<S, 16, 1, false, PHASES>(0..g.m, j, tail, b0, y),
                (false, true) => run.tiles::<S, CONV_COLS_ROWS, 1, false, PHASES>(0..g.m, j, tail, b0, y),
                (false, false) => run.tiles::<S, 8, 1, false, PHASES>(0..g.m, j, tail, b0, y),
            }
        }
        oh += step;
    }
}

/// Rows (output channels) of [`conv_cols`]'s tiles: by two vectors of positions, 24
/// accumulators; products of a multiple of 8 rows but not of this run tiles of 8 (16 output
/// channels: 12 + 4 would compute 8 rows never stored).
const CONV_COLS_ROWS: usize = 12;

/// The deepest convolution (`icg * kernel_h * kernel_w`: first layers of 1 to 3 channels, 3x3)
/// that [`conv_implicit`] runs on AVX-512 as bands of output rows, each an im2col matrix on the
/// stack times the weights on [`gemm`]'s column tiles, where the column tiles take its A
/// ([`gemm`]'s strided A up to [`COLS_MAX_K_STRIDED`]). A shallow window gives the row tiles
/// little arithmetic per store of their transposed tile: MNIST's first layer (9 deep, 32
/// channels) ran at a tenth of the core's peak on them (11.3 us; 6.5 this way), ResNet-8's (27
/// deep) 16.2 us (12). On AVX2, whose 8x8 transposes are cheaper and whose column tiles have no
/// masked last vector, this way was slower (ResNet-8's 15.2 against 19.1 us).
const IM2COL_MAX_K: usize = COLS_MAX_K_STRIDED;

/// Output rows per band of [`conv_implicit`]'s im2col path: as many as the band buffer holds the
/// im2col matrix of (at least a whole row tile of positions per band); `None` on instruction
/// sets without registers to spare (AVX2), or when the convolution is deeper than
/// [`IM2COL_MAX_K`], its weights are not packed k-major, or one band's matrix does not fit.
#[inline(always)]
fn im2col_rows<S: Lanes>(p: &Conv2d, g: &Gemm) -> Option<usize> {
    let rows = (FMA_CONV_BAND / (g.k * p.out_w)).min(p.out_h);
    let applies = S::REGISTERS >= 32 && g.a_rs == 1 && g.k <= IM2COL_MAX_K;
    ((applies || subsamples(p)) && rows > 0 && rows * p.out_w >= NB).then_some(rows)
}

/// Whether `p` is a strided pointwise convolution (1x1, no padding, a stride above 1: ResNet's
/// downsampling shortcuts) that [`conv_implicit`] runs as bands of its subsampled input (the
/// im2col matrix of a 1x1 kernel) times the weights, at any depth and on both instruction sets.
/// This path against the old ones in one process, p10, AVX-512 and AVX2: ResNet-8's 16 to 32
/// channels, 32x32 to 16x16, 0.23-0.24 (the column tiles over bands staged by column phase,
/// which copied every input row and column for the quarter read) and 0.72; its 32 to 64 to 8x8
/// 0.99 and 0.79; ResNet-18's 64 to 128 to 8x8 0.99 and 0.77, its 128 to 256 to 4x4 1.01 on
/// both. (ResNet exports reach this once the planner's subsampling fold has put tract's
/// `Downsample` copies back into the stride.)
#[inline(always)]
fn subsamples(p: &Conv2d) -> bool {
    let one = p.kernel_h == 1 && p.kernel_w == 1 && p.pad_top == 0 && p.pad_left == 0;
    one && (p.stride_h > 1 || p.stride_w > 1)
}

/// The im2col matrix of output rows `oh0..oh0 + bo` in `buf`: row `(ic, kh, kw)` holds, for each
/// of the band's positions, the input value under that tap (zero in the padding).
#[inline(always)]
fn im2col_band<'a, S: Lanes>(
    p: &Conv2d,
    icg: usize,
    xg: &[f32],
    oh0: usize,
    bo: usize,
    buf: &'a mut [MaybeUninit<f32>],
) -> &'a [f32] {
    let n = bo * p.out_w;
    let taps = p.kernel_h * p.kernel_w;
    let band = zeroed(buf, icg * taps * n);
    for (t, row) in band.chunks_exact_mut(n).enumerate() {
        let (ic, kh, kw) = (t / taps, t % taps / p.kernel_w, t % p.kernel_w);
        let plane = &xg[ic * p.in_h * p.in_w..][..p.in_h * p.in_w];
        // The output columns whose tap lies inside the input's width.
        let left = (kw * p.dilation_w) as isize - p.pad_left as isize;
        let (lo, hi) = valid_range(p.out_w, p.stride_w, left, p.in_w);
        for (r, out) in row.chunks_exact_mut(p.out_w).enumerate() {
            let ih = ((oh0 + r) * p.stride_h + kh * p.dilation_h) as isize - p.pad_top as isize;
            if lo >= hi || !(0..p.in_h as isize).contains(&ih) {
                continue;
            }
            let src = &plane[ih as usize * p.in_w..][..p.in_w];
            let iw0 = ((lo * p.stride_w) as isize + left) as usize;
            let (dst, span) = (&mut out[lo..hi], (hi - lo - 1) * p.stride_w + 1);
            copy_every::<S>(dst, &src[iw0..][..span], p.stride_w);
        }
    }
    band
}

/// [`im2col_band`] of a strided 1x1 convolution without padding ([`subsamples`]): the one tap
/// of every position lies inside the input, so each row of the band is every `stride_w`-th
/// value of one input row, copied without the general path's per-row range checks, which cost
/// more than the copy on rows this short. Old against new (this path and [`copy_even`], against
/// the general path and a scalar copy) in one process, p10, Zen 4, in three of four code
/// layouts: ResNet-8's shortcuts (rows of 16 and 8 values) 0.87-0.97 and 0.84-0.94; in the
/// fourth, where an unchanged layer ran 1.05, 0.99 and 1.04.
#[inline(always)]
fn subsampled_band<'a, S: Lanes>(
    p: &Conv2d,
    icg: usize,
    xg: &[f32],
    oh0: usize,
    bo: usize,
    buf: &'a mut [MaybeUninit<f32>],
) -> &'a [f32] {
    let (n, span) = (bo * p.out_w, (p.out_w - 1) * p.stride_w + 1);
    let band = zeroed(buf, icg * n);
    for (ic, rows) in band.chunks_exact_mut(n).enumerate() {
        let first = (ic * p.in_h + oh0 * p.stride_h) * p.in_w;
        let sources = xg[first..].chunks(p.stride_h * p.in_w);
        for (out, src) in rows.chunks_exact_mut(p.out_w).zip(sources) {
            copy_every::<S>(out, &src[..span], p.stride_w);
        }
    }
    band
}

/// `dst[i] = src[i * step]` for all `i < dst.len()`, `src` holding `(dst.len() - 1) * step + 1`
/// values: an im2col band's row of one tap ([`copy_row`] at step 1, [`copy_even`] at step 2).
#[inline(always)]
fn copy_every<S: Lanes>(dst: &mut [f32], src: &[f32], step: usize) {
    match step {
        1 => copy_row::<S>(dst, src),
        2 => copy_even::<S>(dst, src),
        _ => dst.iter_mut().zip(src.iter().step_by(step)).for_each(|(o, &x)| *o = x),
    }
}

/// `dst.copy_from_slice(&src[..dst.len()])` in whole vectors and a masked last one on AVX-512
/// (the im2col rows of a band are 5 to 100 values: a `memcpy` call each cost more than the
/// copy), the values after the whole vectors one by one elsewhere.
#[inline(always)]
pub(super) fn copy_row<S: Lanes>(dst: &mut [f32], src: &[f32]) {
    let (n, l) = (dst.len(), S::L);
    let src = &src[..n];
    let whole = n / l * l;
    for j in (0..whole).step_by(l) {
        S::store(&mut dst[j..], S::load(&src[j..]));
    }
    match S::REGISTERS >= 32 && whole < n {
        true => {
            let rest = &src[whole..];
            // SAFETY: `rest` holds `n - whole` floats.
            let v = unsafe { S::load_first_ptr(rest.as_ptr(), n - whole) };
            S::store_first(&mut dst[whole..], v, n - whole);
        }
        false => dst[whole..].copy_from_slice(&src[whole..]),
    }
}

/// A convolution's input staged by stride phase for [`conv_implicit`], when its output rows are
/// narrower than a row tile (KWS's first layer: 5 outputs wide at stride 2, 10x4 taps), so that
/// no position would run on row tiles: every position instead gathered its own input values, and
/// its tiles stored through 8x8 transposes of scattered columns. Staged, padding included, as
/// `[channel][row phase][column phase][row][column]` with rows `wp` wide, every tap of an output
/// row is one run of consecutive values: tap `(ic, kh, kw)` of output `(oh, ow)` is at
/// [`Phases::tap`] `+ oh * wp + ow`. So a tile's positions are read like a row tile's, one
/// window start per column, the same k-ascending chains; its positions run on across output rows.
/// Tiles of one output row each (6 columns for KWS's 5 positions) had computed a sixth more than
/// they stored: KWS's first layer went from 10.6-10.8 to 9.5-9.8 us (old and new code
/// alternating in one process, p10, Zen 4).
struct Phases {
    /// Values per staged row: the output row's width plus the taps' reach within a phase.
    wp: usize,
    /// Values per phase plane.
    plane: usize,
    /// The largest tap offset.
    reach: usize,
    /// Staged values, zeroed first: the phase planes, then room for the last tile's reads.
    len: usize,
}

impl Phases {
    /// The staging of `p`'s input, when it applies: strides 1 or 2, no dilation, depth at most
    /// [`KC`] (one pass), rows at most half a wide tile wide, and the whole input fitting the
    /// band buffer.
    #[inline(always)]
    fn of<S: Lanes>(p: &Conv2d, icg: usize, kk: usize) -> Option<Self> {
        let (sh, sw) = (p.stride_h, p.stride_w);
        let plain = (1..=2).contains(&sh) && (1..=2).contains(&sw) && p.dilation_h == 1 && p.dilation_w == 1;
        let wp = p.out_w + (p.kernel_w - 1) / sw;
        if !plain || kk > KC || wp > NB / 2 {
            return None;
        }
        let plane = (p.out_h + (p.kernel_h - 1) / sh) * wp;
        let phases = Phases { wp, plane, reach: 0, len: 0 };
        let last_channel = (0..p.kernel_h).flat_map(|kh| (0..p.kernel_w).map(move |kw| (kh, kw)));
        let reach = last_channel.map(|(kh, kw)| phases.tap(p, icg - 1, kh, kw)).max().unwrap_or(0);
        let len = (icg * sh * sw * plane).max(reach + (p.out_h - 1) * wp + NB);
        (len <= FMA_CONV_BAND).then_some(Phases { reach, len, ..phases })
    }

    /// Where tap `(ic, kh, kw)` of output `(0, 0)` is staged: its kernel row's offset plus its
    /// column's.
    #[inline(always)]
    fn tap(&self, p: &Conv2d, ic: usize, kh: usize, kw: usize) -> usize {
        self.tap_row(p, ic, kh) + self.tap_column(p, kw)
    }

    /// Where tap `(ic, kh, 0)` of output `(0, 0)` is staged.
    #[inline(always)]
    fn tap_row(&self, p: &Conv2d, ic: usize, kh: usize) -> usize {
        let (sh, sw) = (p.stride_h, p.stride_w);
        (ic * sh + kh % sh) * sw * self.plane + kh / sh * self.wp
    }

    /// How far tap column `kw` is staged from column 0: its phase plane, and its column within
    /// the phase (`kw % sw` and `kw / sw` for the column stride of 1 or 2 that [`Phases::of`]
    /// admits, without a division: the innermost loop of [`phase_block`]).
    #[inline(always)]
    fn tap_column(&self, p: &Conv2d, kw: usize) -> usize {
        let sw = p.stride_w;
        (kw & (sw - 1)) * self.plane + (kw >> (sw - 1))
    }

    /// Copies the input into `buf`, zeros for the padding and the rest.
    #[inline(always)]
    fn stage<'a>(&self, p: &Conv2d, icg: usize, xg: &[f32], buf: &'a mut [MaybeUninit<f32>]) -> &'a [f32] {
        let band = zeroed(buf, self.len);
        let (sh, sw) = (p.stride_h, p.stride_w);
        let planes = band[..icg * sh * sw * self.plane].chunks_exact_mut(self.plane);
        for (i, plane) in planes.enumerate() {
            let (ic, rp, cp) = (i / (sh * sw), i / sw % sh, i % sw);
            for (r, row) in plane.chunks_exact_mut(self.wp).enumerate() {
                let ih = (r * sh + rp) as isize - p.pad_top as isize;
                if !(0..p.in_h as isize).contains(&ih) {
                    continue;
                }
                let src = &xg[(ic * p.in_h + ih as usize) * p.in_w..][..p.in_w];
                for (c, v) in row.iter_mut().enumerate() {
                    let iw = (c * sw + cp) as isize - p.pad_left as isize;
                    if let Some(&x) = usize::try_from(iw).ok().and_then(|iw| src.get(iw)) {
                        *v = x;
                    }
                }
            }
        }
        band
    }
}

/// Output channels `i0..i0 + mr` of a convolution staged by [`Phases`]: tiles of `R * L` channels
/// by `C` consecutive positions, across output rows.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn phase_block<S: Lanes, const R: usize, const C: usize>(
    p: &Conv2d,
    g: &Gemm,
    phases: &Phases,
    staged: &[f32],
    wg: &[f32],
    yg: &mut [f32],
    i0: usize,
    mr: usize,
    epilogue: Option<Epilogue>,
    panels: &mut Panels,
) {
    let Panels { a: apack, tile, .. } = panels;
    // At most `KC` deep: one pass over all of `k`.
    let blk = Passes::new::<S, R>(g, wg, i0).block::<S, R>(g, wg, i0, mr, 0, epilogue, apack);
    let panel = blk.panel(0, g.k);
    let a = panel.checked::<S, R>();
    // Every depth's tap offset, computed once: inside the tiles, the offsets' arithmetic (a
    // division per kernel row) cost as much as the multiply-adds (KWS's first layer on AVX2:
    // 0.69-0.82 of the time with them computed here).
    let mut taps = [0u32; KC];
    let mut depths = taps.iter_mut();
    for ic in 0..g.k / (p.kernel_h * p.kernel_w) {
        for kh in 0..p.kernel_h {
            let row = phases.tap_row(p, ic, kh);
            for (kw, tap) in (0..p.kernel_w).zip(depths.by_ref()) {
                // Below `FMA_CONV_BAND` (`Phases::of`).
                *tap = (row + phases.tap_column(p, kw)) as u32;
            }
        }
    }
    // Position `q` of the output, row `q / out_w` and column `q % out_w`, reads its window from
    // `(q / out_w) * wp + q % out_w` on, which never decreases with `q` (`wp >= out_w`): the
    // last position's window is the furthest, inside `staged` for every tap (`Phases::of`).
    let window = |q: usize| q / p.out_w * phases.wp + q % p.out_w;
    assert!(window(g.n - 1) + phases.reach < staged.len());
    for j in (0..g.n).step_by(C) {
        // A tile's positions run on across output rows (a row's width need not divide `C`); a
        // last tile's columns past `n` repeat the last position, computed and never stored.
        let mut windows = [0; C];
        for (c, w) in windows.iter_mut().enumerate() {
            *w = window((j + c).min(g.n - 1));
        }
        let mut acc: Acc<S::V, R, C> = [[S::zero(); R]; C];
        for (d, &off) in taps[..g.k].iter().enumerate() {
            let off = off as usize;
            // SAFETY: `d < k`: the panel holds `R` vectors at each depth's offset.
            let av = unsafe { vectors_at::<S, R>(a, d * panel.stride) };
            for (acc_c, &w) in acc.iter_mut().zip(&windows) {
                // SAFETY: `off <= phases.reach` and `w <= window(n - 1)`: inside `staged` (the
                // assertion above).
                let xv = unsafe { *staged.get_unchecked(w + off) };
                fma_column::<S, R>(acc_c, &av, S::splat(xv));
            }
        }
        store_tile::<S, R, C>(g, yg, i0, mr, &Cols::run(j, C.min(g.n - j)), tile, blk.last, acc);
    }
}

/// All output channels of [`conv_implicit`] at the positions of `p` (C's columns `j0..j0 + g.n`),
/// in blocks of two vectors of channels, each block's epilogue right after it (its rows still in
/// cache).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn conv_rows<S: Lanes>(
    p: &Conv2d,
    g: &Gemm,
    xg: &[f32],
    wg: &[f32],
    bias: Bias,
    yg: &mut [f32],
    j0: usize,
    panels: &mut Panels,
) {
    let mv = 2 * S::L;
    let epilogue = Epilogue::in_row_tiles::<S>(g, bias);
    let tiles = row_tiles::<S>(p);
    let mut i0 = 0;
    while i0 < g.m {
        let mr = mv.min(g.m - i0);
        by_rows!(S, mr, tiles, conv_block(p, g, xg, wg, &mut yg[j0..], i0, mr, epilogue, panels));
        if epilogue.is_none() {
            for r in i0..i0 + mr {
                finish(&mut yg[r * g.c_rs + j0..][..g.n], g, bias, r, j0);
            }
        }
        i0 += mv;
    }
}

/// Output rows per band of [`conv_implicit`]'s padded path: as many as the input rows they read,
/// zero-padded to the width the positions span (split by column phase for [`conv_cols`] at column
/// stride 2, `on_cols`), fit in [`FMA_CONV_BAND`] floats. `None` when no position touches the
/// padding and the input is not split (it is read in place) or one output row's input does not
/// fit.
#[inline(always)]
fn band_rows(p: &Conv2d, icg: usize, on_cols: bool) -> Option<usize> {
    let (reach_h, reach_w) = (p.rows_read(p.out_h), p.cols_read());
    let padded = p.pad_top > 0 || p.pad_left > 0 || reach_h > p.pad_top + p.in_h || reach_w > p.pad_left + p.in_w;
    let phases = split_phases(p, on_cols);
    let budget = if phases > 1 { SPLIT_BAND } else { FMA_CONV_BAND };
    let rows = p.rows_fitting(budget / (icg * phases * reach_w.div_ceil(phases))).min(p.out_h);
    ((padded || phases > 1) && rows > 0).then_some(rows)
}

/// Floats of a band split by column phase: staged, then read by the tiles, while in the L1 cache
/// (VWW's first layer: 24 us on bands of the whole [`FMA_CONV_BAND`], 17 on these).
const SPLIT_BAND: usize = 4096;

/// The column phases [`pad_band`] splits a band into: the column stride for [`conv_cols`]
/// (`on_cols`), else 1.
#[inline(always)]
fn split_phases(p: &Conv2d, on_cols: bool) -> usize {
    if on_cols {
        p.stride_w
    } else {
        1
    }
}

/// One band of [`conv_implicit`]'s padded path: the convolution of its output rows over its
/// padded input rows (no padding left), and those rows.
struct PaddedBand<'a> {
    conv: Conv2d,
    x: &'a [f32],
}

/// Copies the input rows that output rows `oh0..oh0 + rows` of `p` read, every input channel of
/// the group, into `buf` with zeros for the padding (`[channel][row][column]`, as wide as the
/// positions span; for [`conv_cols`] at column stride 2, `on_cols`, `[channel][column
/// phase][row][column]`, band column `c` at column `c / 2` of phase `c % 2`), and returns the
/// band's convolution over them (`in_w` the width of a phase's rows).
#[inline(always)]
fn pad_band<'a, S: Lanes>(
    p: &Conv2d,
    icg: usize,
    xg: &[f32],
    oh0: usize,
    rows: usize,
    on_cols: bool,
    buf: &'a mut [MaybeUninit<f32>],
) -> PaddedBand<'a> {
    let phases = split_phases(p, on_cols);
    let (height, width) = (p.rows_read(rows), p.cols_read());
    let wq = width.div_ceil(phases);
    // The band's columns `left..left + n` hold input columns `0..n`.
    let left = p.pad_left.min(width);
    let n = p.in_w.min(width - left);
    let top = (oh0 * p.stride_h) as isize - p.pad_top as isize;
    let band = match phases {
        1 => padded_rows(p, &xg[..icg * p.in_h * p.in_w], top, (height, wq), left..left + n, buf),
        _ => {
            let band = zeroed(buf, icg * phases * height * wq);
            for (ic, channel) in band.chunks_exact_mut(phases * height * wq).enumerate() {
                let (first, second) = channel.split_at_mut(height * wq);
                for r in 0..height {
                    let ih = top + r as isize;
                    if !(0..p.in_h as isize).contains(&ih) {
                        continue;
                    }
                    let src = &xg[(ic * p.in_h + ih as usize) * p.in_w..][..n];
                    // Input column `i` is band column `left + i`: the even ones in phase `left %
                    // 2` from column `left / 2`, the odd ones in the other from `(left + 1) / 2`.
                    let (even, odd) =
                        if left % 2 == 0 { (&mut *first, &mut *second) } else { (&mut *second, &mut *first) };
                    let even = &mut even[r * wq + left / 2..][..n.div_ceil(2)];
                    split_row::<S>(src, even, &mut odd[r * wq + left.div_ceil(2)..][..n / 2]);
                }
            }
            band
        }
    };
    let conv = Conv2d { in_h: height, in_w: wq, out_h: rows, pad_top: 0, pad_left: 0, ..*p };
    PaddedBand { conv, x: band }
}

/// [`pad_band`]'s rows of one column phase: for each channel of `xg` (its planes `in_h` by `in_w`),
/// `height` rows `wq` wide, band row `r` holding input row `top + r` in columns `cols` (its
/// first `cols.len()` values) and zeros elsewhere, a row outside the input all zeros. Each value
/// is written once (zeroing the whole band first, then copying the rows into it, cost ResNet-8's
/// 16-channel 32x32 layers 5-6% of their time: old against new 0.94-0.95).
#[inline(always)]
fn padded_rows<'a>(
    p: &Conv2d,
    xg: &[f32],
    top: isize,
    (height, wq): (usize, usize),
    cols: core::ops::Range<usize>,
    buf: &'a mut [MaybeUninit<f32>],
) -> &'a [f32] {
    let channels = xg.len() / (p.in_h * p.in_w);
    let band = &mut buf[..channels * height * wq];
    for (i, row) in band.chunks_exact_mut(wq).enumerate() {
        let (ic, ih) = (i / height, top + (i % height) as isize);
        let (before, rest) = row.split_at_mut(cols.start);
        let (inside, after) = rest.split_at_mut(cols.len());
        match (0..p.in_h as isize).contains(&ih) {
            true => {
                let src = &xg[(ic * p.in_h + ih as usize) * p.in_w..][..cols.len()];
                for (d, &x) in inside.iter_mut().zip(src) {
                    *d = MaybeUninit::new(x);
                }
            }
            false => inside.fill(MaybeUninit::new(0.0)),
        }
        before.fill(MaybeUninit::new(0.0));
        after.fill(MaybeUninit::new(0.0));
    }
    // SAFETY: every value of `band` was just written (each row's three parts).
    unsafe { written(band) }
}

/// `even[m] = src[2 * m]` and `odd[m] = src[2 * m + 1]` for all of `src` (`even` holds
/// `src.len().div_ceil(2)` values, `odd` `src.len() / 2`): whole vectors of both from `2 * L`
/// values at a time ([`Lanes::deinterleave`]; LLVM's code for the loop one value at a time
/// shuffled half vectors and read each row twice), the rest one by one.
#[inline(always)]
fn split_row<S: Lanes>(src: &[f32], even: &mut [f32], odd: &mut [f32]) {
    let l = S::L;
    let whole = src.len() / (2 * l) * l;
    for m in (0..whole).step_by(l) {
        let (e, o) = S::deinterleave(S::load(&src[2 * m..]), S::load(&src[2 * m + l..]));
        S::store(&mut even[m..], e);
        S::store(&mut odd[m..], o);
    }
    for (i, &x) in src.iter().enumerate().skip(2 * whole) {
        match i % 2 {
            0 => even[i / 2] = x,
            _ => odd[i / 2] = x,
        }
    }
}

/// Output channels `i0..i0 + mr` of [`conv_implicit`], in tiles of `R * L` channels by `C`
/// positions.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn conv_block<S: Lanes, const R: usize, const C: usize>(
    p: &Conv2d,
    g: &Gemm,
    xg: &[f32],
    wg: &[f32],
    yg: &mut [f32],
    i0: usize,
    mr: usize,
    epilogue: Option<Epilogue>,
    panels: &mut Panels,
) {
    let (span_h, span_w) = ((p.kernel_h - 1) * p.dilation_h, (p.kernel_w - 1) * p.dilation_w);
    // Columns whose receptive field lies inside the input's width; in rows inside its height,
    // runs of `C` of them (stride 1 or 2) are row tiles.
    let (lo, hi) = valid_range(p.out_w, p.stride_w, -(p.pad_left as isize), p.in_w.saturating_sub(span_w));
    let Panels { a: apack, b: bpack, tile } = panels;
    let passes = Passes::new::<S, R>(g, wg, i0);
    for k0 in passes.starts(g) {
        let blk = passes.block::<S, R>(g, wg, i0, mr, k0, epilogue, apack);
        // Where the row tiles end: after the last whole run of `C`, or, for tiles of one
        // vector of rows when more than half a tile is left and no tile adds to sums in C, at
        // `hi`, the last tile overlapping the one before it (its shared columns computed again,
        // the same way, and stored again) rather than leaving those columns to the tiles of
        // scattered positions, whose 12 column pointers spill (ResNet-8's 32-wide rows in tiles
        // of 12: 10% faster). Tiles of two vectors by 6 keep theirs in registers, and overlapped
        // they ran slower (ResNet-18's 16-wide rows: 7%).
        let rest = (hi - lo) % C;
        let row_tiles_end = match (p.stride_w, blk.accumulate) {
            (1 | 2, false) if R == 1 && hi - lo >= C && 2 * rest > C => hi,
            (1 | 2, _) => hi - rest,
            _ => lo,
        };
        let mut tiles = ConvTiles { p, g, xg, yg: &mut *yg, blk: &blk, bpack: &mut *bpack, tile: &mut *tile };
        let mut inside = Positions::<C>::new();
        let mut border = Positions::<C>::new();
        for oh in 0..p.out_h {
            let h = (oh * p.stride_h) as isize - p.pad_top as isize;
            let rows_inside = h >= 0 && h as usize + span_h < p.in_h;
            let mut ow = 0;
            while ow < p.out_w {
                if rows_inside && ow == lo && lo < row_tiles_end {
                    for ow in (lo..row_tiles_end).step_by(C) {
                        let ow = ow.min(row_tiles_end - C);
                        let base = (oh * p.stride_h - p.pad_top) * p.in_w + ow * p.stride_w - p.pad_left;
                        tiles.run::<S, R, C>(&Cols::run(oh * p.out_w + ow, C), TileInput::Row(base));
                    }
                    ow = row_tiles_end;
                    continue;
                }
                let w = (ow * p.stride_w) as isize - p.pad_left as isize;
                let is_inside = rows_inside && (lo..hi).contains(&ow);
                let set = if is_inside { &mut inside } else { &mut border };
                set.j[set.n] = oh * p.out_w + ow;
                set.corner[set.n] = (h, w);
                set.n += 1;
                if set.n == C {
                    tiles.run::<S, R, C>(&set.cols(), set.input(is_inside));
                    set.n = 0;
                }
                ow += 1;
            }
        }
        for (set, is_inside) in [(&inside, true), (&border, false)] {
            if set.n > 0 {
                tiles.run::<S, R, C>(&set.cols(), set.input(is_inside));
            }
        }
    }
}

/// `acc += A * B` over the panel (depths `k0..k0 + ap.kc`), where
/// `B[k][c] = x[base + koff + c * STRIDE]` with `koff` the offset of row `k` of the im2col matrix.
#[inline(always)]
fn micro_row<S: Lanes, const R: usize, const C: usize, const STRIDE: usize>(
    ap: APanel,
    p: &Conv2d,
    k0: usize,
    x: &[f32],
    base: usize,
    acc: &mut Acc<S::V, R, C>,
) {
    // One bounds check for the whole panel instead of one per value.
    let koff_max = koff_max(p);
    let span = &x[base..][..=koff_max + (C - 1) * STRIDE];
    // SAFETY (the reads below): every im2col offset is at most `koff_max` and
    // `c * STRIDE <= (C - 1) * STRIDE`, so the index is below `span.len()`.
    micro_im2col::<S, R, C>(ap, p, k0, |c, ko| unsafe { *span.get_unchecked(ko + c * STRIDE) }, acc);
}

/// `acc += A * B` over the panel (depths `k0..k0 + ap.kc`) of a convolution's im2col matrix,
/// where `value(c, koff)` is column `c`'s input value at im2col offset `koff` (at most
/// [`koff_max`]): by kernel rows ([`micro_tap_rows`]) where the panel allows, else one depth at a
/// time along the [`Taps`] walk.
#[inline(always)]
fn micro_im2col<S: Lanes, const R: usize, const C: usize>(
    ap: APanel,
    p: &Conv2d,
    k0: usize,
    value: impl Fn(usize, usize) -> f32,
    acc: &mut Acc<S::V, R, C>,
) {
    if micro_tap_rows::<S, R, C>(ap, p, k0, &value, acc) {
        return;
    }
    let mut taps = Taps::at(p, k0);
    for kk in 0..ap.kc {
        let av = ap.at::<S, R>(kk);
        let ko = taps.next();
        debug_assert!(ko <= koff_max(p));
        for (c, acc_c) in acc.iter_mut().enumerate() {
            fma_column::<S, R>(acc_c, &av, S::splat(value(c, ko)));
        }
    }
}

/// `acc += A * B` over a panel of whole kernel rows (`k0` and `kc` multiples of `kernel_w`)
/// of a kernel whose columns are adjacent (`dilation_w == 1`), where `value(c, koff)` is column
/// `c`'s input value at im2col offset `koff`; returns false (and does nothing) for other panels.
/// One kernel row at a time: the offset of a tap is the row's plus its column, a single addition
/// per depth, and A is read without a bounds check per depth. The same depths in the same order
/// as the [`Taps`] walk, whose few branches per depth made a 3x3 layer run about 30 instructions
/// per 12 multiply-adds. (The taps of a row are a loop, not unrolled: unrolled, the compiler
/// shares the broadcasts of the input values that neighbouring taps and columns both read, keeps
/// them in registers, and spills the accumulators.)
#[inline(always)]
fn micro_tap_rows<S: Lanes, const R: usize, const C: usize>(
    ap: APanel,
    p: &Conv2d,
    k0: usize,
    value: impl Fn(usize, usize) -> f32,
    acc: &mut Acc<S::V, R, C>,
) -> bool {
    let kw_n = p.kernel_w;
    if p.dilation_w != 1 || !k0.is_multiple_of(kw_n) || !ap.kc.is_multiple_of(kw_n) {
        return false;
    }
    let (plane_step, row_step) = (p.in_h * p.in_w, p.dilation_h * p.in_w);
    let first = k0 / kw_n;
    let (ic, mut kh) = (first / p.kernel_h, first % p.kernel_h);
    let mut plane = ic * plane_step;
    let mut row = plane + kh * row_step;
    // One bounds check for all of the panel's A.
    let a = ap.checked::<S, R>();
    let mut at = 0;
    for _ in 0..ap.kc / kw_n {
        for kw in 0..kw_n {
            // SAFETY: `at` is the offset of depth `kk < kc` (one stride per depth), so the `R`
            // vectors at `at` lie inside `a`.
            let av = unsafe { vectors_at::<S, R>(a, at) };
            for (c, acc_c) in acc.iter_mut().enumerate() {
                fma_column::<S, R>(acc_c, &av, S::splat(value(c, row + kw)));
            }
            at += ap.stride;
        }
        kh += 1;
        row += row_step;
        if kh == p.kernel_h {
            kh = 0;
            plane += plane_step;
            row = plane;
        }
    }
    true
}

/// The largest offset of any im2col row from a position's top-left input value: the last input
/// channel's bottom-right tap.
#[inline(always)]
fn koff_max(p: &Conv2d) -> usize {
    let span = (p.kernel_h - 1) * p.dilation_h * p.in_w + (p.kernel_w - 1) * p.dilation_w;
    (p.in_channels / p.groups - 1) * p.in_h * p.in_w + span
}

/// Where the input values of one tile of [`conv_block`] are, per position (column): the input row
/// and column of the top-left value of its receptive field (negative in the padding).
enum TileInput<const C: usize> {
    /// Consecutive positions of one output row, receptive fields inside the input, stride 1 or 2:
    /// the offset of the first one's top-left value (the others follow every `stride_w`), so the
    /// micro-kernel keeps one pointer instead of one per column.
    Row(usize),
    /// Positions whose receptive fields lie inside the input, anywhere: read in place.
    Inside([(isize, isize); C]),
    /// Positions touching the padding: gathered into the B panel first, `KC` rows at a time.
    Border([(isize, isize); C]),
}

/// What the tiles of one pass of [`conv_block`] share: the convolution, its GEMM, input and
/// output, the pass, and the stack panels.
struct ConvTiles<'a> {
    p: &'a Conv2d,
    g: &'a Gemm,
    xg: &'a [f32],
    yg: &'a mut [f32],
    blk: &'a Block<'a>,
    bpack: &'a mut [MaybeUninit<f32>; KC * NB],
    tile: &'a mut [[f32; MV_MAX]; NB],
}

impl ConvTiles<'_> {
    /// One tile: C's columns `cols`, whose input values are at `input`.
    #[inline(always)]
    fn run<S: Lanes, const R: usize, const C: usize>(&mut self, cols: &Cols<C>, input: TileInput<C>) {
        let (p, g, xg, blk) = (self.p, self.g, self.xg, self.blk);
        let mut acc: Acc<S::V, R, C> = [[S::zero(); R]; C];
        if blk.accumulate {
            load_tile::<S, R, C>(g, self.yg, blk.i0, blk.mr, cols, self.tile, &mut acc);
        }
        let panel = blk.panel(blk.k0, blk.kc);
        match input {
            TileInput::Row(base) => match p.stride_w {
                1 => micro_row::<S, R, C, 1>(panel, p, blk.k0, xg, base, &mut acc),
                _ => micro_row::<S, R, C, 2>(panel, p, blk.k0, xg, base, &mut acc),
            },
            TileInput::Inside(corner) => {
                let base: [usize; C] = core::array::from_fn(|c| corner[c].0 as usize * p.in_w + corner[c].1 as usize);
                micro_indirect::<S, R, C>(panel, p, blk.k0, xg, &base, &mut acc);
            }
            TileInput::Border(corner) => {
                let (in_h, in_w) = (p.in_h as isize, p.in_w as isize);
                let mut taps = Taps::at(p, blk.k0);
                for (kb, kc) in blk.b_blocks() {
                    let packed = &mut self.bpack[..kc * C];
                    for dst in packed.chunks_exact_mut(C) {
                        let (th, tw) = taps.tap();
                        let off = taps.next();
                        for (d, &(h, w)) in dst.iter_mut().zip(&corner) {
                            let (ih, iw) = (h + th as isize, w + tw as isize);
                            let ok = (0..in_h).contains(&ih) && (0..in_w).contains(&iw);
                            d.write(if ok { xg[(off as isize + h * in_w + w) as usize] } else { 0.0 });
                        }
                    }
                    // SAFETY: every element of `packed` was written above (`corner` has `C`
                    // entries, one per value of a row).
                    micro::<S, R, C>(blk.panel(kb, kc), unsafe { written(packed) }, C, &mut acc);
                }
            }
        }
        store_tile::<S, R, C>(g, self.yg, blk.i0, blk.mr, cols, self.tile, blk.last, acc);
    }
}

/// The GEMM a convolution of one (image, group) is: `ocg` rows, `positions` columns, `kk` deep
/// (its epilogue is the convolution's).
#[inline(always)]
fn conv_gemm(p: &Conv2d, ocg: usize, kk: usize, positions: usize) -> Gemm {
    let (_, a_rs, a_cs) = p.weights.gemm_operand(0, ocg, kk);
    Gemm {
        m: ocg,
        n: positions,
        k: kk,
        a_rs,
        a_cs,
        b_rs: 0,
        b_cs: 0,
        c_rs: positions,
        alpha: 1.0,
        act: p.act,
        add_to_c: false,
        epilogue: true,
    }
}
