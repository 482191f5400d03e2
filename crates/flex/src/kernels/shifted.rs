//! Stride-1 convolutions without an im2col matrix: sums over shifted views of the zero-padded
//! images ("implicit GEMM"), by the register-blocked AVX-512 kernels of [`super::direct`]
//! where the CPU has them and by one matrix product per kernel tap otherwise.
//!
//! A group of `n` images `x: [n, C, H, W]` is laid out as `xp: [C, n, R, P]`: each channel one
//! contiguous run over the group's images, each image a frame of `R = H + G_h` rows of pitch
//! `P = W + G_w`, its pixel `(i, j)` at frame row `pad_h + i`, column `pad_w + j`, zeros
//! elsewhere. The `G_w = max(pad_w, kw - 1 - pad_w)` zero columns of a row serve as the right
//! padding of that row and the left padding of the next, and the `G_h` zero rows of a frame as
//! the bottom padding of one image and the top padding of the next (the "frame" layout: with
//! `3x3` kernels and padding 1 an `8x8` image takes `9x9` points where separately padded images
//! take `10x10`). The output is computed on a grid of the same pitch: output pixel `(b, i, j)`
//! sits at `r = b R P + i P + j`, and grid points outside the output (`j >= ow`, `i >= oh`) are
//! scratch that the result drops. With stride 1, tap `(p, q)` of output `r` reads
//! `xp[c, r + p P + q]`: the zero-padded input's pixel `(i + p - pad_h, j + q - pad_w)`, a zero
//! of its own row or frame where that pixel is outside the image, or of the next row or frame
//! where the reach passes the pitch (`kw - 1 - pad_w <= G_w`, `pad_w <= G_w`, likewise for
//! rows). So its im2col block is the plain strided view `X_pq[c, r] = xp[c n R P + p P + q + r]`,
//! one element apart along `r`, which the product reads in place (no copy, and no repacking by
//! the `gemm` crate, whose kernels want exactly this unit stride along the output):
//!
//! * forward: `Y' = sum_(p,q) W_pq X_pq` (`W_pq = w[:, :, p, q]: [O, C]`), then
//!   `y[b, o, i, j] = Y'[o, r]`;
//! * weight gradient: `dw[:, :, p, q] = sum_r dY'[:, r] X_pq[:, r]^T`, with `dY'` the output
//!   gradient on the grid (zero at the dropped points);
//! * input gradient: a stride-1 convolution of `dy` (padded by `kh - 1 - pad_h`,
//!   `kw - 1 - pad_w`) with the flipped, transposed weight `w'[c, o, p, q] = w[o, c, kh - 1 - p,
//!   kw - 1 - q]`: the forward above on [`Geometry::transposed`].
//!
//! The same products and sums as the im2col path ([`super::im2col`]) in another order; gone
//! are the im2col copy of every image (twice per step: forward and weight gradient), the
//! col2im scatter and the `gemm` crate's transposing repack of the im2col matrix.

use std::cell::RefCell;
use std::mem::MaybeUninit;

use super::direct;
use super::gemm::{View, matmul};
use super::im2col::Geometry;

/// The grid's length is rounded up to this many points (one AVX-512 register of `f32`), so
/// that the `gemm` crate takes every block of it in place.
const ALIGN: usize = 16;

impl Geometry {
    /// Whether the convolution runs on shifted views: stride 1, padding smaller than the kernel
    /// (so the input gradient is a convolution with non-negative padding), enough channels
    /// (`C >= 4`) for products with `C` terms to be worth it, and a frame at most twice the
    /// output (`R P <= 2 oh ow`: its dropped points cost the products work; the MNIST CNN's
    /// valid 5x5 convolution of 12x12 maps, `16 x 16 / 8 x 8 = 4x`, is faster by im2col).
    pub(crate) fn shifted(&self) -> bool {
        let [rows, pitch] = self.frame();
        self.pixel_major()
            && self.stride == [1, 1]
            && self.padding[0] < self.kernel[0]
            && self.padding[1] < self.kernel[1]
            && rows * pitch <= 2 * self.pixels()
    }

