//! The papers' algorithms as compositions of the control layer and a kernel, behind one
//! [`Sampler`] trait: one call advances every chain one step and returns a [`StepReport`].

mod contour;
mod driver;
mod replica;
mod replica_summary;
mod report;
mod sgmcmc;
mod variance_reduced;

pub use contour::{Contour, ContourConfig};
pub use replica::{ReplicaConfig, ReplicaExchange, SwapRule, VarianceRefresh};
pub use replica_summary::ReplicaSummary;
pub use report::StepReport;
pub use sgmcmc::{Sgmcmc, SgmcmcConfig};
pub use variance_reduced::{
    BatchDraw, ControlSettings, FullPass, ReductionStats, VarianceReduced, VrConfig, VrRefresh,
};

use crate::checkpoint::SamplerState;
use crate::ensemble::Ensemble;
use crate::error::SamplerError;

/// A stochastic-gradient MCMC sampler over the chains of an [`Ensemble`].
pub trait Sampler {
    /// What one step consumes (a minibatch, `()` for toys).
    type Batch;

    /// Where the chains live.
    type Ensemble: Ensemble<Batch = Self::Batch>;

    /// The chains (e.g. to read their modules or positions between steps).
    fn ensemble(&self) -> &Self::Ensemble;

    /// Number of chains over all ranks ([`crate::comm`]; the ensemble's in one process).
    fn n_chains(&self) -> usize {
        self.ensemble().n_chains()
    }

    /// The global indices of the chains in [`Sampler::ensemble`] (`0..n_chains()` in one
    /// process): ensemble chain `i` is chain `local_chains().start + i` of the reports.
    fn local_chains(&self) -> std::ops::Range<usize> {
        0..self.ensemble().n_chains()
    }

    /// Steps taken so far.
    fn steps_done(&self) -> u64;

    /// Advances every chain one step on `batch`. A non-finite energy stops the run with
    /// [`SamplerError::Diverged`] naming the chain and the step.
    fn step(&mut self, batch: &Self::Batch) -> Result<&StepReport, SamplerError>;

    /// The report of the last step (a default report before the first).
    fn report(&self) -> &StepReport;

    /// Everything the sampler needs to continue bit for bit ([`crate::checkpoint`]).
    fn state(&self) -> Result<SamplerState, SamplerError>;

    /// Restores a state taken from a sampler of the same configuration and chains; errors
    /// (leaving the sampler as it was) when it does not fit.
    fn restore(&mut self, state: SamplerState) -> Result<(), SamplerError>;
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
