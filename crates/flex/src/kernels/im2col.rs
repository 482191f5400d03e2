//! The im2col matrix of a convolution (see [`super::conv`]) and its transpose's scatter-add
//! (col2im), per image, in two layouts:
//!
//! * **channel-major** (`C < 4`): `cols: [C kh kw, oh ow]`, rows `(c, p, q)`, gathered from the
//!   NCHW image in stretches of output rows (long copies when there are few channels);
//! * **pixel-major** (`C >= 4`): `cols: [oh ow, kh kw C]`, columns `(p, q, c)`, gathered from the
//!   image transposed to `[H, W, C]`, where the `kw C` inputs of one kernel row are contiguous:
//!   `kh` copies of `kw C` values per output pixel instead of `C kh kw` short stretches.
//!
//! The weight is viewed in the matching column order ([`Geometry::weight_matrix`]).

use std::cell::RefCell;

/// Shapes of one convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    pub batch: usize,
    pub channels: usize,
    pub height: usize,
    pub width: usize,
    pub out_channels: usize,
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub padding: [usize; 2],
}

impl Geometry {
    pub(crate) fn out_size(&self, d: usize) -> usize {
        let size = [self.height, self.width][d];
        (size + 2 * self.padding[d] - self.kernel[d]) / self.stride[d] + 1
    }

    pub(crate) fn out_hw(&self) -> [usize; 2] {
        [self.out_size(0), self.out_size(1)]
    }

    /// Rows of the im2col matrix, `C kh kw`.
    pub(crate) fn patch(&self) -> usize {
        self.channels * self.kernel[0] * self.kernel[1]
    }

    /// Output pixels per image, `oh ow`.
    pub(crate) fn pixels(&self) -> usize {
        let [oh, ow] = self.out_hw();
        oh * ow
    }

    pub(crate) fn image(&self) -> usize {
        self.channels * self.height * self.width
    }

    /// Output indices `j` along one axis whose input position `s j + tap - pad` lies in
    /// `0..size`: the half-open range `lo..hi`.
    pub(crate) fn valid(&self, d: usize, tap: usize) -> (usize, usize) {
        let (size, s, pad, out) = (
            [self.height, self.width][d],
            self.stride[d],
            self.padding[d],
            self.out_size(d),
        );
        let lo = if tap >= pad {
            0
        } else {
            (pad - tap).div_ceil(s)
        };
        // s j + tap - pad <= size - 1  <=>  j <= (size - 1 + pad - tap) / s
        let hi = if size + pad > tap {
            ((size - 1 + pad - tap) / s + 1).min(out)
        } else {
            0
        };
        (lo.min(hi), hi)
    }
}

/// Walks the im2col matrix row by row (`(c, p, q)`, then output row `i`) in stretches:
/// `f(cols_offset, Some(x_offset), n)` for `n` consecutive output pixels whose inputs lie in
/// the image (starting at `x_offset`, advancing by the stride), and, if `padding`,
/// `f(cols_offset, None, n)` for `n` pixels in the zero padding.
fn for_each_stretch(g: &Geometry, padding: bool, mut f: impl FnMut(usize, Option<usize>, usize)) {
    let [oh, ow] = g.out_hw();
    let [kh, kw] = g.kernel;
    let rows: Vec<(usize, usize)> = (0..kh).map(|p| g.valid(0, p)).collect();
    let cols: Vec<(usize, usize)> = (0..kw).map(|q| g.valid(1, q)).collect();
    let mut start = 0;
    for c in 0..g.channels {
        for (p, &(ilo, ihi)) in rows.iter().enumerate() {
            for (q, &(jlo, jhi)) in cols.iter().enumerate() {
                for i in 0..oh {
                    if i < ilo || i >= ihi || jlo >= jhi {
                        if padding {
                            f(start, None, ow);
                        }
                    } else {
                        let y = i * g.stride[0] + p - g.padding[0];
                        let x = jlo * g.stride[1] + q - g.padding[1];
                        if padding && jlo > 0 {
                            f(start, None, jlo);
                        }
                        f(
                            start + jlo,
                            Some((c * g.height + y) * g.width + x),
                            jhi - jlo,
                        );
                        if padding && jhi < ow {
                            f(start + jhi, None, ow - jhi);
                        }
                    }
                    start += ow;
                }
            }
        }
    }
}