    /// The convolution whose forward pass is this one's input gradient: `dy` in, `dx` out.
    pub(crate) fn transposed(&self) -> Geometry {
        let [oh, ow] = self.out_hw();
        let [kh, kw] = self.kernel;
        Geometry {
            batch: self.batch,
            channels: self.out_channels,
            height: oh,
            width: ow,
            out_channels: self.channels,
            kernel: self.kernel,
            stride: [1, 1],
            padding: [kh - 1 - self.padding[0], kw - 1 - self.padding[1]],
        }
    }

    /// The weight of [`transposed`](Self::transposed), `w'[c, o, p, q] = w[o, c, kh - 1 - p,
    /// kw - 1 - q]`, in the product's `[O, kh kw, C]` layout ([`direct::weight_layout`] of `w'`).
    pub(crate) fn flipped_weight(&self, w: &[f32]) -> Vec<f32> {
        let (c, o, taps) = (
            self.channels,
            self.out_channels,
            self.kernel[0] * self.kernel[1],
        );
        let mut out = vec![0.0f32; w.len()];
        for oc in 0..o {
            for t in 0..taps {
                for ci in 0..c {
                    // Flipping both kernel axes reverses the tap order.
                    out[(oc * taps + t) * c + ci] = w[(oc * c + ci) * taps + taps - 1 - t];
                }
            }
        }
        out
    }

    /// The kernels' views of `n` padded images `xp` ([`pad`]) at the tap offsets `taps`.
    fn views<'a>(&self, n: usize, xp: &'a [f32], taps: &'a [usize]) -> direct::Views<'a> {
        let [rows, pitch] = self.frame();
        direct::Views {
            xp,
            channel_stride: n * rows * pitch,
            channels: self.channels,
            taps,
            grid: self.grid(n),
        }
    }

    /// The tap offsets `p P + q` in the frame layout, `(p, q)` row-major.
    fn tap_offsets(&self) -> Vec<usize> {
        let ([kh, kw], [_, pitch]) = (self.kernel, self.frame());
        (0..kh)
            .flat_map(|p| (0..kw).map(move |q| p * pitch + q))
            .collect()
    }

    /// `[R, P]`: one image's frame, `R = H + G_h` rows of pitch `P = W + G_w` with `G =
    /// max(pad, k - 1 - pad)` along each axis (see the module's documentation).
    fn frame(&self) -> [usize; 2] {
        let gap = |d: usize| self.padding[d].max(self.kernel[d] - 1 - self.padding[d]);
        [self.height + gap(0), self.width + gap(1)]
    }

    /// Elements of one frame, `R P`.
    fn plane(&self) -> usize {
        let [rows, pitch] = self.frame();
        rows * pitch
    }

    /// Points of the output grid of `n` images: up to the last output pixel, rounded up to
    /// [`ALIGN`].
    fn grid(&self, n: usize) -> usize {
        let ([oh, ow], pitch) = (self.out_hw(), self.frame()[1]);
        ((n - 1) * self.plane() + (oh - 1) * pitch + ow).next_multiple_of(ALIGN)
    }

    /// Zeros after the last channel's frames: the views of the last channel read up to the
    /// largest tap offset past the grid (and so do, with other channels' frames behind them,
    /// the views of every other channel).
    fn tail(&self, n: usize) -> usize {
        let ([kh, kw], pitch) = (self.kernel, self.frame()[1]);
        let reach = (kh - 1) * pitch + kw - 1 + self.grid(n);
        reach.saturating_sub(n * self.plane())
    }

    /// Elements of the padded layout of `n` images: their frames and the [`tail`](Self::tail).
    fn padded_len(&self, n: usize) -> usize {
        self.channels * n * self.plane() + self.tail(n)
    }
}

/// Per-thread buffers, kept between calls so that each step reuses memory.
#[derive(Default)]
struct Buffers {
    /// Padded images `[C, n, R, P]` and their tail of zeros.
    xp: Vec<f32>,
    /// A product on the grid, `[O, grid]`.
    grid: Vec<f32>,
    /// The output gradient on the grid: `[O, grid]` for the direct kernel, `[grid, O]` for
    /// the matrix products.
    dy_grid: Vec<f32>,
}

