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

/// Calls `f(progress, sampler)` before every step: the chains as they are before it.
pub struct BeforeStep<F>(pub F);

impl<S: Sampler, F: FnMut(&Progress, &S) -> Result<(), RunError>> Observer<S> for BeforeStep<F> {
    fn before_step(&mut self, at: &Progress, sampler: &S) -> Result<(), RunError> {
        (self.0)(at, sampler)
    }
}

/// Calls `f(progress, sampler, report)` after every step: the chains as the step left them.
pub struct AfterStep<F>(pub F);

impl<S, F> Observer<S> for AfterStep<F>
where
    S: Sampler,
    F: FnMut(&Progress, &S, &StepReport) -> Result<(), RunError>,
{
    fn on_step(&mut self, at: &Progress, sampler: &S, report: &StepReport) -> Result<(), RunError> {
        (self.0)(at, sampler, report)
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
