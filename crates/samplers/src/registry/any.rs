//! Any registry sampler behind one type.

use crate::checkpoint::SamplerState;
use crate::control::ContourTheta;
use crate::ensemble::Ensemble;
use crate::error::SamplerError;
use crate::sampler::{Contour, ReplicaExchange, Sampler, Sgmcmc, StepReport};

/// A plain ([`Sgmcmc`]), contour, replica-exchange or variance-reduced sampler over the chains of `E`, as built from the
/// registry ([`super::SamplerSpec::build`]); each boxed, so the enum stays a pointer wide.
pub enum AnySampler<E: Ensemble> {
    /// Independent chains.
    Sgmcmc(Box<Sgmcmc<E>>),
    /// A contour sampler.
    Contour(Box<Contour<E>>),
    /// Replica exchange.
    Replica(Box<ReplicaExchange<E>>),
    /// Variance-reduced replica exchange ([`super::SamplerSpec::build_with_data`]), behind the
    /// [`Sampler`] trait: it needs [`crate::ensemble::SnapshotEnergy`] chains, which the other
    /// variants do not.
    VarianceReduced(Box<dyn Sampler<Batch = E::Batch, Ensemble = E> + Send>),
}

/// Runs `$body` with `$s` bound to the inner sampler, whichever it is.
macro_rules! each {
    ($self:expr, $s:ident => $body:expr) => {
        match $self {
            AnySampler::Sgmcmc($s) => $body,
            AnySampler::Contour($s) => $body,
            AnySampler::Replica($s) => $body,
            AnySampler::VarianceReduced($s) => $body,
        }
    };
}

impl<E: Ensemble> AnySampler<E> {
    /// The contour sampler, if this is one.
    pub fn as_contour(&self) -> Option<&Contour<E>> {
        match self {
            Self::Contour(c) => Some(&**c),
            _ => None,
        }
    }

    /// The replica-exchange sampler, if this is one.
    pub fn as_replica(&self) -> Option<&ReplicaExchange<E>> {
        match self {
            Self::Replica(r) => Some(&**r),
            _ => None,
        }
    }

    /// The shared contour `theta`, if any.
    pub fn theta(&self) -> Option<&ContourTheta> {
        self.as_contour().map(Contour::theta)
    }

    /// Contour samplers: how far the gradient multiplier can move over the next `steps` steps,
    /// to first order ([`Contour::multiplier_reach`]).
    pub fn multiplier_reach(&self, steps: u64) -> Option<f64> {
        self.as_contour().map(|c| c.multiplier_reach(steps))
    }
}

impl<E: Ensemble> Sampler for AnySampler<E> {
    type Batch = E::Batch;
    type Ensemble = E;

    fn ensemble(&self) -> &E {
        each!(self, s => s.ensemble())
    }

    fn n_chains(&self) -> usize {
        each!(self, s => s.n_chains())
    }

    fn local_chains(&self) -> std::ops::Range<usize> {
        each!(self, s => s.local_chains())
    }

    fn steps_done(&self) -> u64 {
        each!(self, s => s.steps_done())
    }

    fn step(&mut self, batch: &E::Batch) -> Result<&StepReport, SamplerError> {
        each!(self, s => s.step(batch))
    }

    fn report(&self) -> &StepReport {
        each!(self, s => s.report())
    }

    fn state(&self) -> Result<SamplerState, SamplerError> {
        each!(self, s => s.state())
    }

    fn restore(&mut self, state: SamplerState) -> Result<(), SamplerError> {
        each!(self, s => s.restore(state))
    }
}