thread_local! {
    static BUFFERS: RefCell<Buffers> = RefCell::new(Buffers::default());
}

/// `n` elements of `v`, grown if needed (contents unspecified), from its first element on a
/// 64-byte boundary (a cache line: vectors of 16 that start on one are read in one access).
fn grown(v: &mut Vec<f32>, n: usize) -> &mut [f32] {
    if v.len() < n + ALIGN {
        v.resize(n + ALIGN, 0.0);
    }
    let skip = v.as_ptr().align_offset(64).min(ALIGN);
    &mut v[skip..skip + n]
}

/// Writes the rows (`width` long) of `src` into `dst`, a plane of pitch `pitch`, from row
/// `top` and column `left` on, and zeros into every other element of `dst` (one pass of
/// writes; rows past `dst`'s end are cut).
fn place(dst: &mut [f32], src: &[f32], width: usize, pitch: usize, [top, left]: [usize; 2]) {
    let (head, mut rest) = dst.split_at_mut((top * pitch + left).min(dst.len()));
    head.fill(0.0);
    for row in src.chunks(width) {
        let n = row.len().min(rest.len());
        rest[..n].copy_from_slice(&row[..n]);
        let gap = (pitch - width).min(rest.len() - n);
        rest[n..n + gap].fill(0.0);
        rest = &mut rest[n + gap..];
    }
    rest.fill(0.0);
}

/// `x: [n, C, H, W]` into the frame layout `xp: [C, n, R, P]` (zeros around every image),
/// and zeros into the tail after it.
fn pad(g: &Geometry, n: usize, x: &[f32], xp: &mut [f32]) {
    let ([_, pitch], c, plane) = (g.frame(), g.channels, g.plane());
    let pixels = g.height * g.width;
    let (frames, tail) = xp.split_at_mut(c * n * plane);
    for (b, image) in x.chunks(c * pixels).take(n).enumerate() {
        for (ch, src) in image.chunks(pixels).enumerate() {
            let dst = &mut frames[(ch * n + b) * plane..][..plane];
            place(dst, src, g.width, pitch, g.padding);
        }
    }
    tail.fill(0.0);
}

/// The view `X_pq: [C, grid]` of the padded images.
fn tap<'a>(g: &Geometry, n: usize, xp: &'a [f32], p: usize, q: usize) -> View<'a> {
    let (pitch, m) = (g.frame()[1], g.grid(n));
    View {
        data: &xp[p * pitch + q..],
        rows: g.channels,
        cols: m,
        row_stride: n * g.plane(),
        col_stride: 1,
    }
}

/// Forward of a group of `n` images: `y: [n, O, oh, ow]` of `x: [n, C, H, W]`, `weight` the
/// weight in the product's `[C, kh kw, O]` layout ([`direct::weight_layout`]).
pub(crate) fn forward(
    g: &Geometry,
    n: usize,
    x: &[f32],
    weight: &[f32],
    y: &mut [MaybeUninit<f32>],
) {
    forward_with(g, n, x, weight, y, true)
}

/// [`forward`], by the register-blocked kernel if `direct` and the CPU has AVX-512F, else by
/// tap-by-tap matrix products.
/// Every element of `y` (`n` images) is written.
fn forward_with(
    g: &Geometry,
    n: usize,
    x: &[f32],
    weight: &[f32],
    y: &mut [MaybeUninit<f32>],
    direct: bool,
) {
    let ([_, pitch], plane, [oh, ow]) = (g.frame(), g.plane(), g.out_hw());
    let (o, m) = (g.out_channels, g.grid(n));
    assert_eq!(y.len(), n * o * oh * ow, "output of {n} images");
    BUFFERS.with(|buffers| {
        let buffers = &mut *buffers.borrow_mut();
        let xp = grown(&mut buffers.xp, g.padded_len(n));
        pad(g, n, x, xp);
        let taps = g.tap_offsets();
        if direct && direct::available() {
            let crop = direct::Crop {
                images: n,
                plane,
                pitch,
                out_hw: [oh, ow],
            };
            direct::product(&g.views(n, xp, &taps), weight, o, &crop, y);
            return;
        }
        // Tap by tap, `Y' += W_pq X_pq` over the weight's `[C, taps, O]` layout, then cropped.
        let grid = grown(&mut buffers.grid, o * m);
        let kw = g.kernel[1];
        for t in 0..taps.len() {
            let w_pq = View {
                data: &weight[t * o..],
                rows: o,
                cols: g.channels,
                row_stride: 1,
                col_stride: taps.len() * o,
            };
            matmul(grid, w_pq, tap(g, n, xp, t / kw, t % kw), t > 0);
        }
        for (b, y) in y.chunks_mut(o * oh * ow).take(n).enumerate() {
            for (oc, y) in y.chunks_mut(oh * ow).enumerate() {
                let src = &grid[oc * m + b * plane..];
                for (i, y) in y.chunks_mut(ow).enumerate() {
                    y.write_copy_of_slice(&src[i * pitch..][..ow]);
                }
            }
        }
    })
}

