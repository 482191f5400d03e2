//! Layer calls that take the fast flex path when they can (the private `kernels` module, feature
//! `flex`): [`conv2d`], [`max_pool2d`], [`batch_norm`] and [`linear`] compute exactly the
//! function of burn's `Conv2d::forward`, `MaxPool2d::forward`, `BatchNorm::forward` and
//! `Linear::forward` (same parameters, same running-statistics update), on any device; [`tanh`]
//! is the MLPs' rational `tanh` differentiated from its value.

#[cfg(feature = "flex")]
use burn::nn::PaddingConfig2d;
use burn::nn::conv::Conv2d;
use burn::nn::pool::{AvgPool2d, MaxPool2d};
use burn::nn::{BatchNorm, Linear};
use burn::tensor::Tensor;
use burn::tensor::activation;
use burn::tensor::ops::PadMode;

/// `layer.forward(x)` for `x: [n, d_in]`; on `Autodiff<Flex>` in `f32` as one operation whose
/// products write their outputs once (the bias as the forward product's starting rows) and
/// read transposes as strided views; on plain flex the same forward product.
pub fn linear(layer: &Linear, x: Tensor<2>) -> Tensor<2> {
    #[cfg(feature = "flex")]
    {
        use crate::kernels::{flex_ad, flex_plain, linear as op};
        let w = layer.weight.val();
        if let (Some(xp), Some(wp), Some(bias)) =
            (flex_ad(&x), flex_ad(&w), bias_as(layer, flex_ad))
        {
            return crate::kernels::tensor(op::linear(xp, wp, bias));
        }
        if let (Some(xp), Some(wp), Some(bias)) =
            (flex_plain(&x), flex_plain(&w), bias_as(layer, flex_plain))
        {
            return crate::kernels::plain(op::linear_plain(&xp, &wp, bias.as_ref()));
        }
    }
    layer.forward(x)
}

/// `layer`'s bias as `get` reads it: `Some(None)` without a bias, `None` when `get` cannot read
/// it (another device or dtype: burn's path then).
#[cfg(feature = "flex")]
fn bias_as<P>(layer: &Linear, get: impl Fn(&Tensor<1>) -> Option<P>) -> Option<Option<P>> {
    match &layer.bias {
        None => Some(None),
        Some(b) => get(&b.val()).map(Some),
    }
}

/// `tanh(x)` as the MLPs compute it: the rational approximation of Eigen and XLA (absolute
/// error below `5e-7`), differentiated from its value (`tanh' = 1 - tanh^2`, no recomputation
/// going back); on burn-flex in `f32` one pass each way.
pub fn tanh<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    crate::tanh::tanh(x)
}

/// `conv.forward(x)`; on `Autodiff<Flex>` with groups 1, dilation 1 and symmetric padding, as
/// one operation with an im2col-GEMM backward (on plain flex, its forward).
pub fn conv2d(conv: &Conv2d, x: Tensor<4>) -> Tensor<4> {
    #[cfg(feature = "flex")]
    if let Some(y) = flex_conv2d(conv, &x) {
        return y;
    }
    conv.forward(x)
}

/// Whether [`conv2d`] on images like `x` takes the fast flex path (flex in `f32`, training or
/// forward only).
pub fn fast_conv(x: &Tensor<4>) -> bool {
    #[cfg(feature = "flex")]
    return crate::kernels::flex_ad(x).is_some() || crate::kernels::flex_plain(x).is_some();
    #[cfg(not(feature = "flex"))]
    {
        let _ = x;
        false
    }
}

#[cfg(feature = "flex")]
fn flex_conv2d(conv: &Conv2d, x: &Tensor<4>) -> Option<Tensor<4>> {
    let [_, _, h, w] = x.dims();
    let padding = match &conv.padding {
        PaddingConfig2d::Valid => [0, 0],
        PaddingConfig2d::Explicit(top, left, bottom, right) if top == bottom && left == right => {
            [*top, *left]
        }
        _ => return None,
    };
    let [kh, kw] = conv.kernel_size;
    if conv.groups != 1
        || conv.dilation != [1, 1]
        || h + 2 * padding[0] < kh
        || w + 2 * padding[1] < kw
    {
        return None;
    }
    let y: Tensor<4> = match (
        crate::kernels::flex_ad(x),
        crate::kernels::flex_ad(&conv.weight.val()),
    ) {
        (Some(xp), Some(wp)) => {
            crate::kernels::tensor(crate::kernels::conv::conv2d(xp, wp, conv.stride, padding))
        }
        _ => {
            let xp = crate::kernels::flex_plain(x)?;
            let wp = crate::kernels::flex_plain(&conv.weight.val())?;
            crate::kernels::plain(crate::kernels::conv::conv2d_plain(
                &xp,
                &wp,
                conv.stride,
                padding,
            ))
        }
    };
    Some(match &conv.bias {
        Some(bias) => {
            let o = bias.dims()[0];
            y + bias.val().reshape([1, o, 1, 1])
        }
        None => y,
    })
}

