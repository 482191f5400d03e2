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

use std::sync::Mutex;

use burn::tensor::{Device, Int, Tensor, TensorData};
use sgmcmc_samplers::transfer;

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

/// The offsets of [`patch_offsets`] on `device`, uploaded once per shape and device: a
/// network's layers ask for the same few every step, and on an accelerator an upload per layer
/// per step would be a staging copy each (`sgmcmc_samplers::transfer` counts them).
fn device_offsets(
    outputs: &[(usize, usize)],
    width: usize,
    k: usize,
    device: &Device,
) -> Tensor<1, Int> {
    // `Device` equality does not tell a device from its autodiff form: the flag is part of the
    // key, or an autodiff index would pull a plain forward pass onto the graph.
    type Key = (Vec<(usize, usize)>, usize, usize, Device, bool);
    static CACHE: Mutex<Vec<(Key, Tensor<1, Int>)>> = Mutex::new(Vec::new());
    let key: Key = (
        outputs.to_vec(),
        width,
        k,
        device.clone(),
        device.is_autodiff(),
    );
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, t)) = cache.iter().find(|(k, _)| *k == key) {
        return t.clone();
    }
    let offsets = patch_offsets(outputs, width, k);
    let n = offsets.len();
    let t: Tensor<1, Int> = transfer::upload(TensorData::new(offsets, [n]), device);
    cache.push((key, t.clone()));
    t
}

