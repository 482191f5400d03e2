//! 2-D convolution (groups 1, dilation 1, symmetric zero padding, any stride) on burn-flex's
//! autodiff backend, forward and backward as per-image matrix products over the im2col matrix.
//!
//! For an image `x: [C, H, W]` and a weight `w: [O, C, kh, kw]`, the im2col matrix
//! `cols: [C kh kw, L]` (`L = oh ow` output pixels) has
//! `cols[(c, p, q), (i, j)] = x[c, s_h i + p - pad_h, s_w j + q - pad_w]` (zero outside the
//! image), and with `W = w` viewed as `[O, C kh kw]`:
//!
//! * forward: `y = W cols` (`[O, L]`, the output image `[O, oh, ow]`);
//! * weight gradient: `dW = sum_images dy cols^T`;
//! * input gradient: `dcols = W^T dy`, scattered back (col2im: each entry of `dcols` added to
//!   the pixel it was gathered from).
//!
//! (With many channels the im2col matrix is stored transposed, see [`super::im2col`].)
//!
//! Stride-1 convolutions with 4 or more input channels (all but two of ResNet20's) skip the
//! im2col matrix: the same sums run over shifted views of the zero-padded images
//! ([`super::shifted`]), by a register-blocked AVX-512 kernel where the CPU has one
//! ([`super::direct`]).
//!
//! burn 0.22's default backward, which flex uses, computes the weight gradient as a convolution
//! of the batch-transposed input with the output gradient as its kernel and the input gradient
//! as a transposed convolution; both are several times slower and keep one core of two busy.
//! Here images are split over rayon's pool in fixed groups, so the sums (and hence the results)
//! do not depend on the number of threads.

use std::mem::MaybeUninit;

use burn::backend::Flex;
use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use rayon::prelude::*;

use super::gemm::{View, matmul};
use super::im2col::{Geometry, Scratch};
use super::uninit::{written, zeroed};
use super::{FlexAd, f32_slice, from_f32};
use super::{direct, shifted};

/// Images per parallel task: fixed, so that the order of the weight-gradient sums is too.
const IMAGES_PER_TASK: usize = 4;
/// Weight-gradient elements per parallel task of the sum over the tasks' partial gradients.
const SUM_STRETCH: usize = 4096;
/// The im2col matrix in `scratch.cols` as the `[K, L]` factor of `y = W cols`.
fn cols_view<'a>(g: &Geometry, cols: &'a [f32]) -> View<'a> {
    let (k, l) = (g.patch(), g.pixels());
    if g.pixel_major() {
        View::rows(&cols[..k * l], l, k).t()
    } else {
        View::rows(&cols[..k * l], k, l)
    }
}

/// Forward: `y[b] = W cols(x[b])` for every image, in parallel over groups of images.
pub(crate) fn forward(g: &Geometry, x: &[f32], w: &[f32]) -> Vec<f32> {
    let (k, l, o) = (g.patch(), g.pixels(), g.out_channels);
    let (len, chunk) = (g.batch * o * l, IMAGES_PER_TASK * o * l);
    let xs = x.par_chunks(IMAGES_PER_TASK * g.image());
    if g.shifted() {
        let wl = direct::weight_layout(w, o, g.channels);
        // SAFETY: `shifted::forward` writes every element of its images' outputs.
        return unsafe {
            written(len, |y| {
                y.par_chunks_mut(chunk)
                    .zip(xs)
                    .for_each(|(y, x)| shifted::forward(g, x.len() / g.image(), x, &wl, y))
            })
            .0
        };
    }
    let mut y = vec![0.0f32; len];
    let wm = g.weight_matrix(w);
    y.par_chunks_mut(chunk).zip(xs).for_each(|(y, x)| {
        Scratch::with(g, |s| {
            for (n, (y, x)) in y.chunks_mut(o * l).zip(x.chunks(g.image())).enumerate() {
                s.im2col(g, x, n == 0);
                matmul(y, View::rows(&wm, o, k), cols_view(g, &s.cols), false);
            }
        })
    });
    y
}

