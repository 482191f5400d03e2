//! The posterior of a network as a sampler target.

use burn::module::{Param, ParamId};
use burn::tensor::{Int, Tensor};
use sgmcmc_samplers::TargetError;
use sgmcmc_samplers::density::{Energies, Estimate, Target};
use sgmcmc_samplers::rng::ChainRng;

use crate::likelihood::{Likelihood, Targets};
use crate::model_posterior::{ModelPosterior, energy};
use crate::network::Network;
use crate::nll::{BatchNll, NegLogLik};
use crate::noise::gamma_prior_energy;
use crate::prior::Gaussian;

/// Full-data scaling of a posterior.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scale {
    /// Number of training points `N`.
    pub n_data: usize,
    /// Prior precision at full-data scale (`N * weight_decay` of the mean loss).
    pub prior_precision: f64,
}

impl Scale {
    /// From the mean-loss view: `weight_decay` on the mean loss over `n_data` points.
    pub fn from_weight_decay(n_data: usize, weight_decay: f64) -> Self {
        Self {
            n_data,
            prior_precision: n_data as f64 * weight_decay,
        }
    }
}

/// `U~(theta) = prior_precision / 2 |theta|^2 + (N / n) * NLL(batch)` for a network `M`: the
/// [`ModelPosterior`] of a built-in [`Likelihood`] and the isotropic
/// [`Gaussian`] prior, by its scale.
/// The model must live on an autodiff device (`device.autodiff()`).
///
/// `|theta|^2` runs over the trainable parameters only (not BatchNorm running statistics; see
/// [`squared_norm`](crate::prior::squared_norm)). With [`Likelihood::GaussianLearned`] the model carries `s = ln lambda`
/// ([`Network::log_precision`]); `s` is left out of the Gaussian weight prior and gets the
/// Gamma prior instead:
/// `U~(theta, s) = prior_precision / 2 |theta|^2 + (N / n) sum_B [e^s / 2 r^2 - s / 2 +
/// ln(2 pi) / 2] - shape s + rate e^s` (see [`crate::noise`]).
#[derive(Clone, Debug)]
pub struct Posterior {
    /// Observation model.
    pub likelihood: Likelihood,
    /// Data size and prior.
    pub scale: Scale,
}

/// A minibatch: inputs and targets.
#[derive(Clone, Debug)]
pub struct Batch<I> {
    /// Inputs.
    pub x: I,
    /// Targets.
    pub y: Targets,
}

impl<const D: usize> From<(Tensor<D>, Tensor<1, Int>)> for Batch<Tensor<D>> {
    /// Inputs with class labels (e.g. a classification batcher's output).
    fn from((x, y): (Tensor<D>, Tensor<1, Int>)) -> Self {
        Self {
            x,
            y: Targets::Class(y),
        }
    }
}

impl From<(Tensor<2>, Tensor<2>)> for Batch<Tensor<2>> {
    /// Features with real targets `[n, outputs]` (e.g. a regression batcher's output).
    fn from((x, y): (Tensor<2>, Tensor<2>)) -> Self {
        Self {
            x,
            y: Targets::Real(y),
        }
    }
}

impl Posterior {
    /// The differentiable stochastic energy of `model` on `batch`.
    pub fn energy<M: Network>(
        &self,
        model: &M,
        batch: &Batch<M::Input>,
    ) -> Result<Tensor<1>, TargetError> {
        energy(
            &self.likelihood,
            &self.prior(),
            self.scale.n_data,
            model,
            batch,
        )
    }

    /// The isotropic Gaussian prior of the scale.
    pub fn prior(&self) -> Gaussian {
        Gaussian {
            precision: self.scale.prior_precision,
        }
    }

    /// The same posterior as a [`ModelPosterior`] (what its [`Target`] impl runs).
    pub fn as_model_posterior(&self) -> ModelPosterior<Likelihood, Gaussian> {
        ModelPosterior {
            likelihood: self.likelihood,
            prior: self.prior(),
            n_data: self.scale.n_data,
        }
    }
}

/// The data term of a network posterior: the built-in [`Likelihood`]s on a [`Network`]'s
/// output, for batches of inputs and targets.
impl<M: Network> NegLogLik<M> for Likelihood {
    type Batch = Batch<M::Input>;

    fn nll(&self, model: &M, batch: &Batch<M::Input>) -> Result<BatchNll, TargetError> {
        self.validate()?;
        let noise = model.log_precision();
        let out = model.forward(batch.x.clone());
        let n = out.dims()[0];
        let sum = self.neg_log_lik_given(out, &batch.y, noise.map(Param::val))?;
        let owned_prior = match (self, noise) {
            (Likelihood::GaussianLearned { shape, rate }, Some(s)) => {
                Some(gamma_prior_energy(s.val(), *shape, *rate))
            }
            _ => None,
        };
        Ok(BatchNll {
            sum,
            n,
            owned_prior,
        })
    }

    fn owned_params(&self, model: &M) -> Vec<ParamId> {
        model.log_precision().map(|p| p.id).into_iter().collect()
    }

    fn nll_off_graph(
        &self,
        model: &M,
        batch: &Batch<M::Input>,
    ) -> Option<Result<BatchNll, TargetError>> {
        let batch = Batch {
            x: model.input_off_graph(&batch.x)?,
            y: batch.y.inner(),
        };
        Some(self.nll(&model.valid(), &batch))
    }
}

impl<M: Network> Target<M> for Posterior {
    type Batch = Batch<M::Input>;

    fn chains_per_module(&self, _model: &M) -> usize {
        1
    }

    fn estimate(
        &self,
        model: &M,
        batch: &Self::Batch,
        rngs: &mut [ChainRng],
    ) -> Result<Estimate, TargetError> {
        self.as_model_posterior().estimate(model, batch, rngs)
    }

    fn batch_energies(
        &self,
        model: &M,
        batch: &Self::Batch,
        rngs: &mut [ChainRng],
    ) -> Result<Energies, TargetError> {
        // Forward only: no backward pass.
        self.as_model_posterior().batch_energies(model, batch, rngs)
    }

    fn full_energy(&self, model: &M) -> Result<Vec<f64>, TargetError> {
        self.as_model_posterior().full_energy(model)
    }
}
