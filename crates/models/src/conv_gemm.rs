//! Channels-last convolution blocks built from differentiable tensor primitives (a row gather
//! and one matrix product), so that autodiff differentiates them through `select` and `matmul`
//! rather than through a backend's convolution backward (which on burn-flex runs the weight
//! gradient as a convolution with a batch-sized kernel and the input gradient as a transposed
//! convolution, both far slower than the matrix products here).
//!
//! Layout: images are `[batch, height, width, channels]` (NHWC). A valid, stride-1
//! convolution with kernel `k x k` maps `[B, H, W, C]` to `[B, H - k + 1, W - k + 1, C_out]`:
//!
//! `y[b, i, j, o] = bias[o] + sum_{p, q < k} sum_{c < C} x[b, i + p, j + q, c] w[o, c, p, q]`
//!
//! computed as `cols @ w_mat`, where `cols[(b, i, j), (p, q, c)] = x[b, i + p, j + q, c]` is the
//! im2col matrix gathered by one `select` over the rows of `x` viewed as `[B H W, C]` (over the
//! columns of `[B, H W]` when `C = 1`), and `w_mat[(p, q, c), o] = w[o, c, p, q]`. The weight
//! keeps burn's `Conv2d` layout `[C_out, C_in, k, k]`, so parameters and their initialisation
//! are those of `Conv2d`.
//!
//! [`conv_pool_relu_nhwc`] fuses the CNN block `relu(maxpool2x2(conv(x)))`. Its im2col rows are
//! ordered so that the four members of each pooling window land in four separate blocks; the
//! max over a window is then an elementwise max over blocks, and the bias and ReLU are applied
//! after pooling (`max_t(y_t + b) = max_t(y_t) + b` and `max_t relu(z_t) = relu(max_t z_t)`, as
//! both maps are monotone), on a tensor four times smaller.

use burn::tensor::{Device, Int, Tensor};

/// Errors from shape checks of the channels-last layers.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConvShapeError {
    /// The weight is not square, or its input channels differ from the image's.
    #[error("weight shape {weight:?} does not fit images of shape {input:?}")]
    Weight {
        /// Image shape `[B, H, W, C]`.
        input: [usize; 4],
        /// Weight shape `[C_out, C_in, k, k]`.
        weight: [usize; 4],
    },
    /// The kernel is empty or larger than the image (or leaves no complete pooling window).
    #[error("kernel {kernel} does not fit the {height}x{width} image")]
    Kernel {
        /// Kernel side.
        kernel: usize,
        /// Image height.
        height: usize,
        /// Image width.
        width: usize,
    },
    /// The bias length differs from the output channels.
    #[error("bias of length {bias} for {channels} output channels")]
    Bias {
        /// Bias length.
        bias: usize,
        /// Output channels.
        channels: usize,
    },
}

/// Checks `x: [B, H, W, C]` against `weight: [C_out, C, k, k]` and `bias: [C_out]`; returns
/// `(k, C_out)`.
fn check(
    x: &Tensor<4>,
    weight: &Tensor<4>,
    bias: Option<&Tensor<1>>,
    min_out: usize,
) -> Result<(usize, usize), ConvShapeError> {
    let input = x.dims();
    let [_, h, w, c] = input;
    let wd = weight.dims();
    let [c_out, c_in, k, k2] = wd;
    if c_in != c || k != k2 {
        return Err(ConvShapeError::Weight { input, weight: wd });
    }
    if k == 0 || k + min_out > h + 1 || k + min_out > w + 1 {
        return Err(ConvShapeError::Kernel {
            kernel: k,
            height: h,
            width: w,
        });
    }
    if let Some(bias) = bias
        && bias.dims()[0] != c_out
    {
        return Err(ConvShapeError::Bias {
            bias: bias.dims()[0],
            channels: c_out,
        });
    }
    Ok((k, c_out))
}

/// Pixel offsets (`row * width + col`) of one image's im2col, for the output pixels `outputs`
/// in the given order and, within each, the kernel taps `(p, q)` in row-major order.
fn patch_offsets(outputs: &[(usize, usize)], width: usize, k: usize) -> Vec<i64> {
    let mut v = Vec::with_capacity(outputs.len() * k * k);
    for &(i, j) in outputs {
        for p in 0..k {
            for q in 0..k {
                v.push(((i + p) * width + j + q) as i64);
            }
        }
    }
    v
}