/// Backward: the weight gradient `sum_b dy[b] cols(x[b])^T` (if `want_w`) and the input
/// gradient `col2im(W^T dy[b])` (if `want_x`).
pub(crate) fn backward(
    g: &Geometry,
    x: &[f32],
    w: &[f32],
    dy: &[f32],
    want_x: bool,
    want_w: bool,
) -> (Option<Vec<f32>>, Option<Vec<f32>>) {
    let (k, l, o) = (g.patch(), g.pixels(), g.out_channels);
    let shifted = g.shifted();
    // Shifted views: the input gradient is the forward pass of the transposed convolution.
    let (wm, transposed) = if shifted {
        let t = want_x.then(|| (g.transposed(), g.flipped_weight(w)));
        (Vec::new(), t)
    } else {
        (g.weight_matrix(w), None)
    };
    let groups = |dx: &mut [MaybeUninit<f32>]| -> Vec<Vec<f32>> {
        let mut chunks: Vec<&mut [MaybeUninit<f32>]> = if want_x {
            dx.chunks_mut(IMAGES_PER_TASK * g.image()).collect()
        } else {
            (0..g.batch.div_ceil(IMAGES_PER_TASK))
                .map(|_| Default::default())
                .collect()
        };
        chunks
            .par_iter_mut()
            .enumerate()
            .map(|(t, dx)| {
                let mut dw = vec![0.0f32; if want_w { o * k } else { 0 }];
                let first = t * IMAGES_PER_TASK;
                let last = (first + IMAGES_PER_TASK).min(g.batch);
                if shifted {
                    let (n, xs) = (last - first, &x[first * g.image()..last * g.image()]);
                    let dys = &dy[first * o * l..last * o * l];
                    if want_w {
                        shifted::weight_grad(g, n, xs, dys, &mut dw);
                    }
                    if let Some((tg, wt)) = &transposed {
                        shifted::forward(tg, n, dys, wt, dx);
                    }
                    return dw;
                }
                let dx = if want_x { zeroed(dx) } else { &mut [] };
                Scratch::with(g, |s| {
                    for (n, b) in (first..last).enumerate() {
                        let xb = &x[b * g.image()..(b + 1) * g.image()];
                        let dyb = View::rows(&dy[b * o * l..(b + 1) * o * l], o, l);
                        if want_w {
                            s.im2col(g, xb, n == 0);
                            matmul(&mut dw, dyb, cols_view(g, &s.cols).t(), n > 0);
                        }
                        if want_x {
                            let wv = View::rows(&wm, o, k);
                            let dcols = &mut s.dcols[..k * l];
                            if g.pixel_major() {
                                matmul(dcols, dyb.t(), wv, false);
                            } else {
                                matmul(dcols, wv.t(), dyb, false);
                            }
                            s.col2im(g, &mut dx[n * g.image()..(n + 1) * g.image()]);
                        }
                    }
                });
                dw
            })
            .collect()
    };
    // SAFETY: each group's input gradient is written whole: by `shifted::forward`, or
    // zero-filled (`zeroed`) before col2im adds to it.
    let (dx, partials) = unsafe { written(if want_x { g.batch * g.image() } else { 0 }, groups) };
    let dw = want_w.then(|| {
        // In parallel over stretches of the weight, each element summed over the groups in
        // their order (so the sums do not depend on the thread count either).
        let mut sum = vec![0.0f32; o * k];
        sum.par_chunks_mut(SUM_STRETCH)
            .enumerate()
            .for_each(|(i, sum)| {
                for p in &partials {
                    for (s, v) in sum.iter_mut().zip(&p[i * SUM_STRETCH..]) {
                        *s += v;
                    }
                }
            });
        if shifted {
            shifted::weight_from_taps(g, &sum)
        } else {
            g.weight_from_matrix(sum)
        }
    });
    (want_x.then_some(dx), dw)
}

#[derive(Debug)]
struct ConvBackward;