/// The im2col matrix `[B n, k k C]` of channels-last images `x: [B, H, W, C]` for the `n`
/// output pixels `outputs` of every image (rows ordered by image, then by `outputs`).
fn im2col(x: Tensor<4>, outputs: &[(usize, usize)], k: usize, device: &Device) -> Tensor<2> {
    let [b, h, w, c] = x.dims();
    let offsets = device_offsets(outputs, w, k, device);
    let per_image = offsets.dims()[0];
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

#[cfg(test)]
pub(crate) mod tests {
    use burn::nn::conv::{Conv2d, Conv2dConfig};
    use burn::nn::pool::MaxPool2dConfig;
    use burn::tensor::{Distribution, activation};

    use super::*;
    use sgmcmc_flex::check::rel_err;

    /// f32 sums of a few hundred products, summed in a different order: the relative rounding
    /// error is a few hundred ulps (2^-23 ~ 1.2e-7) at most, so 1e-4 has ample margin while a
    /// wrong tap, channel or window (an O(1) error) fails.
    const TOL: f32 = 1e-4;

    fn devices() -> Vec<Device> {
        #[allow(deprecated)]
        let ndarray = Device::ndarray();
        vec![Device::flex(), ndarray]
    }

    /// A `Conv2d` (burn's Kaiming-uniform init), images `[B, H, W, C]` (channels-last; zero in
    /// the left half of the first image, to make pooling ties) and output weights `r`.
    fn setup(
        device: &Device,
        [b, h, w, c]: [usize; 4],
        c_out: usize,
        k: usize,
    ) -> (Conv2d, Tensor<4>) {
        device.seed(7);
        let conv = Conv2dConfig::new([c, c_out], [k, k]).init(device);
        let x = Tensor::<4>::random([b, h, w, c], Distribution::Normal(0.0, 1.0), device);
        let mask = Tensor::<4>::ones([b, h, w, c], device).slice_assign(
            [0..1, 0..h, 0..w / 2, 0..c],
            Tensor::zeros([1, h, w / 2, c], device),
        );
        (conv, (x * mask).require_grad())
    }

    /// Checks the output and the gradients of `sum(out * r)` for weight, bias and input of
    /// `ours(x_nhwc, w, b)` against `reference(conv, x_nchw)` (NCHW in and out).
    fn compare(
        shape: [usize; 4],
        c_out: usize,
        k: usize,
        ours: fn(Tensor<4>, Tensor<4>, Option<Tensor<1>>) -> Result<Tensor<4>, ConvShapeError>,
        reference: fn(&Conv2d, Tensor<4>) -> Tensor<4>,
    ) {
        for base in devices() {
            let device = base.clone().autodiff();
            let (conv, x) = setup(&device, shape, c_out, k);
            let bias = conv.bias.as_ref().map(|b| b.val());
            let got = ours(x.clone(), conv.weight.val(), bias).unwrap();
            let want = reference(&conv, x.clone().permute([0, 3, 1, 2])).permute([0, 2, 3, 1]);
            assert_eq!(got.dims(), want.dims());
            let r = Tensor::<4>::random(got.dims(), Distribution::Normal(0.0, 1.0), &device);
            assert!(rel_err(got.clone(), want.clone()) < TOL, "{base:?} output");
            let g_got = (got * r.clone()).sum().backward();
            let g_want = (want * r).sum().backward();
            let grad = |t: &Tensor<4>, g| t.grad(g).unwrap();
            let w = conv.weight.val();
            assert!(
                rel_err(grad(&w, &g_got), grad(&w, &g_want)) < TOL,
                "{base:?} dW"
            );
            let bias = conv.bias.as_ref().unwrap().val();
            let (bg, bw) = (bias.grad(&g_got).unwrap(), bias.grad(&g_want).unwrap());
            assert!(rel_err(bg, bw) < TOL, "{base:?} db");
            assert!(
                rel_err(grad(&x, &g_got), grad(&x, &g_want)) < TOL,
                "{base:?} dx"
            );
        }
    }

    fn burn_conv(conv: &Conv2d, x: Tensor<4>) -> Tensor<4> {
        conv.forward(x)
    }

    fn burn_block(conv: &Conv2d, x: Tensor<4>) -> Tensor<4> {
        let pool = MaxPool2dConfig::new([2, 2]).with_strides([2, 2]).init();
        pool.forward(activation::relu(conv.forward(x)))
    }

    #[test]
    fn conv2d_nhwc_matches_burn_conv2d_and_its_gradients() {
        compare([2, 9, 11, 3], 4, 3, conv2d_nhwc, burn_conv);
        // One input channel (the column-gather path).
        compare([3, 8, 8, 1], 5, 5, conv2d_nhwc, burn_conv);
    }

    #[test]
    fn conv_pool_relu_matches_burn_block_and_its_gradients() {
        compare([2, 10, 10, 3], 4, 3, conv_pool_relu_nhwc, burn_block);
        // Odd conv output (9 x 10): the last row is dropped, as by `MaxPool2d`.
        compare([2, 11, 12, 2], 3, 3, conv_pool_relu_nhwc, burn_block);
        compare([3, 12, 12, 1], 4, 5, conv_pool_relu_nhwc, burn_block);
    }

    #[test]
    fn bad_shapes_are_typed_errors() {
        let device = Device::flex();
        let x = Tensor::<4>::zeros([1, 6, 6, 2], &device);
        let w = |c: usize, k: usize| Tensor::<4>::zeros([3, c, k, k], &device);
        let err = conv2d_nhwc(x.clone(), w(1, 3), None).unwrap_err();
        assert_eq!(
            err,
            ConvShapeError::Weight {
                input: [1, 6, 6, 2],
                weight: [3, 1, 3, 3]
            }
        );
        assert!(matches!(
            conv2d_nhwc(x.clone(), w(2, 7), None),
            Err(ConvShapeError::Kernel { kernel: 7, .. })
        ));
        // A 6x6 image and a 6x6 kernel give one output pixel: no complete pooling window.
        assert!(conv2d_nhwc(x.clone(), w(2, 6), None).is_ok());
        assert!(matches!(
            conv_pool_relu_nhwc(x.clone(), w(2, 6), None),
            Err(ConvShapeError::Kernel { kernel: 6, .. })
        ));
        let bias = Tensor::<1>::zeros([4], &device);
        assert_eq!(
            conv2d_nhwc(x, w(2, 3), Some(bias)).unwrap_err(),
            ConvShapeError::Bias {
                bias: 4,
                channels: 3
            }
        );
    }
}
