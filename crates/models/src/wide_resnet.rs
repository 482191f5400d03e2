//! Wide residual networks (Zagoruyko and Komodakis 2016, "Wide Residual Networks", section 2
//! and Table 1), the WRN-16-8 and WRN-28-10 of thesis Tables 2.1 and 6.1.
//!
//! WRN-`d`-`k` has `n = (d - 4) / 6` pre-activation blocks in each of three groups of
//! `16 k`, `32 k` and `64 k` channels (stride 1, 2, 2), after a 3x3 conv (in -> 16) and before
//! BN - ReLU, global average pooling and a linear layer. A block is
//!
//! ```text
//! a = relu(bn1(x));  y = conv2(relu(bn2(conv1(a)))) + shortcut
//! shortcut = x                      (same channels and stride 1)
//!          = conv1x1_stride(a)      (otherwise: the projection sees the activated input)
//! ```
//!
//! with 3x3 convolutions (the first with the group's stride), as in the authors' and the
//! common PyTorch implementation, without dropout (the thesis uses none). Convolutions have no
//! bias and He-normal initialisation; convolutions and batch norms run through
//! [`crate::layers`] (one tracked operation each when training on flex). WRN-16-8 has 10,961,370 trainable parameters with 10
//! classes (the paper's 11.0M), WRN-28-10 36,476,194 (36.5M). BatchNorm behaves as in
//! [`crate::resnet`]: batch statistics and running-statistic updates on an autodiff device,
//! running statistics after [`Module::valid`].

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, Initializer, Linear, LinearConfig, PaddingConfig2d};
use burn::tensor::{Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::layers::{batch_norm_relu, conv2d};
use crate::network::Network;
use crate::resnet::conv3x3;

/// An invalid [`WideResNetConfig`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WideResNetError {
    /// The depth is not `6n + 4` with `n >= 1`.
    #[error("WRN depth must be 6n + 4 with n >= 1 (10, 16, 22, 28, 40, ...), got {0}")]
    Depth(usize),
    /// The widening factor, the classes or the input channels are zero.
    #[error("WRN needs a widening factor, classes and input channels of at least 1, got {0}")]
    Zero(&'static str),
}

/// Configuration of a [`WideResNet`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WideResNetConfig {
    /// Depth `6n + 4`.
    pub depth: usize,
    /// Widening factor `k`.
    pub widen: usize,
    /// Number of classes.
    pub classes: usize,
    /// Channels of the input images.
    pub in_channels: usize,
}

impl WideResNetConfig {
    /// WRN-`depth`-`widen` for 3-channel images and `classes` classes.
    pub fn new(depth: usize, widen: usize, classes: usize) -> Self {
        Self {
            depth,
            widen,
            classes,
            in_channels: 3,
        }
    }

    /// The same network for images of `channels` channels.
    pub fn with_in_channels(mut self, channels: usize) -> Self {
        self.in_channels = channels;
        self
    }

    /// Blocks per group, `n = (depth - 4) / 6`, after validating the configuration.
    pub fn blocks_per_group(&self) -> Result<usize, WideResNetError> {
        if self.depth < 10 || !(self.depth - 4).is_multiple_of(6) {
            return Err(WideResNetError::Depth(self.depth));
        }
        for (name, v) in [
            ("widen", self.widen),
            ("classes", self.classes),
            ("in_channels", self.in_channels),
        ] {
            if v == 0 {
                return Err(WideResNetError::Zero(name));
            }
        }
        Ok((self.depth - 4) / 6)
    }

    /// The network with freshly initialised parameters on `device`.
    pub fn init(&self, device: &Device) -> Result<WideResNet, WideResNetError> {
        let n = self.blocks_per_group()?;
        let widths = [16, 16 * self.widen, 32 * self.widen, 64 * self.widen];
        let mut blocks = Vec::with_capacity(3 * n);
        for g in 0..3 {
            for b in 0..n {
                let stride = if b == 0 && g > 0 { 2 } else { 1 };
                let in_ch = if b == 0 { widths[g] } else { widths[g + 1] };
                blocks.push(WideBlock::new(in_ch, widths[g + 1], stride, device));
            }
        }
        Ok(WideResNet {
            conv: conv3x3(self.in_channels, widths[0], 1, device),
            blocks,
            bn: BatchNormConfig::new(widths[3]).init(device),
            fc: LinearConfig::new(widths[3], self.classes).init(device),
        })
    }
}

/// A pre-activation block with a 1x1 projection where the shape changes.
#[derive(Module, Debug)]
pub struct WideBlock {
    bn1: BatchNorm,
    conv1: Conv2d,
    bn2: BatchNorm,
    conv2: Conv2d,
    projection: Option<Conv2d>,
}

impl WideBlock {
    fn new(in_ch: usize, out_ch: usize, stride: usize, device: &Device) -> Self {
        let projection = (in_ch != out_ch || stride != 1).then(|| {
            Conv2dConfig::new([in_ch, out_ch], [1, 1])
                .with_stride([stride, stride])
                .with_padding(PaddingConfig2d::Valid)
                .with_bias(false)
                .with_initializer(Initializer::KaimingNormal {
                    gain: std::f64::consts::SQRT_2,
                    fan_out_only: false,
                })
                .init(device)
        });
        Self {
            bn1: BatchNormConfig::new(in_ch).init(device),
            conv1: conv3x3(in_ch, out_ch, stride, device),
            bn2: BatchNormConfig::new(out_ch).init(device),
            conv2: conv3x3(out_ch, out_ch, 1, device),
            projection,
        }
    }