impl Backward<Flex, 2> for ConvBackward {
    type State = (NodeId, NodeId, Geometry);

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, cp: &mut Checkpointer) {
        let [node_x, node_w] = ops.parents;
        let dy: FlexTensor = grads.consume::<Flex>(&ops.node);
        let (x_id, w_id, g) = ops.state;
        let x: FlexTensor = cp.retrieve_node_output(x_id);
        let w: FlexTensor = cp.retrieve_node_output(w_id);
        let (x, w, dy) = (f32_slice(&x), f32_slice(&w), f32_slice(&dy));
        let (dx, dw) = backward(&g, &x, &w, &dy, node_x.is_some(), node_w.is_some());
        if let (Some(node), Some(dx)) = (node_x, dx) {
            let shape = [g.batch, g.channels, g.height, g.width];
            grads.register::<Flex>(node.id, from_f32(dx, shape));
        }
        if let (Some(node), Some(dw)) = (node_w, dw) {
            let shape = [g.out_channels, g.channels, g.kernel[0], g.kernel[1]];
            grads.register::<Flex>(node.id, from_f32(dw, shape));
        }
    }
}

/// The geometry of convolving `x: [B, C, H, W]` with `w: [O, C, kh, kw]`.
fn geometry(x: &FlexTensor, w: &FlexTensor, stride: [usize; 2], padding: [usize; 2]) -> Geometry {
    let [batch, channels, height, width] = dims4(x);
    let [out_channels, _, kh, kw] = dims4(w);
    Geometry {
        batch,
        channels,
        height,
        width,
        out_channels,
        kernel: [kh, kw],
        stride,
        padding,
    }
}

/// The forward convolution `[B, O, oh, ow]` of geometry `g`.
fn run(g: &Geometry, x: &FlexTensor, w: &FlexTensor) -> FlexTensor {
    let [oh, ow] = g.out_hw();
    let y = forward(g, &f32_slice(x), &f32_slice(w));
    from_f32(y, [g.batch, g.out_channels, oh, ow])
}

/// The convolution of plain flex tensors (no graph): what [`conv2d`] computes going forward.
pub(crate) fn conv2d_plain(
    x: &FlexTensor,
    w: &FlexTensor,
    stride: [usize; 2],
    padding: [usize; 2],
) -> FlexTensor {
    run(&geometry(x, w, stride, padding), x, w)
}

/// The convolution of `x: [B, C, H, W]` with `w: [O, C, kh, kw]` (no bias) as a tracked
/// operation of `Autodiff<Flex>`; `[B, O, oh, ow]` out.
pub(crate) fn conv2d(x: FlexAd, w: FlexAd, stride: [usize; 2], padding: [usize; 2]) -> FlexAd {
    let g = geometry(x.primitive(), w.primitive(), stride, padding);
    match ConvBackward
        .prepare::<NoCheckpointing>([x.node(), w.node()])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(mut prep) => {
            let x_id = prep.checkpoint(&x);
            let w_id = prep.checkpoint(&w);
            let y = run(&g, x.primitive(), w.primitive());
            prep.finish((x_id, w_id, g), y)
        }
        OpsKind::UnTracked(prep) => prep.finish(run(&g, x.primitive(), w.primitive())),
    }
}

