//! Multi-layer perceptron with configurable hidden sizes and activation.

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Device, Tensor, activation};
use serde::{Deserialize, Serialize};

use crate::network::Network;

mod closed_form;
mod dropout;
pub(crate) use sgmcmc_flex::tanh;

pub use closed_form::MlpPosterior;
pub use dropout::{Dropout, DropoutLayers};
pub(crate) use tanh::{tanh, tanh_slope, tanh_value};

#[cfg(test)]
mod dropout_tests;
#[cfg(test)]
mod tests;

/// Hidden-layer activation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Activation {
    /// `max(x, 0)`.
    Relu,
    /// `tanh(x)`.
    Tanh,
}

/// Configuration of an [`Mlp`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MlpConfig {
    /// Input features.
    pub inputs: usize,
    /// Hidden layer widths.
    pub hidden: Vec<usize>,
    /// Outputs.
    pub outputs: usize,
    /// Hidden activation.
    pub activation: Activation,
}

impl MlpConfig {
    /// Builds the network on `device` (burn's default Kaiming-uniform initialisation).
    pub fn init(&self, device: &Device) -> Mlp {
        let mut sizes = vec![self.inputs];
        sizes.extend(&self.hidden);
        sizes.push(self.outputs);
        Mlp {
            layers: sizes
                .windows(2)
                .map(|w| LinearConfig::new(w[0], w[1]).init(device))
                .collect(),
            relu: self.activation == Activation::Relu,
        }
    }
}

/// A fully connected network.
#[derive(Module, Debug)]
pub struct Mlp {
    layers: Vec<Linear>,
    relu: bool,
}

impl Network for Mlp {
    type Input = Tensor<2>;

    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let last = self.layers.len() - 1;
        self.layers.iter().enumerate().fold(x, |h, (i, layer)| {
            let h = crate::layers::linear(layer, h);
            match (i == last, self.relu) {
                (true, _) => h,
                (false, true) => activation::relu(h),
                (false, false) => tanh(h),
            }
        })
    }

    /// Dense layers and activations compute the same on either device.
    fn input_off_graph(&self, x: &Tensor<2>) -> Option<Tensor<2>> {
        Some(x.clone().inner())
    }
}
