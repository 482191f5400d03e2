//! The papers' small CNN: conv5x5(1 -> 32) - maxpool2 - conv5x5(32 -> 64) - maxpool2 - fc 50 -
//! fc classes (ReLU), for 28x28 images.

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Device, Tensor, activation};
use serde::{Deserialize, Serialize};

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

impl Network for Cnn {
    type Input = Tensor<4>;

    fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        let h = self.pool.forward(activation::relu(self.conv1.forward(x)));
        let h = self.pool.forward(activation::relu(self.conv2.forward(h)));
        let h: Tensor<2> = h.flatten(1, 3);
        self.fc2.forward(activation::relu(self.fc1.forward(h)))
    }
}