/// `pool.forward(x)`; for 2x2 windows with stride 2 (no padding, dilation 1, floor mode) on
/// `Autodiff<Flex>`, as one pass forward and one backward (on plain flex, the forward pass).
pub fn max_pool2d(pool: &MaxPool2d, x: Tensor<4>) -> Tensor<4> {
    #[cfg(feature = "flex")]
    if pool.kernel_size == [2, 2]
        && pool.stride == [2, 2]
        && pool.dilation == [1, 1]
        && !pool.ceil_mode
        && matches!(pool.padding, PaddingConfig2d::Valid)
    {
        if let Some(xp) = crate::kernels::flex_ad(&x) {
            return crate::kernels::tensor(crate::kernels::max_pool::max_pool2x2(xp));
        }
        if let Some(xp) = crate::kernels::flex_plain(&x) {
            return crate::kernels::plain(crate::kernels::max_pool::max_pool2x2_plain(&xp));
        }
    }
    pool.forward(x)
}

/// `pool.forward(x)` with `pad[0]` zero channels added before the channels and `pad[1]` after,
/// for a 1x1 average pool without padding (subsampling, `x[:, :, ::s, ::s]`: the option-A
/// shortcut of the CIFAR ResNets); on `Autodiff<Flex>` as one pass forward and one backward.
pub fn subsample_pad_channels(pool: &AvgPool2d, x: Tensor<4>, pad: [usize; 2]) -> Tensor<4> {
    #[cfg(feature = "flex")]
    if pool.kernel_size == [1, 1]
        && pool.stride[0] == pool.stride[1]
        && pool.stride[0] > 0
        && matches!(pool.padding, PaddingConfig2d::Valid)
        && let Some(xp) = crate::kernels::flex_ad(&x)
    {
        let y = crate::kernels::shortcut::subsample_pad(xp, pool.stride[0], pad);
        return crate::kernels::tensor(y);
    }
    pad_channels(pool.forward(x), pad)
}

/// `x: [B, C, H, W]` with `pad[0]` zero channels added before its channels and `pad[1]` after.
pub fn pad_channels(x: Tensor<4>, pad: [usize; 2]) -> Tensor<4> {
    if pad == [0, 0] {
        return x;
    }
    x.pad([(pad[0], pad[1]), (0, 0), (0, 0)], PadMode::Constant(0.0))
}

/// `bn.forward(x)`; in training mode on `Autodiff<Flex>`, as one operation with two passes
/// forward and two backward, and the same running-statistics update as burn's; on an
/// accelerator with its statistics reduced in stages ([`crate::staged`]).
pub fn batch_norm<const D: usize>(bn: &BatchNorm, x: Tensor<D>) -> Tensor<D> {
    #[cfg(feature = "flex")]
    if let Some(y) = flex_batch_norm(bn, &x, None, false) {
        return y;
    }
    if let Some(y) = crate::staged::batch_norm_train(bn, &x) {
        return y;
    }
    bn.forward(x)
}

/// `relu(bn.forward(x) + residual)` (without the residual when it is `None`); in training
/// mode on `Autodiff<Flex>` as one operation with the passes of [`batch_norm`], the sum and the
/// ReLU applied as the output is written (and the ReLU's mask as the gradient is read).
pub fn batch_norm_relu<const D: usize>(
    bn: &BatchNorm,
    x: Tensor<D>,
    residual: Option<Tensor<D>>,
) -> Tensor<D> {
    #[cfg(feature = "flex")]
    if let Some(y) = flex_batch_norm(bn, &x, residual.as_ref(), true) {
        return y;
    }
    let y = crate::staged::batch_norm_train(bn, &x).unwrap_or_else(|| bn.forward(x));
    activation::relu(match residual {
        Some(r) => y + r,
        None => y,
    })
}

