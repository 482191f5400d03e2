//! The papers' algorithms as compositions of the control layer and a kernel, behind one
//! [`Sampler`] trait: one call advances every chain one step and returns a [`StepReport`].

mod contour;
mod driver;
mod replica;
mod report;
mod sgmcmc;

pub use contour::{Contour, ContourConfig};
pub use replica::{ReplicaConfig, ReplicaExchange, SwapRule};
pub use report::StepReport;
pub use sgmcmc::{Sgmcmc, SgmcmcConfig};

use crate::error::SamplerError;

/// A stochastic-gradient MCMC sampler over some chains.
pub trait Sampler {
    /// What one step consumes (a minibatch, `()` for toys).
    type Batch;

    /// Number of chains.
    fn n_chains(&self) -> usize;

    /// Steps taken so far.
    fn steps_done(&self) -> u64;

    /// Advances every chain one step on `batch`. A non-finite energy stops the run with
    /// [`SamplerError::Diverged`] naming the chain and the step.
    fn step(&mut self, batch: &Self::Batch) -> Result<&StepReport, SamplerError>;
}

/// Errors with [`SamplerError::Diverged`] on the first non-finite energy.
pub(crate) fn check_finite(energies: &[f64], step: u64) -> Result<(), SamplerError> {
    match energies.iter().position(|e| !e.is_finite()) {
        None => Ok(()),
        Some(chain) => Err(SamplerError::Diverged {
            chain,
            step,
            energy: energies[chain],
        }),
    }
}
