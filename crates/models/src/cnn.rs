//! The papers' small CNN: conv5x5(1 -> 32) - maxpool2 - conv5x5(32 -> 64) - maxpool2 - fc 50 -
//! fc classes (ReLU), for 28x28 images.

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Device, Tensor, activation};
use serde::{Deserialize, Serialize};

use crate::conv_gemm::conv_pool_relu_nhwc;
use crate::network::Network;

/// Configuration of a [`Cnn`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CnnConfig {
    /// Input channels (1 for MNIST).
    pub in_channels: usize,
    /// Channels of the two conv layers (32, 64).
    pub channels: [usize; 2],
    /// Width of the hidden fully connected layer (50).
    pub hidden: usize,
    /// Number of classes.
    pub classes: usize,
    /// Image side (28).
    pub image_size: usize,
}

impl Default for CnnConfig {
    fn default() -> Self {
        Self {
            in_channels: 1,
            channels: [32, 64],
            hidden: 50,
            classes: 10,
            image_size: 28,
        }
    }
}

impl CnnConfig {
    /// Builds the network on `device`.
    pub fn init(&self, device: &Device) -> Cnn {
        // Valid 5x5 convolutions and 2x2 pools: 28 -> 24 -> 12 -> 8 -> 4.
        let side = ((self.image_size - 4) / 2 - 4) / 2;
        Cnn {
            conv1: Conv2dConfig::new([self.in_channels, self.channels[0]], [5, 5]).init(device),
            conv2: Conv2dConfig::new([self.channels[0], self.channels[1]], [5, 5]).init(device),
            pool: MaxPool2dConfig::new([2, 2]).with_strides([2, 2]).init(),
            fc1: LinearConfig::new(self.channels[1] * side * side, self.hidden).init(device),
            fc2: LinearConfig::new(self.hidden, self.classes).init(device),
        }
    }
}

/// The two-conv, two-FC network of the MNIST experiments.
#[derive(Module, Debug)]
pub struct Cnn {
    conv1: Conv2d,
    conv2: Conv2d,
    pool: MaxPool2d,
    fc1: Linear,
    fc2: Linear,
}

impl Cnn {
    /// The reference forward pass through burn's `Conv2d` / `MaxPool2d` modules on NCHW images
    /// (the same function as [`Network::forward`], which computes it channels-last by im2col;
    /// kept to check that path and to measure against).
    pub fn forward_reference(&self, x: Tensor<4>) -> Tensor<2> {
        self.forward_nchw(x, (Conv2d::forward, MaxPool2d::forward, Linear::forward))
    }

    /// `fc2(relu(fc1(flatten(block2(block1(x))))))` on NCHW images, with
    /// `block = maxpool2x2 . relu . conv`.
    fn forward_nchw(
        &self,
        x: Tensor<4>,
        (conv, pool, dense): (
            impl Fn(&Conv2d, Tensor<4>) -> Tensor<4>,
            impl Fn(&MaxPool2d, Tensor<4>) -> Tensor<4>,
            impl Fn(&Linear, Tensor<2>) -> Tensor<2>,
        ),
    ) -> Tensor<2> {
        let h = pool(&self.pool, activation::relu(conv(&self.conv1, x)));
        let h = pool(&self.pool, activation::relu(conv(&self.conv2, h)));
        let h: Tensor<2> = h.flatten(1, 3);
        dense(&self.fc2, activation::relu(dense(&self.fc1, h)))
    }
}

/// A conv block `relu(maxpool(conv(x)))` on channels-last images, through
/// [`conv_pool_relu_nhwc`]. The weight shapes are fixed by [`CnnConfig::init`]; images of
/// another size or channel count panic here, as burn's `Conv2d`/`Linear` would (the
/// `Network::forward` signature has no error path).
fn block(conv: &Conv2d, x: Tensor<4>) -> Tensor<4> {
    conv_pool_relu_nhwc(x, conv.weight.val(), conv.bias.as_ref().map(|b| b.val()))
        .expect("images must have the shape CnnConfig was built for")
}

impl Network for Cnn {
    type Input = Tensor<4>;

    /// Convolutions, pooling and dense layers compute the same on either device.
    fn input_off_graph(&self, x: &Tensor<4>) -> Option<Tensor<4>> {
        Some(x.clone().inner())
    }

