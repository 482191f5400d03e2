//! Progress for a bar or a log line: the library draws nothing itself.

use sgmcmc_samplers::sampler::{Sampler, StepReport};

use crate::error::RunError;
use crate::observer::{Observer, Progress};

/// Calls `f(done, total)` about `updates` times over a run (default 1000) and once at the end,
/// e.g. to move a progress bar: cheap enough for runs of millions of steps per second.
pub struct ProgressReport<F> {
    f: F,
    updates: u64,
    every: u64,
}

impl<F: FnMut(u64, u64)> ProgressReport<F> {
    /// Reports to `f(done, total)`.
    pub fn new(f: F) -> Self {
        Self {
            f,
            updates: 1000,
            every: 1,
        }
    }

    /// About `n` updates per run.
    pub fn updates(mut self, n: u64) -> Self {
        self.updates = n.max(1);
        self
    }
}

impl<S: Sampler, F: FnMut(u64, u64)> Observer<S> for ProgressReport<F> {
    fn on_start(&mut self, at: &Progress, _: &S) -> Result<(), RunError> {
        self.every = (at.total / self.updates).max(1);
        (self.f)(at.step, at.total);
        Ok(())
    }

    fn on_step(&mut self, at: &Progress, _: &S, _: &StepReport) -> Result<(), RunError> {
        let done = at.step + 1;
        if done.is_multiple_of(self.every) || done == at.total {
            (self.f)(done, at.total);
        }
        Ok(())
    }
}
