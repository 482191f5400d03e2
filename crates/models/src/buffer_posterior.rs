//! An MLP's Gaussian-regression posterior over data that grow while the chains run (a bandit's
//! replay buffer, online learning).
//!
//! `U~(theta) = prior_precision / 2 |theta|^2 + (N / n) sum_B [lambda / 2 (f(x) - r)^2 +
//! ln(2 pi / lambda) / 2]` with `N` the buffer's size when the step is taken (set with
//! [`BufferPosterior::set_n`] before each training round), so the likelihood always weighs the
//! whole buffer once. With [`Dropout`] the network's output is the mean of masked passes, the
//! masks drawn from the chain's own stream ([`MlpPosterior`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use burn::tensor::Tensor;
use sgmcmc_samplers::TargetError;
use sgmcmc_samplers::density::{Energies, Estimate, Target};
use sgmcmc_samplers::rng::ChainRng;

use crate::mlp::{Dropout, MlpPosterior};
use crate::posterior::Batch;
use crate::{Likelihood, Mlp, Posterior, Scale};

/// [`MlpPosterior`] with a shared, settable data size `N`.
#[derive(Clone, Debug)]
pub struct BufferPosterior {
    /// Gaussian noise precision `lambda`.
    pub noise_precision: f64,
    /// Prior precision of every weight and bias.
    pub prior_precision: f64,
    /// Dropout on the hidden activations.
    pub dropout: Option<Dropout>,
    n: Arc<AtomicUsize>,
}

impl BufferPosterior {
    /// The posterior over an empty buffer (`N = 0` until [`Self::set_n`]).
    pub fn new(noise_precision: f64, prior_precision: f64) -> Self {
        Self {
            noise_precision,
            prior_precision,
            dropout: None,
            n: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// The same posterior with `dropout` (none: the deterministic network).
    pub fn with_dropout(mut self, dropout: Option<Dropout>) -> Self {
        self.dropout = dropout;
        self
    }

    /// Sets `N` for every later step (shared by the clones the sampler holds).
    pub fn set_n(&self, n: usize) {
        self.n.store(n, Ordering::Relaxed);
    }

    /// The posterior at the current `N` (its [`MlpPosterior::predict`] is the network's
    /// prediction: with dropout, the mean of the masked passes).
    pub fn now(&self) -> MlpPosterior {
        MlpPosterior {
            posterior: Posterior {
                likelihood: Likelihood::Gaussian {
                    precision: self.noise_precision,
                },
                scale: Scale {
                    n_data: self.n.load(Ordering::Relaxed),
                    prior_precision: self.prior_precision,
                },
            },
            dropout: self.dropout,
        }
    }
}

impl Target<Mlp> for BufferPosterior {
    type Batch = Batch<Tensor<2>>;

    fn chains_per_module(&self, _model: &Mlp) -> usize {
        1
    }

    fn estimate(
        &self,
        model: &Mlp,
        batch: &Self::Batch,
        rngs: &mut [ChainRng],
    ) -> Result<Estimate, TargetError> {
        self.now().estimate(model, batch, rngs)
    }

    fn batch_energies(
        &self,
        model: &Mlp,
        batch: &Self::Batch,
        rngs: &mut [ChainRng],
    ) -> Result<Energies, TargetError> {
        self.now().batch_energies(model, batch, rngs)
    }

    fn full_energy(&self, model: &Mlp) -> Result<Vec<f64>, TargetError> {
        self.now().full_energy(model)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Activation, MlpConfig, Targets};
    use burn::tensor::{Device, TensorData};

    use super::*;

    /// The energy follows `N`: with the prior off, `U~` is `N / n` times the batch's NLL, so
    /// raising `N` from 2 to 10 multiplies it by 5 (a fixed `N` would give ratio 1).
    #[test]
    fn energy_scales_with_the_buffer_size() {
        let device = Device::flex();
        let mlp = MlpConfig {
            inputs: 3,
            hidden: vec![4],
            outputs: 1,
            activation: Activation::Relu,
        }
        .init(&device);
        let batch = Batch {
            x: Tensor::from_data(
                TensorData::new(vec![1.0f32, 0.0, 1.0, 0.0, 1.0, 1.0], [2, 3]),
                &device,
            ),
            y: Targets::Real(Tensor::from_data(
                TensorData::new(vec![5.0f32, -35.0], [2, 1]),
                &device,
            )),
        };
        let post = BufferPosterior::new(2.0, 0.0);
        let clone = post.clone();
        let mut rngs = [];
        post.set_n(2);
        let u2 = clone
            .batch_energies(&mlp, &batch, &mut rngs)
            .unwrap()
            .into_host()
            .unwrap()[0];
        post.set_n(10);
        let u10 = clone
            .batch_energies(&mlp, &batch, &mut rngs)
            .unwrap()
            .into_host()
            .unwrap()[0];
        // f32 energies of a few hundred: relative rounding ~1e-6.
        assert!((u10 / u2 - 5.0).abs() < 1e-5, "{u2} {u10}");
    }
}
