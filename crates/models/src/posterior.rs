//! The posterior of a network as a sampler target.

use burn::module::{Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::Tensor;
use sgmcmc_samplers::TargetError;
use sgmcmc_samplers::rng::ChainRng;
use sgmcmc_samplers::target::{Estimate, Target};

use crate::likelihood::{Likelihood, Targets};
use crate::network::Network;
use crate::noise::gamma_prior_energy;
use crate::prior::squared_norm;

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

/// `U~(theta) = prior_precision / 2 |theta|^2 + (N / n) * NLL(batch)` for a network `M`.
/// The model must live on an autodiff device (`device.autodiff()`).
///
/// `|theta|^2` runs over the trainable parameters only (not BatchNorm running statistics; see
/// [`squared_norm`]). With [`Likelihood::GaussianLearned`] the model carries `s = ln lambda`
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

impl Posterior {
    /// The differentiable stochastic energy of `model` on `batch`.
    pub fn energy<M: Network>(
        &self,
        model: &M,
        batch: &Batch<M::Input>,
    ) -> Result<Tensor<1>, TargetError> {
        self.likelihood.validate()?;
        let noise = model.log_precision();
        let out = model.forward(batch.x.clone());
        let n = out.dims()[0];
        let mut energy = self
            .likelihood
            .neg_log_lik_given(out, &batch.y, noise.map(Param::val))?
            .mul_scalar(self.scale.n_data as f64 / n as f64);
        if let (Likelihood::GaussianLearned { shape, rate }, Some(s)) = (self.likelihood, noise) {
            energy = energy + gamma_prior_energy(s.val(), shape, rate);
        }
        let exclude: Vec<ParamId> = noise.map(|p| p.id).into_iter().collect();
        Ok(match squared_norm(model, &exclude) {
            Some(sq) if self.scale.prior_precision > 0.0 => {
                energy + sq.mul_scalar(0.5 * self.scale.prior_precision)
            }
            _ => energy,
        })
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
        _rngs: &mut [ChainRng],
    ) -> Result<Estimate, TargetError> {
        let energy = self.energy(model, batch)?;
        let value = f64::from(energy.clone().into_scalar::<f32>());
        let grads = GradientsParams::from_grads(energy.backward(), model);
        Ok(Estimate {
            energies: vec![value],
            grads,
        })
    }

    fn batch_energies(
        &self,
        model: &M,
        batch: &Self::Batch,
        _rngs: &mut [ChainRng],
    ) -> Result<Vec<f64>, TargetError> {
        // Forward only: no backward pass.
        let energy = self.energy(model, batch)?;
        Ok(vec![f64::from(energy.into_scalar::<f32>())])
    }

    fn full_energy(&self, _model: &M) -> Result<Vec<f64>, TargetError> {
        Err(TargetError::Shape(
            "the full-data energy of a network posterior needs the dataset; evaluate \
             `Posterior::energy` over all batches instead"
                .into(),
        ))
    }
}