/// The im2col matrix `[B n, k k C]` of channels-last images `x: [B, H, W, C]` for the `n`
/// output pixels `outputs` of every image (rows ordered by image, then by `outputs`).
fn im2col(x: Tensor<4>, outputs: &[(usize, usize)], k: usize, device: &Device) -> Tensor<2> {
    let [b, h, w, c] = x.dims();
    let offsets = patch_offsets(outputs, w, k);
    let per_image = offsets.len();
    let offsets = Tensor::<1, Int>::from_data(offsets.as_slice(), device);
    if c == 1 {
        // One channel: the same column gather of `[B, H W]` for every image.
        let flat: Tensor<2> = x.reshape([b, h * w]);
        return flat.select(1, offsets).reshape([b * outputs.len(), k * k]);
    }
    // Rows of `[B H W, C]`: offsets shifted by `b H W` for image `b`.
    let starts = Tensor::<1, Int>::arange(0..b as i64, device)
        .mul_scalar((h * w) as i64)
        .reshape([b, 1]);
    let rows = (starts + offsets.reshape([1, per_image])).reshape([b * per_image]);
    let flat: Tensor<2> = x.reshape([b * h * w, c]);
    flat.select(0, rows).reshape([b * outputs.len(), k * k * c])
}

/// `w_mat[(p, q, c), o] = w[o, c, p, q]` for a `Conv2d` weight `[C_out, C, k, k]`.
fn weight_matrix(weight: Tensor<4>) -> Tensor<2> {
    let [c_out, c, k, _] = weight.dims();
    weight.permute([2, 3, 1, 0]).reshape([k * k * c, c_out])
}

/// Valid, stride-1 convolution of channels-last images `x` (`[B, H, W, C]`) with a `Conv2d`
/// weight `[C_out, C, k, k]` and optional bias `[C_out]`; returns `[B, H-k+1, W-k+1, C_out]`
/// (formula in the module docs).
pub fn conv2d_nhwc(
    x: Tensor<4>,
    weight: Tensor<4>,
    bias: Option<Tensor<1>>,
) -> Result<Tensor<4>, ConvShapeError> {
    let (k, c_out) = check(&x, &weight, bias.as_ref(), 1)?;
    let [b, h, w, _] = x.dims();
    let device = x.device();
    let (oh, ow) = (h + 1 - k, w + 1 - k);
    let outputs: Vec<(usize, usize)> = (0..oh).flat_map(|i| (0..ow).map(move |j| (i, j))).collect();
    let mut y = im2col(x, &outputs, k, &device).matmul(weight_matrix(weight));
    if let Some(bias) = bias {
        y = y + bias.reshape([1, c_out]);
    }
    Ok(y.reshape([b, oh, ow, c_out]))
}

/// The CNN block `relu(maxpool(conv(x) + bias))` on channels-last images: a valid stride-1
/// `k x k` convolution (`Conv2d` weight `[C_out, C, k, k]`), then 2x2 max pooling with stride 2
/// (odd trailing rows or columns dropped, as burn's `MaxPool2d`), then ReLU:
///
/// `z[b, i, j, o] = relu(bias[o] + max_{s, t < 2} conv(x)[b, 2i + s, 2j + t, o])`,
///
/// `x: [B, H, W, C]` -> `[B, floor((H-k+1)/2), floor((W-k+1)/2), C_out]`. The pooling gradient
/// goes to the first maximum of each window in row-major order, as in burn's `max_pool2d`.
pub fn conv_pool_relu_nhwc(
    x: Tensor<4>,
    weight: Tensor<4>,
    bias: Option<Tensor<1>>,
) -> Result<Tensor<4>, ConvShapeError> {
    let (k, c_out) = check(&x, &weight, bias.as_ref(), 2)?;
    let [b, h, w, _] = x.dims();
    let device = x.device();
    let (ph, pw) = ((h + 1 - k) / 2, (w + 1 - k) / 2);
    let n = ph * pw;
    // Output pixels grouped by their position (s, t) in the pooling window.
    let outputs: Vec<(usize, usize)> = (0..4)
        .flat_map(|st| {
            (0..ph).flat_map(move |i| (0..pw).map(move |j| (2 * i + st / 2, 2 * j + st % 2)))
        })
        .collect();
    let y: Tensor<3> = im2col(x, &outputs, k, &device)
        .matmul(weight_matrix(weight))
        .reshape([b, 4, n * c_out]);
    let mut z = max_over_window(y).reshape([b, n, c_out]);
    if let Some(bias) = bias {
        z = z + bias.reshape([1, 1, c_out]);
    }
    Ok(burn::tensor::activation::relu(z).reshape([b, ph, pw, c_out]))
}

/// `out[b, m] = max_t y[b, t, m]` over the four window taps, with the gradient routed to the
/// first maximal tap: `out = sum_t y[b, t, m] 1[t = argmax_t y[b, t, m]]`, the one-hot mask
/// computed without gradient.
fn max_over_window(y: Tensor<3>) -> Tensor<2> {
    let [b, taps, m] = y.dims();
    let device = y.device();
    let first = y.clone().detach().argmax(1).expand([b, taps, m]);
    let tap = Tensor::<1, Int>::arange(0..taps as i64, &device)
        .reshape([1, taps, 1])
        .expand([b, taps, m]);
    let mask = first.equal(tap).float();
    (y * mask).sum_dim(1).reshape([b, m])
}