/// The fast path of [`batch_norm`] and [`batch_norm_relu`], when `x` (and the residual, of
/// `x`'s shape) live on `Autodiff<Flex>` in `f32` and `bn` is in training mode.
#[cfg(feature = "flex")]
fn flex_batch_norm<const D: usize>(
    bn: &BatchNorm,
    x: &Tensor<D>,
    residual: Option<&Tensor<D>>,
    relu: bool,
) -> Option<Tensor<D>> {
    use burn::tensor::TensorData;
    use sgmcmc_samplers::transfer;
    if !x.device().is_autodiff() || !bn.training.is_enabled() {
        return None;
    }
    let residual = match residual {
        Some(r) if r.dims() == x.dims() => Some(crate::kernels::flex_ad(r)?),
        Some(_) => return None,
        None => None,
    };
    let xp = crate::kernels::flex_ad(x)?;
    let gamma = crate::kernels::flex_ad(&bn.gamma.val())?;
    let beta = crate::kernels::flex_ad(&bn.beta.val())?;
    let (y, mean, var) = crate::kernels::batch_norm_op::batch_norm_train(
        xp,
        (gamma, beta),
        bn.epsilon,
        residual,
        relu,
    );
    let device = x.device();
    let c = mean.len();
    let m = bn.momentum;
    let stat = |v: Vec<f32>| -> Tensor<1> { transfer::upload(TensorData::new(v, [c]), &device) };
    // As burn's `BatchNorm::forward_train`.
    let running = |old: Tensor<1>, new: Tensor<1>| {
        old.to_device(&device)
            .mul_scalar(1.0 - m)
            .add(new.mul_scalar(m))
            .detach()
    };
    bn.running_mean
        .update(running(bn.running_mean.value_sync(), stat(mean)));
    bn.running_var
        .update(running(bn.running_var.value_sync(), stat(var)));
    Some(crate::kernels::tensor(y))
}

#[cfg(test)]
mod tests {
    use burn::module::{Module, Param};
    use burn::nn::conv::Conv2dConfig;
    use burn::nn::{BatchNormConfig, PaddingConfig2d};
    use burn::tensor::{Device, Distribution};

    use super::*;
    use crate::check::rel_err;

    fn devices() -> Vec<Device> {
        #[allow(deprecated)]
        let ndarray = Device::ndarray();
        vec![Device::flex(), ndarray]
    }

    fn normal<const D: usize>(shape: [usize; D], device: &Device) -> Tensor<D> {
        Tensor::random(shape, Distribution::Normal(0.0, 1.0), device)
    }

    /// `f32` sums of at most a few hundred products (or of a few thousand terms in the BN
    /// statistics), summed in another order: relative rounding errors of a few hundred ulps
    /// (2^-23 ~ 1.2e-7) at most, so 1e-4 has ample margin while a wrong tap, channel or term
    /// (an O(1) error) fails.
    const TOL: f32 = 1e-4;

    /// [`linear`] against burn's `Linear::forward`: outputs and the gradients of `x`, `W` and
    /// `b`, with and without a bias, a non-contiguous input (a transpose), and a layer large
    /// enough (256 x 128 x 96: 3.1 M multiply-adds) for the products to split over threads.
    #[test]
    fn linear_matches_burn_linear_and_its_gradients() {
        for base in devices() {
            let device = base.clone().autodiff();
            for (n, d_in, d_out, bias, transposed) in [
                (7, 5, 3, true, false),
                (100, 64, 10, true, false),
                (9, 13, 4, false, true),
                (256, 128, 96, true, false),
                (1, 1, 1, false, false),
            ] {
                device.seed(5);
                let layer = burn::nn::LinearConfig::new(d_in, d_out)
                    .with_bias(bias)
                    .init(&device);
                let x = if transposed {
                    normal([d_in, n], &device).require_grad()
                } else {
                    normal([n, d_in], &device).require_grad()
                };
                let input = || {
                    if transposed {
                        x.clone().transpose()
                    } else {
                        x.clone()
                    }
                };
                let got = linear(&layer, input());
                let want = layer.forward(input());
                let what = format!("{base:?} {n}x{d_in}x{d_out} bias {bias}");
                assert_eq!(got.dims(), want.dims(), "{what}");
                assert!(rel_err(got.clone(), want.clone()) < TOL, "{what} output");
                // Forward only, off the graph (plain flex: the same product).
                let off = linear(&layer.valid(), input().inner());
                assert!(!off.is_autodiff(), "{what}: off the graph");
                assert!(rel_err(off, want.clone().inner()) < TOL, "{what} plain");
                let r = normal(got.dims(), &device);
                let (g1, g2) = (
                    (got * r.clone()).sum().backward(),
                    (want * r).sum().backward(),
                );
                let w = layer.weight.val();
                let pairs = [
                    (w.grad(&g1), w.grad(&g2), "dW"),
                    (x.grad(&g1), x.grad(&g2), "dx"),
                ];
                for (a, b, name) in pairs {
                    assert!(rel_err(a.unwrap(), b.unwrap()) < TOL, "{what} {name}");
                }
                if let Some(b) = &layer.bias {
                    let b = b.val();
                    let (a, c) = (b.grad(&g1).unwrap(), b.grad(&g2).unwrap());
                    assert!(
                        rel_err(a.unsqueeze::<2>(), c.unsqueeze()) < TOL,
                        "{what} db"
                    );
                }
            }
        }
    }