fn dims4(t: &FlexTensor) -> [usize; 4] {
    let s = t.layout().shape();
    [s[0], s[1], s[2], s[3]]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::im2col::Geometry;

    /// Direct definition of the convolution and its gradients (sums over the taps).
    fn naive(g: &Geometry, x: &[f32], w: &[f32], dy: &[f32]) -> [Vec<f32>; 3] {
        let [oh, ow] = g.out_hw();
        let [kh, kw] = g.kernel;
        let (c_in, o) = (g.channels, g.out_channels);
        let mut y = vec![0.0; g.batch * o * oh * ow];
        let mut dx = vec![0.0; x.len()];
        let mut dw = vec![0.0; w.len()];
        for b in 0..g.batch {
            for oc in 0..o {
                for i in 0..oh {
                    for j in 0..ow {
                        let yi = ((b * o + oc) * oh + i) * ow + j;
                        for c in 0..c_in {
                            for p in 0..kh {
                                for q in 0..kw {
                                    let r = (i * g.stride[0] + p) as isize - g.padding[0] as isize;
                                    let s = (j * g.stride[1] + q) as isize - g.padding[1] as isize;
                                    if r < 0
                                        || s < 0
                                        || r >= g.height as isize
                                        || s >= g.width as isize
                                    {
                                        continue;
                                    }
                                    let xi = ((b * c_in + c) * g.height + r as usize) * g.width
                                        + s as usize;
                                    let wi = ((oc * c_in + c) * kh + p) * kw + q;
                                    y[yi] += x[xi] * w[wi];
                                    dx[xi] += dy[yi] * w[wi];
                                    dw[wi] += dy[yi] * x[xi];
                                }
                            }
                        }
                    }
                }
            }
        }
        [y, dx, dw]
    }

    /// Small integers: every product and partial sum is an exactly representable integer, so
    /// the kernels must agree with the direct sums exactly, whatever the summation order.
    #[test]
    fn kernels_match_the_direct_sums_exactly() {
        let mut shifted_cases = 0;
        for (batch, channels, height, width, out_channels, kernel, stride, padding) in [
            (5, 3, 7, 6, 4, [3, 3], [1, 1], [1, 1]),
            (6, 2, 8, 7, 3, [3, 3], [2, 2], [1, 1]),
            (3, 1, 9, 9, 2, [5, 5], [1, 1], [0, 0]),
            (2, 2, 6, 9, 2, [3, 2], [2, 1], [0, 1]),
            (1, 1, 2, 2, 1, [3, 3], [1, 1], [1, 1]),
            // Pixel-major im2col (4 or more channels).
            (5, 4, 7, 6, 3, [3, 3], [1, 1], [1, 1]),
            (6, 5, 8, 7, 4, [3, 3], [2, 2], [1, 1]),
            (3, 6, 9, 9, 2, [5, 5], [1, 1], [0, 0]),
            (2, 4, 6, 9, 2, [3, 2], [2, 1], [0, 1]),
            (1, 4, 2, 2, 1, [3, 3], [1, 1], [1, 1]),
            // Shifted views (stride 1, 4 or more channels, padding below the kernel, grid at
            // most twice the output): several tasks of images, a tall kernel, 1x1.
            (9, 4, 5, 6, 5, [3, 3], [1, 1], [1, 1]),
            (3, 5, 8, 7, 6, [5, 3], [1, 1], [2, 1]),
            (2, 4, 6, 5, 3, [2, 4], [1, 1], [1, 0]),
            (4, 6, 3, 4, 7, [1, 1], [1, 1], [0, 0]),
            (2, 4, 3, 3, 2, [3, 3], [1, 1], [0, 0]),
            // Stride 1 with padding as large as the kernel: pixel-major im2col.
            (2, 4, 4, 3, 2, [2, 2], [1, 1], [2, 2]),
        ] {
            let g = Geometry {
                batch,
                channels,
                height,
                width,
                out_channels,
                kernel,
                stride,
                padding,
            };
            let int = |n: usize, m: usize| -> Vec<f32> {
                (0..n)
                    .map(|i| ((i * 7 + 3) % m) as f32 - (m / 2) as f32)
                    .collect()
            };
            shifted_cases += usize::from(g.shifted());
            let x = int(batch * g.image(), 5);
            let w = int(out_channels * g.patch(), 3);
            let dy = int(batch * out_channels * g.pixels(), 4);
            let [y, dx, dw] = naive(&g, &x, &w, &dy);
            assert_eq!(forward(&g, &x, &w), y, "{g:?} forward");
            let (got_dx, got_dw) = backward(&g, &x, &w, &dy, true, true);
            assert_eq!(got_dx.unwrap(), dx, "{g:?} dx");
            assert_eq!(got_dw.unwrap(), dw, "{g:?} dw");
            let (none, only_w) = backward(&g, &x, &w, &dy, false, true);
            assert!(none.is_none());
            assert_eq!(only_w.unwrap(), dw);
        }
        assert!(shifted_cases >= 4, "{shifted_cases} cases on shifted views");
    }
}