    /// See the module docs.
    pub fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        let a = batch_norm_relu(&self.bn1, x.clone(), None);
        let shortcut = match &self.projection {
            Some(p) => conv2d(p, a.clone()),
            None => x,
        };
        let h = batch_norm_relu(&self.bn2, conv2d(&self.conv1, a), None);
        conv2d(&self.conv2, h) + shortcut
    }
}

/// A wide ResNet (`[batch, in_channels, height, width]` images to `[batch, classes]` logits).
#[derive(Module, Debug)]
pub struct WideResNet {
    conv: Conv2d,
    blocks: Vec<WideBlock>,
    bn: BatchNorm,
    fc: Linear,
}

impl WideResNet {
    /// Every BatchNorm layer, in forward order.
    pub fn batch_norms_mut(&mut self) -> Vec<&mut BatchNorm> {
        let mut all = Vec::new();
        for b in &mut self.blocks {
            all.extend([&mut b.bn1, &mut b.bn2]);
        }
        all.push(&mut self.bn);
        all
    }
}

impl Network for WideResNet {
    type Input = Tensor<4>;

    fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        let h = conv2d(&self.conv, x);
        let h = self.blocks.iter().fold(h, |h, block| block.forward(h));
        let h = batch_norm_relu(&self.bn, h, None);
        let h: Tensor<2> = h.mean_dims(&[2, 3]).flatten(1, 3);
        crate::layers::linear(&self.fc, h)
    }
}

#[cfg(test)]
mod tests {
    use burn::optim::GradientsParams;
    use burn::tensor::Distribution;

    use burn::module::{ModuleVisitor, Param};

    use super::*;

    /// Elements of the parameters that take gradients (not the BN running statistics).
    fn trainable_count<M: Module>(m: &M) -> usize {
        struct Count(usize);
        impl ModuleVisitor for Count {
            fn visit_float<const D: usize>(&mut self, p: &Param<Tensor<D>>) {
                if p.val().is_require_grad() {
                    self.0 += p.val().shape().num_elements();
                }
            }
        }
        let mut c = Count(0);
        m.visit(&mut c);
        c.0
    }

    /// Trainable parameters of WRN-`d`-`k` counted layer by layer from the module docs' layout
    /// (conv weights, BN gamma and beta, projections, the linear layer), independently of the
    /// code that builds the network.
    fn counted(depth: usize, k: usize, classes: usize) -> usize {
        let n = (depth - 4) / 6;
        let w = [16, 16 * k, 32 * k, 64 * k];
        let mut total = 3 * 16 * 9;
        for g in 0..3 {
            let (i, o) = (w[g], w[g + 1]);
            total += 2 * i + 9 * i * o + 2 * o + 9 * o * o + i * o;
            total += (n - 1) * (2 * o + 9 * o * o + 2 * o + 9 * o * o);
        }
        total + 2 * w[3] + w[3] * classes + classes
    }

    #[test]
    fn wrn_16_8_has_the_published_parameter_count_and_shapes() {
        // Autodiff, where trainable parameters are marked as such.
        let device = Device::flex().autodiff();
        // The published WRN-16-8 count on CIFAR-10 (11.0M in the paper's Table 1 / thesis).
        assert_eq!(counted(16, 8, 10), 10_961_370);
        assert!((counted(28, 10, 10) as f64 / 1e6 - 36.5).abs() < 0.05);
        let small = WideResNetConfig::new(10, 2, 7).init(&device).unwrap();
        assert_eq!(trainable_count(&small), counted(10, 2, 7));
        let x = Tensor::<4>::random([2, 3, 16, 16], Distribution::Normal(0.0, 1.0), &device);
        assert_eq!(small.forward(x).dims(), [2, 7]);
        let wrn = WideResNetConfig::new(16, 8, 10).init(&device).unwrap();
        assert_eq!(trainable_count(&wrn), 10_961_370);
    }

    #[test]
    fn wrn_gradients_reach_every_layer_and_bad_configs_are_refused() {
        let device = Device::flex().autodiff();
        let model = WideResNetConfig::new(10, 1, 3)
            .with_in_channels(1)
            .init(&device)
            .unwrap();
        let x = Tensor::<4>::random([2, 1, 8, 8], Distribution::Normal(0.0, 1.0), &device);
        let grads = GradientsParams::from_grads(model.forward(x).sum().backward(), &model);
        // conv0; 3 blocks of (bn1 2, conv1, bn2 2, conv2) = 6 each, plus 2 projections (16->16
        // needs none at k = 1 in group 1); final bn 2; fc 2.
        assert_eq!(grads.len(), 1 + 3 * 6 + 2 + 2 + 2);
        for (depth, widen, classes, what) in [(12, 1, 10, "6n + 4"), (16, 0, 10, "widen")] {
            let err = WideResNetConfig::new(depth, widen, classes)
                .init(&Device::flex())
                .unwrap_err();
            assert!(err.to_string().contains(what), "{err}");
        }
    }
}