    #[test]
    fn conv2d_matches_burn_conv2d_and_its_gradients() {
        for base in devices() {
            let device = base.clone().autodiff();
            for (c, o, k, stride, pad, bias, hw) in [
                (3, 4, 3, 1, 1, false, [9, 8]),
                (4, 6, 3, 2, 1, false, [8, 9]),
                (1, 5, 5, 1, 0, true, [12, 12]),
                (2, 3, 3, 2, 0, true, [7, 7]),
                (5, 4, 3, 1, 1, false, [6, 7]),
                (6, 3, 3, 2, 1, false, [9, 8]),
                (8, 4, 5, 1, 0, true, [9, 9]),
            ] {
                device.seed(11);
                let conv = Conv2dConfig::new([c, o], [k, k])
                    .with_stride([stride, stride])
                    .with_padding(PaddingConfig2d::Explicit(pad, pad, pad, pad))
                    .with_bias(bias)
                    .init(&device);
                let x = normal([3, c, hw[0], hw[1]], &device).require_grad();
                let got = conv2d(&conv, x.clone());
                let want = conv.forward(x.clone());
                assert_eq!(got.dims(), want.dims());
                let what = format!("{base:?} c{c} o{o} k{k} s{stride} p{pad}");
                assert!(rel_err(got.clone(), want.clone()) < TOL, "{what} output");
                let off = conv2d(&conv.valid(), x.clone().inner());
                assert!(!off.is_autodiff(), "{what}: off the graph");
                assert!(rel_err(off, want.clone().inner()) < TOL, "{what} plain");
                let r = normal(got.dims(), &device);
                let (g1, g2) = (
                    (got * r.clone()).sum().backward(),
                    (want * r).sum().backward(),
                );
                let w = conv.weight.val();
                assert!(
                    rel_err(w.grad(&g1).unwrap(), w.grad(&g2).unwrap()) < TOL,
                    "{what} dW"
                );
                assert!(
                    rel_err(x.grad(&g1).unwrap(), x.grad(&g2).unwrap()) < TOL,
                    "{what} dx"
                );
                if let Some(b) = &conv.bias {
                    let b = b.val();
                    assert!(
                        rel_err(b.grad(&g1).unwrap(), b.grad(&g2).unwrap()) < TOL,
                        "{what} db"
                    );
                }
            }
        }
    }

    /// Exact: pooling selects values and routes gradients without arithmetic. Half of the
    /// first image is zero, so windows with ties check the first-maximum rule; 9x11 maps drop a
    /// row and a column.
    #[test]
    fn max_pool_matches_burn_max_pool_and_its_gradient() {
        use burn::nn::pool::MaxPool2dConfig;
        for base in devices() {
            let device = base.clone().autodiff();
            device.seed(9);
            let pool = MaxPool2dConfig::new([2, 2]).with_strides([2, 2]).init();
            let mask = Tensor::<4>::ones([2, 3, 9, 11], &device).slice_assign(
                [0..1, 0..3, 0..9, 0..5],
                Tensor::zeros([1, 3, 9, 5], &device),
            );
            let x = (normal([2, 3, 9, 11], &device) * mask)
                .detach()
                .require_grad();
            let (got, want) = (max_pool2d(&pool, x.clone()), pool.forward(x.clone()));
            assert_eq!(got.dims(), [2, 3, 4, 5]);
            assert_eq!(
                got.clone().into_data(),
                want.clone().into_data(),
                "{base:?}"
            );
            let off = max_pool2d(&pool, x.clone().inner());
            assert!(!off.is_autodiff(), "{base:?}: off the graph");
            assert_eq!(off.into_data(), want.clone().into_data(), "{base:?} plain");
            let r = normal(got.dims(), &device);
            let (g1, g2) = (
                (got * r.clone()).sum().backward(),
                (want * r).sum().backward(),
            );
            let (a, b) = (x.grad(&g1).unwrap(), x.grad(&g2).unwrap());
            assert_eq!(a.into_data(), b.into_data(), "{base:?} dx");
        }
    }

