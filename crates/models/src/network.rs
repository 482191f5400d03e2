//! What a posterior needs from a network.

use burn::module::Module;
use burn::tensor::Tensor;

/// A burn module mapping a batch of inputs to `[batch, outputs]`.
pub trait Network: Module {
    /// Input batch type (`Tensor<2>` features, `Tensor<4>` images).
    type Input: Clone;
    /// The forward pass.
    fn forward(&self, x: Self::Input) -> Tensor<2>;
}
