//! The posterior of any burn module: a likelihood ([`NegLogLik`], e.g. a closure) and a
//! [`Prior`], as a sampler [`Target`].

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::Tensor;
use sgmcmc_samplers::TargetError;
use sgmcmc_samplers::density::{Energies, Estimate, Target};
use sgmcmc_samplers::rng::ChainRng;

use crate::nll::{BatchNll, NegLogLik};
use crate::prior::{Gaussian, Prior};

/// `U~(theta) = -ln p(theta) + (N / n) NLL(batch | theta)` (ALGORITHMS.md scaling: energies
/// and learning rates at full-data scale; a mean-loss learning rate `eta` is `lr = eta / N`).
/// The model must live on an autodiff device (`device.autodiff()`).
///
/// ```
/// use burn::nn::{Linear, LinearConfig};
/// use burn::tensor::{Device, Tensor};
/// use sgmcmc_models::{Gaussian, ModelPosterior, nll_fn};
///
/// /// Inputs and targets of a regression batch.
/// struct Xy(Tensor<2>, Tensor<2>);
///
/// // Unit-noise Gaussian likelihood: per-example NLL (r^2 / 2 up to a constant).
/// let nll = nll_fn(|m: &Linear, b: &Xy| {
///     let r = m.forward(b.0.clone()) - b.1.clone();
///     r.powi_scalar(2).mul_scalar(0.5).sum_dim(1).squeeze_dim(1)
/// });
/// let posterior = ModelPosterior::new(nll, 1000).with_prior(Gaussian { precision: 1.0 });
/// # let _ = posterior;
/// ```
#[derive(Clone, Debug)]
pub struct ModelPosterior<L, P = Gaussian> {
    /// The data term.
    pub likelihood: L,
    /// The prior.
    pub prior: P,
    /// Number of training points `N`.
    pub n_data: usize,
}

impl<L> ModelPosterior<L, Gaussian> {
    /// `likelihood` over `n_data` points with a unit Gaussian prior (precision 1).
    pub fn new(likelihood: L, n_data: usize) -> Self {
        Self {
            likelihood,
            prior: Gaussian { precision: 1.0 },
            n_data,
        }
    }
}

impl<L, P> ModelPosterior<L, P> {
    /// The same posterior with another prior.
    pub fn with_prior<Q>(self, prior: Q) -> ModelPosterior<L, Q> {
        ModelPosterior {
            likelihood: self.likelihood,
            prior,
            n_data: self.n_data,
        }
    }
}

/// The differentiable energy of `model` on `batch` under `likelihood` and `prior`.
pub fn energy<M, L, P>(
    likelihood: &L,
    prior: &P,
    n_data: usize,
    model: &M,
    batch: &L::Batch,
) -> Result<Tensor<1>, TargetError>
where
    M: Module,
    L: NegLogLik<M>,
    P: Prior<M>,
{
    let energy = data_energy(likelihood, n_data, model, batch)?;
    let exclude = likelihood.owned_params(model);
    Ok(plus(energy, prior.energy(model, &exclude)))
}

/// `a + b`, or `a` when `b` is zero (`None`).
fn plus(a: Tensor<1>, b: Option<Tensor<1>>) -> Tensor<1> {
    match b {
        Some(b) => a + b,
        None => a,
    }
}

/// `(N / n) NLL(batch | theta)` plus the likelihood's own prior terms: the energy without the
/// weight prior.
fn data_energy<M, L>(
    likelihood: &L,
    n_data: usize,
    model: &M,
    batch: &L::Batch,
) -> Result<Tensor<1>, TargetError>
where
    M: Module,
    L: NegLogLik<M>,
{
    Ok(scaled(likelihood.nll(model, batch)?, n_data))
}

/// `(N / n) nll.sum` plus `nll.owned_prior`.
fn scaled(nll: BatchNll, n_data: usize) -> Tensor<1> {
    let energy = nll.sum.mul_scalar(n_data as f64 / nll.n as f64);
    plus(energy, nll.owned_prior)
}

/// The plain value of the data term `data` plus the detached prior at `model` (its gradient
/// added to `grads` when given).
fn with_detached_prior<M, L, P>(
    posterior: &ModelPosterior<L, P>,
    model: &M,
    data: Tensor<1>,
    grads: Option<&mut GradientsParams>,
) -> Tensor<1>
where
    M: Module,
    L: NegLogLik<M>,
    P: Prior<M>,
{
    let exclude = posterior.likelihood.owned_params(model);
    plus(
        data.inner(),
        posterior.prior.add_detached(model, &exclude, grads),
    )
}

/// The energy's value (a plain tensor, read by the ensemble with the other chains') and
/// gradients: the data term through autodiff; the prior off the graph
/// when it [detaches](Prior::detaches) (its gradient added to the data term's), else on it.
fn energy_and_gradients<M, L, P>(
    posterior: &ModelPosterior<L, P>,
    model: &M,
    batch: &L::Batch,
) -> Result<(Tensor<1>, GradientsParams), TargetError>
where
    M: Module,
    L: NegLogLik<M>,
    P: Prior<M>,
{
    let ModelPosterior {
        likelihood,
        prior,
        n_data,
    } = posterior;
    if !prior.detaches() {
        let e = energy(likelihood, prior, *n_data, model, batch)?;
        let value = e.clone().inner();
        return Ok((value, GradientsParams::from_grads(e.backward(), model)));
    }
    let e = data_energy(likelihood, *n_data, model, batch)?;
    let mut grads = GradientsParams::from_grads(e.backward(), model);
    let value = with_detached_prior(posterior, model, e, Some(&mut grads));
    Ok((value, grads))
}

impl<M, L, P> Target<M> for ModelPosterior<L, P>
where
    M: Module,
    L: NegLogLik<M>,
    P: Prior<M>,
{
    type Batch = L::Batch;

    fn chains_per_module(&self, _model: &M) -> usize {
        1
    }

    fn estimate(
        &self,
        model: &M,
        batch: &L::Batch,
        _rngs: &mut [ChainRng],
    ) -> Result<Estimate, TargetError> {
        let (value, grads) = energy_and_gradients(self, model, batch)?;
        Ok(Estimate {
            energies: value.into(),
            grads,
        })
    }

    fn batch_energies(
        &self,
        model: &M,
        batch: &L::Batch,
        _rngs: &mut [ChainRng],
    ) -> Result<Energies, TargetError> {
        // Forward only: a detaching prior adds its value without graph nodes, and the data
        // term runs off the autodiff graph when the likelihood can
        // ([`NegLogLik::nll_off_graph`]; burn frees forward-only graphs only at a backward).
        let (likelihood, prior) = (&self.likelihood, &self.prior);
        let e = if prior.detaches() {
            let data = match likelihood.nll_off_graph(model, batch) {
                Some(nll) => scaled(nll?, self.n_data),
                None => data_energy(likelihood, self.n_data, model, batch)?,
            };
            with_detached_prior(self, model, data, None)
        } else {
            energy(likelihood, prior, self.n_data, model, batch)?
        };
        Ok(e.into())
    }

    fn full_energy(&self, _model: &M) -> Result<Vec<f64>, TargetError> {
        Err(TargetError::Shape(
            "the full-data energy of a network posterior needs the dataset; sum the energies \
             of its batches instead"
                .into(),
        ))
    }
}