/// The weight gradient of a group of `n` images, tap by tap: `dw: [kh kw, C, O]` (overwritten),
/// `dw[(p, q), c, o] = sum_r X_pq[c, r] dY'[o, r]`.
pub(crate) fn weight_grad(g: &Geometry, n: usize, x: &[f32], dy: &[f32], dw: &mut [f32]) {
    weight_grad_with(g, n, x, dy, dw, true)
}

/// [`weight_grad`], by the AVX-512 kernel if `direct` and the CPU has it, else by one matrix
/// product per tap.
fn weight_grad_with(g: &Geometry, n: usize, x: &[f32], dy: &[f32], dw: &mut [f32], direct: bool) {
    let ([_, pitch], plane) = (g.frame(), g.plane());
    let ([oh, ow], [kh, kw]) = (g.out_hw(), g.kernel);
    let (c, o, m) = (g.channels, g.out_channels, g.grid(n));
    BUFFERS.with(|buffers| {
        let buffers = &mut *buffers.borrow_mut();
        let xp = grown(&mut buffers.xp, g.padded_len(n));
        pad(g, n, x, xp);
        let dy_grid = grown(&mut buffers.dy_grid, m * o);
        // The output gradient on the grid: rows `[O, grid]` for the kernel, `[grid, O]` for
        // the matrix products (whose kernels want unit stride along `O` there).
        let kernel = direct && direct::available();
        let planes = dy.chunks(o * oh * ow).take(n);
        if kernel {
            for (oc, row) in dy_grid.chunks_mut(m).enumerate() {
                let (images, rest) = row.split_at_mut(m.min(n * plane));
                for (dst, dy) in images.chunks_mut(plane).zip(planes.clone()) {
                    place(dst, &dy[oc * oh * ow..][..oh * ow], ow, pitch, [0, 0]);
                }
                rest.fill(0.0);
            }
        } else {
            dy_grid.fill(0.0);
            for (b, dy) in planes.enumerate() {
                for (oc, dy) in dy.chunks(oh * ow).enumerate() {
                    for (i, dy) in dy.chunks(ow).enumerate() {
                        for (j, &v) in dy.iter().enumerate() {
                            dy_grid[(b * plane + i * pitch + j) * o + oc] = v;
                        }
                    }
                }
            }
        }
        if kernel {
            let taps = g.tap_offsets();
            direct::weight_grad(&g.views(n, xp, &taps), dy_grid, o, dw);
            return;
        }
        let dy_view = View::rows(dy_grid, m, o);
        for (t, dw) in dw.chunks_mut(c * o).take(kh * kw).enumerate() {
            matmul(dw, tap(g, n, xp, t / kw, t % kw), dy_view, false);
        }
    })
}

