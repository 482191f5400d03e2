//! What a posterior needs from a network.

use burn::module::{Module, Param};
use burn::tensor::Tensor;

/// A burn module mapping a batch of inputs to `[batch, outputs]`.
pub trait Network: Module {
    /// Input batch type (`Tensor<2>` features, `Tensor<4>` images).
    type Input: Clone + Send + Sync;
    /// The forward pass.
    fn forward(&self, x: Self::Input) -> Tensor<2>;
    /// The sampled log noise precision `s = ln lambda` (a one-element parameter), for models that
    /// learn the noise of a Gaussian likelihood ([`WithNoise`](crate::WithNoise)); `None` for a
    /// plain network. The posterior uses its value in the likelihood and its id to keep it out of
    /// the isotropic weight prior.
    fn log_precision(&self) -> Option<&Param<Tensor<1>>> {
        None
    }

    /// `x` with its tensors on the inner device (`Tensor::inner`), when `self.valid()`'s
    /// forward pass on it computes what `self.forward(x)` computes on the autodiff device; `None`
    /// (the default) when it may not (batch norm uses its running statistics off the autodiff
    /// device, dropout is off) or the input cannot move. Forward-only energies then run
    /// without an autodiff graph ([`NegLogLik::nll_off_graph`](crate::NegLogLik::nll_off_graph)).
    fn input_off_graph(&self, _x: &Self::Input) -> Option<Self::Input> {
        None
    }
}
