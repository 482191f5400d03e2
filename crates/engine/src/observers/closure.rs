//! Closures as observers.

use sgmcmc_samplers::sampler::{Sampler, StepReport};

use crate::error::RunError;
use crate::observer::{Kept, Observer, Points, Progress};

/// Calls `f(progress, report)` after every step.
pub struct OnStep<F>(pub F);

impl<F> OnStep<F> {
    /// Wraps `f`.
    pub fn new(f: F) -> Self {
        Self(f)
    }
}

impl<S: Sampler, F: FnMut(&Progress, &StepReport)> Observer<S> for OnStep<F> {
    fn on_step(&mut self, at: &Progress, _: &S, report: &StepReport) -> Result<(), RunError> {
        (self.0)(at, report);
        Ok(())
    }
}

/// Calls `f(kept)` at every kept step with the chains' pre-move points.
pub struct OnSample<F>(pub F);

impl<F> OnSample<F> {
    /// Wraps `f`.
    pub fn new(f: F) -> Self {
        Self(f)
    }
}

impl<S: Sampler, F: FnMut(&Kept<'_, Points<S>>)> Observer<S> for OnSample<F> {
    fn wants_points(&self) -> bool {
        true
    }

    fn on_sample(&mut self, _: &Progress, kept: &Kept<'_, Points<S>>) -> Result<(), RunError> {
        (self.0)(kept);
        Ok(())
    }
}
