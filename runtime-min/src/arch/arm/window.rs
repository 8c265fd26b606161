//! Windows widened to 16-bit pairs for the convolution's micro-kernel ([`super::kernels`]): the
//! taps of one output position in the weights' `(ky, kx, c)` order, each group of four taps
//! `x0..x3` stored as the two words `(x0, x2)`, `(x1, x3)`, the input zero point where the window
//! leaves the input, zeros after the last tap. `lanes` windows share a buffer group by group:
//! group `g` of window `lane` at words `2 (g lanes + lane)` and the next (so the kernel reads the
//! windows' groups from one pointer).

use super::dsp::pack;
use crate::quant::{Conv2d, QuantElem};

/// Writes taps one at a time (runs whose length is not a multiple of four).
struct Packer<'a> {
    words: &'a mut [u32],
    lanes: usize,
    lane: usize,
    taps: usize,
    group: [i32; 4],
}

impl Packer<'_> {
    #[inline(always)]
    fn push(&mut self, v: i32) {
        self.group[self.taps % 4] = v;
        self.taps += 1;
        if self.taps.is_multiple_of(4) {
            self.flush();
        }
    }

    #[inline(always)]
    fn flush(&mut self) {
        let [x0, x1, x2, x3] = self.group;
        let at = 2 * ((self.taps - 1) / 4 * self.lanes + self.lane);
        self.words[at..at + 2].copy_from_slice(&[pack(x0, x2), pack(x1, x3)]);
    }

    /// Pads the last group with zeros.
    fn finish(mut self) {
        if !self.taps.is_multiple_of(4) {
            self.group[self.taps % 4..].fill(0);
            self.flush();
        }
    }
}

/// The window of output position `(b, oy, ox)` of convolution `p` (one group), into lane `lane`
/// of `words` (`ceil(p.taps() / 4)` groups of `lanes` windows).
#[inline(always)]
pub(super) fn gather<T: QuantElem>(
    p: &Conv2d,
    x: &[T],
    (b, oy, ox): (usize, usize, usize),
    words: &mut [u32],
    (lanes, lane): (usize, usize),
) {
    let (cin, xs, pad) = (p.in_channels, p.x_strides, p.x_zero_point);
    let base = |iy: usize, ix: usize| b * xs.n + iy * xs.h + ix * xs.w;
    if cin.is_multiple_of(4) {
        // Every run of channels is whole groups: four taps, two words at a time.
        let mut out = words.chunks_exact_mut(2 * lanes).map(|g| &mut g[2 * lane..2 * lane + 2]);
        for ky in 0..p.kernel_h {
            let iy = p.input_row(oy, ky);
            for kx in 0..p.kernel_w {
                let at = iy.zip(p.input_col(ox, kx)).map(|(iy, ix)| base(iy, ix));
                for c in (0..cin).step_by(4) {
                    let v = |j: usize| at.map_or(pad, |a| x[a + (c + j) * xs.c].to_i32());
                    let pair = out.next().expect("a window's words");
                    pair.copy_from_slice(&[pack(v(0), v(2)), pack(v(1), v(3))]);
                }
            }
        }
    } else {
        let mut packer = Packer { words, lanes, lane, taps: 0, group: [0; 4] };
        for ky in 0..p.kernel_h {
            let iy = p.input_row(oy, ky);
            for kx in 0..p.kernel_w {
                match iy.zip(p.input_col(ox, kx)) {
                    Some((iy, ix)) => (0..cin).for_each(|c| packer.push(x[base(iy, ix) + c * xs.c].to_i32())),
                    None => (0..cin).for_each(|_| packer.push(pad)),
                }
            }
        }
        packer.finish();
    }
}
