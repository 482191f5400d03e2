//! What a sampler consumes: stochastic energies and their gradients at full-data scale.
//!
//! For a model with parameters `x` and data `d_1..d_N`, the energy is the *sum* energy
//! `U(x) = -log p(x) - sum_i log p(d_i | x)` and its minibatch estimate on `B`, `|B| = n`, is
//! `U~(x) = -log p(x) - (N / n) sum_{i in B} log p(d_i | x)` (ALGORITHMS.md, "Notation and
//! scaling"). Learning rates are at the same full-data scale: a mean-loss learning rate `eta`
//! corresponds to `lr = eta / N`, and a weight decay `wd` on the mean loss to a prior precision
//! `N wd`.

pub mod data_mixture;
pub mod particles;
pub mod toy;

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::Tensor;

use crate::error::TargetError;
use crate::rng::ChainRng;

/// A stochastic energy estimate for the chains one module hosts.
pub struct Estimate {
    /// `U~` of each hosted chain (full-data scale), in row order.
    pub energies: Energies,
    /// Gradients of the summed energies with respect to the module's parameters (chains in
    /// separate rows do not interact, so row `p` of a gradient is chain `p`'s gradient).
    pub grads: GradientsParams,
}

/// The energies of an [`Estimate`]: on the host, or still on the module's device. A
/// [`ModuleEnsemble`](crate::ensemble::ModuleEnsemble) reads the device energies of all its
/// modules in one transfer per step ([`crate::transfer`]), after every module's work is
/// queued: on an accelerator the chains run back to back and the host waits once.
#[derive(Clone, Debug)]
pub enum Energies {
    /// Values on the host, in row order.
    Host(Vec<f64>),
    /// A plain (non-autodiff) `[rows]` float tensor, in row order.
    Device(Box<Tensor<1>>),
}

impl Energies {
    /// Number of energies (a shape query: no transfer).
    pub fn len(&self) -> usize {
        match self {
            Self::Host(v) => v.len(),
            Self::Device(t) => t.dims()[0],
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values on the host (one read for device energies).
    pub fn into_host(self) -> Result<Vec<f64>, TargetError> {
        match self {
            Self::Host(v) => Ok(v),
            Self::Device(t) => crate::transfer::read_f64(*t),
        }
    }

    /// The values of several estimates' energies, in order: the device ones in one read
    /// (`Tensor::cat`) when there are several and they share a device, else one read each.
    pub fn read_all(parts: Vec<Energies>) -> Result<Vec<Vec<f64>>, TargetError> {
        let devices: Vec<_> = parts
            .iter()
            .filter_map(|e| match e {
                Self::Device(t) => Some(t.device()),
                Self::Host(_) => None,
            })
            .collect();
        if devices.len() < 2 || devices.windows(2).any(|w| w[0] != w[1]) {
            return parts.into_iter().map(Self::into_host).collect();
        }
        // Host values stay; each device part leaves its length and joins the one read.
        let mut tensors = Vec::with_capacity(devices.len());
        let slots: Vec<Result<Vec<f64>, usize>> = parts
            .into_iter()
            .map(|e| match e {
                Self::Host(v) => Ok(v),
                Self::Device(t) => {
                    let n = t.dims()[0];
                    tensors.push(*t);
                    Err(n)
                }
            })
            .collect();
        let values = crate::transfer::read_f64(Tensor::cat(tensors, 0))?;
        let mut at = 0;
        Ok(slots
            .into_iter()
            .map(|slot| {
                slot.unwrap_or_else(|n| {
                    at += n;
                    values[at - n..at].to_vec()
                })
            })
            .collect())
    }
}

impl From<Vec<f64>> for Energies {
    fn from(v: Vec<f64>) -> Self {
        Self::Host(v)
    }
}

impl From<Tensor<1>> for Energies {
    /// Energies still on the device (`t` is taken off the autodiff graph).
    fn from(t: Tensor<1>) -> Self {
        Self::Device(Box::new(t.inner()))
    }
}

/// A target `pi(x) ∝ exp(-U(x) / tau)` over the parameters of module `M`.
///
/// Targets and batches are shared by the threads that step independent chains, hence `Sync`.
pub trait Target<M: Module>: Sync {
    /// What one step consumes (a minibatch; `()` for analytic toys).
    type Batch: Sync;

    /// Number of chains one module hosts: 1 for a network, `P` for `P` toy chains stored as the
    /// rows of one `[P, d]` parameter.
    fn chains_per_module(&self, model: &M) -> usize;

    /// Stochastic energy and gradient on `batch` at full-data scale. `rngs` holds one stream per
    /// hosted chain, for targets that inject noise.
    fn estimate(
        &self,
        model: &M,
        batch: &Self::Batch,
        rngs: &mut [ChainRng],
    ) -> Result<Estimate, TargetError>;

    /// Stochastic energies alone on `batch` (no gradient), e.g. of a control-variate snapshot
    /// (on the device when the target leaves them there: [`Energies::into_host`] reads them);
    /// the default runs [`Target::estimate`] and drops the gradient.
    fn batch_energies(
        &self,
        model: &M,
        batch: &Self::Batch,
        rngs: &mut [ChainRng],
    ) -> Result<Energies, TargetError> {
        Ok(self.estimate(model, batch, rngs)?.energies)
    }

    /// Exact full-data energy of each hosted chain (for control variates and diagnostics).
    fn full_energy(&self, model: &M) -> Result<Vec<f64>, TargetError>;

    /// Whether [`Target::batch_energies`] adds injected noise to the energies (a toy target's
    /// emulated minibatch noise), so that two evaluations on the same batch differ: false for
    /// data posteriors, whose minibatch energies are exact given the batch.
    fn noisy_energies(&self) -> bool {
        false
    }
}