    /// The option-A shortcut against burn's 1x1 average pool and pad, exactly (copies only):
    /// output and input gradient, odd and even sizes, strides 1 to 3.
    #[test]
    fn subsample_pad_channels_matches_burn_pool_and_pad_exactly() {
        use burn::nn::pool::AvgPool2dConfig;
        for base in devices() {
            let device = base.clone().autodiff();
            device.seed(9);
            for (stride, h, w, pad) in [(2, 8, 8, [1, 2]), (2, 7, 6, [0, 3]), (3, 5, 7, [2, 0])] {
                let pool = AvgPool2dConfig::new([1, 1])
                    .with_strides([stride, stride])
                    .init();
                let x = normal([2, 3, h, w], &device).detach().require_grad();
                let got = subsample_pad_channels(&pool, x.clone(), pad);
                let want = pad_channels(pool.forward(x.clone()), pad);
                let what = format!("{base:?} stride {stride} {h}x{w} pad {pad:?}");
                assert_eq!(got.dims(), want.dims(), "{what}");
                assert_eq!(got.to_data(), want.to_data(), "{what} output");
                let r = normal(got.dims(), &device);
                let (g1, g2) = (
                    (got * r.clone()).sum().backward(),
                    (want * r).sum().backward(),
                );
                let (a, b) = (x.grad(&g1).unwrap(), x.grad(&g2).unwrap());
                assert_eq!(a.into_data(), b.into_data(), "{what} dx");
            }
        }
    }

    /// [`batch_norm`] and [`batch_norm_relu`] (with and without the residual) against burn's
    /// `BatchNorm` and ReLU: outputs, the gradients of `x`, `gamma`, `beta` and the residual,
    /// and the running statistics, over two steps.
    #[test]
    fn batch_norm_matches_burn_batch_norm_its_gradients_and_running_statistics() {
        for base in devices() {
            let device = base.clone().autodiff();
            device.seed(5);
            let c = 6;
            let (gamma, beta) = (normal([c], &device), normal([c], &device));
            let make = || {
                let mut bn = BatchNormConfig::new(c).init(&device);
                bn.gamma = Param::from_tensor(gamma.clone());
                bn.beta = Param::from_tensor(beta.clone());
                bn
            };
            // A mean far from zero and a spread of 2 per channel.
            let x = (normal([4, c, 5, 7], &device) * 2.0 + 3.0)
                .detach()
                .require_grad();
            let (r, res) = (normal([4, c, 5, 7], &device), normal([4, c, 5, 7], &device));
            let res = res.detach().require_grad();
            for (relu, residual) in [(false, false), (true, false), (true, true)] {
                let (fast, reference) = (make(), make());
                let residual = residual.then(|| res.clone());
                for step in 0..2 {
                    let got = if relu {
                        batch_norm_relu(&fast, x.clone(), residual.clone())
                    } else {
                        batch_norm(&fast, x.clone())
                    };
                    let want = reference.forward(x.clone());
                    let want = match (&residual, relu) {
                        (Some(res), _) => activation::relu(want + res.clone()),
                        (None, true) => activation::relu(want),
                        (None, false) => want,
                    };
                    let what = format!("{base:?} relu {relu} residual {residual:?} step {step}");
                    assert!(rel_err(got.clone(), want.clone()) < TOL, "{what} output");
                    let (g1, g2) = (
                        (got * r.clone()).sum().backward(),
                        (want * r.clone()).sum().backward(),
                    );
                    let flat = |t: Tensor<4>| t.reshape([-1]);
                    let mut pairs = vec![
                        (flat(x.grad(&g1).unwrap()), flat(x.grad(&g2).unwrap())),
                        (
                            fast.gamma.val().grad(&g1).unwrap(),
                            reference.gamma.val().grad(&g2).unwrap(),
                        ),
                        (
                            fast.beta.val().grad(&g1).unwrap(),
                            reference.beta.val().grad(&g2).unwrap(),
                        ),
                    ];
                    if let Some(res) = &residual {
                        pairs.push((flat(res.grad(&g1).unwrap()), flat(res.grad(&g2).unwrap())));
                    }
                    for (i, (a, b)) in pairs.into_iter().enumerate() {
                        assert!(rel_err(a, b) < TOL, "{what} gradient {i}");
                    }
                    for (a, b) in [
                        (&fast.running_mean, &reference.running_mean),
                        (&fast.running_var, &reference.running_var),
                    ] {
                        assert!(
                            rel_err(a.value_sync(), b.value_sync()) < TOL,
                            "{what} running"
                        );
                    }
                }
            }
        }
    }
}