/// The im2col matrix of one image (`x`: `[C, H, W]`) into `cols` (`[C kh kw, oh ow]`, rows
/// `(c, p, q)`); the
/// zeros of the padding are written only if `padding` (they never change between images).
fn im2col_nchw(g: &Geometry, x: &[f32], cols: &mut [f32], padding: bool) {
    let s = g.stride[1];
    for_each_stretch(g, padding, |dst, src, n| {
        let out = &mut cols[dst..dst + n];
        match src {
            None => out.fill(0.0),
            Some(src) if s == 1 => out.copy_from_slice(&x[src..src + n]),
            Some(src) => {
                for (v, x) in out.iter_mut().zip(x[src..].iter().step_by(s)) {
                    *v = *x;
                }
            }
        }
    });
}

/// Adds each entry of `dcols` (`[C kh kw, oh ow]`) to the pixel of `dx` (`[C, H, W]`) it was
/// gathered from.
fn col2im_nchw(g: &Geometry, dcols: &[f32], dx: &mut [f32]) {
    let s = g.stride[1];
    for_each_stretch(g, false, |src, dst, n| {
        let Some(dst) = dst else { return };
        let from = &dcols[src..src + n];
        if s == 1 {
            for (d, v) in dx[dst..dst + n].iter_mut().zip(from) {
                *d += v;
            }
        } else {
            for (d, v) in dx[dst..].iter_mut().step_by(s).zip(from) {
                *d += v;
            }
        }
    });
}

impl Geometry {
    /// Whether the im2col matrix is pixel-major (`[oh ow, kh kw C]` from a channels-last image).
    pub(crate) fn pixel_major(&self) -> bool {
        self.channels >= 4
    }

    /// The weight `[O, C, kh, kw]` as the `[O, K]` matrix whose columns follow the im2col's:
    /// unchanged for channel-major, `(p, q, c)` order for pixel-major.
    pub(crate) fn weight_matrix(&self, w: &[f32]) -> Vec<f32> {
        if !self.pixel_major() {
            return w.to_vec();
        }
        let (c, [kh, kw]) = (self.channels, self.kernel);
        let taps = kh * kw;
        let mut out = vec![0.0f32; w.len()];
        for (o_row, w_row) in out.chunks_mut(c * taps).zip(w.chunks(c * taps)) {
            for ci in 0..c {
                for t in 0..taps {
                    o_row[t * c + ci] = w_row[ci * taps + t];
                }
            }
        }
        out
    }

    /// The inverse of [`weight_matrix`](Self::weight_matrix): an `[O, K]` gradient back to the
    /// `[O, C, kh, kw]` layout.
    pub(crate) fn weight_from_matrix(&self, m: Vec<f32>) -> Vec<f32> {
        if !self.pixel_major() {
            return m;
        }
        let (c, [kh, kw]) = (self.channels, self.kernel);
        let taps = kh * kw;
        let mut out = vec![0.0f32; m.len()];
        for (o_row, m_row) in out.chunks_mut(c * taps).zip(m.chunks(c * taps)) {
            for ci in 0..c {
                for t in 0..taps {
                    o_row[ci * taps + t] = m_row[t * c + ci];
                }
            }
        }
        out
    }
}

/// `dst[j, i] = src[i, j]` for a row-major `rows x cols` `src`.
fn transpose(src: &[f32], rows: usize, cols: usize, dst: &mut [f32]) {
    for (i, row) in src.chunks(cols).take(rows).enumerate() {
        for (j, &v) in row.iter().enumerate() {
            dst[j * rows + i] = v;
        }
    }
}

