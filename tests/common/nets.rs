//! Small networks and batches shared by the posterior tests.

use sgmcmc::burn::tensor::{Device, Distribution, Int, Tensor, TensorData};
use sgmcmc::models::{Batch, ResNet, ResNetConfig, Targets};

/// `n` class labels in `0..classes`, spread over the classes.
pub fn labels(n: usize, classes: i64, device: &Device) -> Tensor<1, Int> {
    let y: Vec<i64> = (0..n as i64).map(|i| (i * 7 + 3) % classes).collect();
    Tensor::from_data(TensorData::new(y, [n]), device)
}

/// A ResNet8 on one-channel 8x8 images with 3 classes (batch norm included), and a batch of 4
/// random images with their labels.
pub fn resnet8(device: &Device) -> (ResNet, Batch<Tensor<4>>) {
    let resnet = ResNetConfig {
        in_channels: 1,
        ..ResNetConfig::new(8, 3)
    }
    .init(device)
    .unwrap();
    let x = Tensor::<4>::random([4, 1, 8, 8], Distribution::Normal(0.0, 1.0), device);
    let batch = Batch {
        x,
        y: Targets::Class(labels(4, 3, device)),
    };
    (resnet, batch)
}