    /// `fc2(relu(fc1(flatten(block2(block1(x))))))` with `block = relu . maxpool2x2 . conv5x5`.
    /// On flex (training or forward only) the layers are [`crate::layers`]' (im2col-GEMM
    /// backward); elsewhere the blocks are computed channels-last by [`conv_pool_relu_nhwc`] (a gather and a
    /// matrix product, which every backend differentiates well), with `fc1`'s weight rows
    /// (burn's NCHW flatten order `(c, i, j)`) permuted to the channels-last order `(i, j, c)`.
    fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        if crate::layers::fast_conv(&x) {
            let layers = (
                crate::layers::conv2d,
                crate::layers::max_pool2d,
                crate::layers::linear,
            );
            return self.forward_nchw(x, layers);
        }
        let [b, c, h, w] = x.dims();
        let x = if c == 1 {
            x.reshape([b, h, w, 1])
        } else {
            x.permute([0, 2, 3, 1])
        };
        let h = block(&self.conv2, block(&self.conv1, x));
        let [_, ph, pw, ch] = h.dims();
        let features: Tensor<2> = h.reshape([b, ph * pw * ch]);
        let weight = self.fc1.weight.val();
        let hidden = weight.dims()[1];
        let weight: Tensor<2> = weight
            .reshape([ch, ph * pw, hidden])
            .swap_dims(0, 1)
            .reshape([ph * pw * ch, hidden]);
        let mut z = features.matmul(weight);
        if let Some(bias) = &self.fc1.bias {
            z = z + bias.val().reshape([1, hidden]);
        }
        self.fc2.forward(activation::relu(z))
    }
}

#[cfg(test)]
mod tests {
    use burn::optim::GradientsParams;
    use burn::tensor::Distribution;

    use super::*;

    use sgmcmc_flex::check::rel_err;

    /// The channels-last forward equals burn's NCHW reference, logits and every parameter
    /// gradient, up to f32 rounding of reordered sums (relative 1e-4; an O(1) error from a
    /// wrong layout or permutation fails), on flex and ndarray, for the papers' network, the
    /// small one of the MNIST tests and a 3-channel input.
    #[test]
    fn forward_matches_the_burn_reference_forward_and_gradients() {
        #[allow(deprecated)]
        let ndarray = Device::ndarray();
        let small = CnnConfig {
            channels: [4, 8],
            hidden: 16,
            image_size: 16,
            ..CnnConfig::default()
        };
        let rgb = CnnConfig {
            in_channels: 3,
            classes: 5,
            ..CnnConfig::default()
        };
        for base in [Device::flex(), ndarray] {
            let device = base.clone().autodiff();
            for cfg in [CnnConfig::default(), small.clone(), rgb.clone()] {
                device.seed(3);
                let model = cfg.init(&device);
                let (c, s) = (cfg.in_channels, cfg.image_size);
                let x = Tensor::<4>::random([3, c, s, s], Distribution::Normal(0.0, 1.0), &device);
                let got = model.forward(x.clone());
                let want = model.forward_reference(x);
                assert!(
                    rel_err(got.clone(), want.clone()) < 1e-4,
                    "{base:?} {cfg:?}"
                );
                let r = Tensor::<2>::random(got.dims(), Distribution::Normal(0.0, 1.0), &device);
                let g_got = GradientsParams::from_grads((got * r.clone()).sum().backward(), &model);
                let g_want = GradientsParams::from_grads((want * r).sum().backward(), &model);
                let pairs = |p: &Param4| {
                    let a = g_got.get::<4>(p.id).unwrap();
                    let b = g_want.get::<4>(p.id).unwrap();
                    rel_err(a, b)
                };
                for conv in [&model.conv1, &model.conv2] {
                    assert!(pairs(&conv.weight) < 1e-4, "{base:?} {cfg:?} conv weight");
                    let b = conv.bias.as_ref().unwrap();
                    let (gb, wb) = (g_got.get::<1>(b.id).unwrap(), g_want.get::<1>(b.id));
                    assert!(
                        rel_err(gb, wb.unwrap()) < 1e-4,
                        "{base:?} {cfg:?} conv bias"
                    );
                }
                for fc in [&model.fc1, &model.fc2] {
                    let (a, b) = (g_got.get::<2>(fc.weight.id), g_want.get::<2>(fc.weight.id));
                    assert!(
                        rel_err(a.unwrap(), b.unwrap()) < 1e-4,
                        "{base:?} {cfg:?} fc"
                    );
                }
            }
        }
    }

    type Param4 = burn::module::Param<Tensor<4>>;
}