/// For each output pixel `l = (i, j)` and kernel row `p`, calls `f(cols_offset, Some((x_offset,
/// qlo, qhi)))` where kernel columns `qlo..qhi` fall inside the image (their `(qhi - qlo) C`
/// inputs start at `x_offset` of the `[H, W, C]` image and land at `cols_offset + qlo C`), or
/// `f(cols_offset, None)` when row `p` falls outside it.
fn for_each_patch_row(g: &Geometry, mut f: impl FnMut(usize, Option<(usize, usize, usize)>)) {
    let [oh, ow] = g.out_hw();
    let [kh, kw] = g.kernel;
    let c = g.channels;
    let k = g.patch();
    for i in 0..oh {
        for j in 0..ow {
            let base = (i * ow + j) * k;
            // Input column of kernel column q: j s + q - pad.
            let x0 = (j * g.stride[1]) as isize - g.padding[1] as isize;
            let qlo = (-x0).max(0) as usize;
            let qhi = ((g.width as isize - x0).max(0) as usize).min(kw);
            for p in 0..kh {
                let y = (i * g.stride[0] + p) as isize - g.padding[0] as isize;
                let at = base + p * kw * c;
                if y < 0 || y >= g.height as isize || qlo >= qhi {
                    f(at, None);
                } else {
                    let x = (y as usize * g.width) as isize + x0 + qlo as isize;
                    f(at, Some((x as usize * c, qlo, qhi)));
                }
            }
        }
    }
}

/// Per-thread scratch (the im2col matrix, its gradient, the image and its gradient
/// channels-last), kept between calls so that each step reuses memory instead of faulting in
/// fresh pages.
#[derive(Default)]
pub(crate) struct Scratch {
    pub cols: Vec<f32>,
    pub dcols: Vec<f32>,
    xt: Vec<f32>,
    dxt: Vec<f32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

impl Scratch {
    /// Runs `f` with this thread's scratch sized for `g` (contents unspecified).
    pub(crate) fn with<T>(g: &Geometry, f: impl FnOnce(&mut Scratch) -> T) -> T {
        SCRATCH.with(|s| {
            let mut guard = s.borrow_mut();
            let s = &mut *guard;
            let (kl, image) = (g.patch() * g.pixels(), g.image());
            for (v, n) in [
                (&mut s.cols, kl),
                (&mut s.dcols, kl),
                (&mut s.xt, image),
                (&mut s.dxt, image),
            ] {
                v.resize(n.max(v.len()), 0.0);
            }
            f(s)
        })
    }

    /// The im2col matrix of image `x` (`[C, H, W]`) into `self.cols` (its first `K L`
    /// elements); padding zeros are written only if `padding` (they never change between
    /// images of one geometry).
    pub(crate) fn im2col(&mut self, g: &Geometry, x: &[f32], padding: bool) {
        let kl = g.patch() * g.pixels();
        let cols = &mut self.cols[..kl];
        if !g.pixel_major() {
            return im2col_nchw(g, x, cols, padding);
        }
        let (c, kw) = (g.channels, g.kernel[1]);
        let xt = &mut self.xt[..g.image()];
        transpose(x, c, g.height * g.width, xt);
        for_each_patch_row(g, |at, src| {
            let row = &mut cols[at..at + kw * c];
            match src {
                None => {
                    if padding {
                        row.fill(0.0);
                    }
                }
                Some((x, qlo, qhi)) => {
                    row[qlo * c..qhi * c].copy_from_slice(&xt[x..x + (qhi - qlo) * c]);
                    if padding {
                        row[..qlo * c].fill(0.0);
                        row[qhi * c..].fill(0.0);
                    }
                }
            }
        });
    }

    /// Adds each entry of `self.dcols` (same layout as the im2col matrix) to the pixel of `dx`
    /// (`[C, H, W]`, accumulated into) it was gathered from.
    pub(crate) fn col2im(&mut self, g: &Geometry, dx: &mut [f32]) {
        let kl = g.patch() * g.pixels();
        let dcols = &self.dcols[..kl];
        if !g.pixel_major() {
            return col2im_nchw(g, dcols, dx);
        }
        let c = g.channels;
        let hw = g.height * g.width;
        let dxt = &mut self.dxt[..g.image()];
        dxt.fill(0.0);
        for_each_patch_row(g, |at, src| {
            if let Some((x, qlo, qhi)) = src {
                let row = &dcols[at + qlo * c..at + qhi * c];
                for (d, v) in dxt[x..x + (qhi - qlo) * c].iter_mut().zip(row) {
                    *d += v;
                }
            }
        });
        for (ch, out) in dx.chunks_mut(hw).enumerate() {
            for (pixel, d) in out.iter_mut().enumerate() {
                *d += dxt[pixel * c + ch];
            }
        }
    }
}