/// `[kh kw, C, O]` tap-major weight gradients (as [`weight_grad`] gives them) to `[O, C, kh,
/// kw]`.
pub(crate) fn weight_from_taps(g: &Geometry, taps: &[f32]) -> Vec<f32> {
    let (c, o, k) = (g.channels, g.out_channels, g.kernel[0] * g.kernel[1]);
    let mut out = vec![0.0f32; taps.len()];
    for (t, block) in taps.chunks(c * o).enumerate() {
        for (ci, row) in block.chunks(o).enumerate() {
            for (oc, &v) in row.iter().enumerate() {
                out[(oc * c + ci) * k + t] = v;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::uninit::written;

    /// Both ways of the forward product and the weight gradient (the AVX-512 kernels, where the
    /// CPU has them, and the tap-by-tap matrix products every CPU can fall back to) against the
    /// direct sums, exactly: small integers make every product and partial sum exact in `f32`,
    /// whatever the order.
    #[test]
    fn both_ways_match_the_direct_sums_exactly() {
        for (n, c, h, w, o, kernel, padding) in [
            (3, 5, 6, 7, 11, [3, 3], [1, 1]),
            (2, 4, 5, 4, 8, [3, 2], [2, 0]),
            (1, 6, 3, 3, 17, [1, 1], [0, 0]),
            // A grid of more than one weight-gradient chunk (862 points).
            (2, 4, 20, 20, 8, [3, 3], [1, 1]),
            // Frames whose gaps are set by the kernel's reach (`kh - 1 - pad_h = 3`) on one
            // axis and by the padding (`pad_w = 3`) on the other, and a valid convolution.
            (3, 4, 6, 5, 9, [5, 5], [1, 3]),
            (2, 5, 7, 6, 16, [3, 3], [0, 0]),
        ] {
            let g = Geometry {
                batch: n,
                channels: c,
                height: h,
                width: w,
                out_channels: o,
                kernel,
                stride: [1, 1],
                padding,
            };
            let [oh, ow] = g.out_hw();
            let [kh, kw] = kernel;
            let x: Vec<f32> = (0..n * c * h * w).map(|i| (i % 7) as f32 - 3.0).collect();
            let wt: Vec<f32> = (0..o * c * kh * kw).map(|i| (i % 5) as f32 - 2.0).collect();
            let mut want = vec![0.0f32; n * o * oh * ow];
            for b in 0..n {
                for oc in 0..o {
                    for i in 0..oh {
                        for j in 0..ow {
                            let mut sum = 0.0;
                            for ci in 0..c {
                                for p in 0..kh {
                                    for q in 0..kw {
                                        let (r, s) = (i + p, j + q);
                                        let (Some(r), Some(s)) =
                                            (r.checked_sub(padding[0]), s.checked_sub(padding[1]))
                                        else {
                                            continue;
                                        };
                                        if r < h && s < w {
                                            sum += x[((b * c + ci) * h + r) * w + s]
                                                * wt[((oc * c + ci) * kh + p) * kw + q];
                                        }
                                    }
                                }
                            }
                            want[((b * o + oc) * oh + i) * ow + j] = sum;
                        }
                    }
                }
            }
            // The weight gradient for an output gradient `dy`, tap-major `[taps, C, O]`.
            let dy: Vec<f32> = (0..want.len()).map(|i| (i % 3) as f32 - 1.0).collect();
            let mut want_dw = vec![0.0f32; wt.len()];
            for b in 0..n {
                for oc in 0..o {
                    for i in 0..oh {
                        for j in 0..ow {
                            let d = dy[((b * o + oc) * oh + i) * ow + j];
                            for ci in 0..c {
                                for p in 0..kh {
                                    for q in 0..kw {
                                        let (Some(r), Some(s)) = (
                                            (i + p).checked_sub(padding[0]),
                                            (j + q).checked_sub(padding[1]),
                                        ) else {
                                            continue;
                                        };
                                        if r < h && s < w {
                                            want_dw[((p * kw + q) * c + ci) * o + oc] +=
                                                d * x[((b * c + ci) * h + r) * w + s];
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            let layout = direct::weight_layout(&wt, o, c);
            for use_direct in [true, false] {
                let (y, ()) = unsafe {
                    written(want.len(), |y| {
                        forward_with(&g, n, &x, &layout, y, use_direct)
                    })
                };
                assert_eq!(y, want, "{g:?}, direct kernel {use_direct}");
                let mut dw = vec![f32::NAN; wt.len()];
                weight_grad_with(&g, n, &x, &dy, &mut dw, use_direct);
                assert_eq!(
                    dw, want_dw,
                    "{g:?} weight gradient, direct kernel {use_direct}"
                );
            }
        }
    }
}
