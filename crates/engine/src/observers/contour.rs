//! A contour sampler's bins and multiplier over a run ([`ContourStats`]), checkpointed with it.

use sgmcmc_samplers::diagnostics::ContourStats;
use sgmcmc_samplers::sampler::{Sampler, StepReport};

use crate::RunError;
use crate::observer::{Observer, Progress, decode, encode};

/// Records every step's report into [`ContourStats`]: the multiplier over the whole run, the
/// bins from step `burn_in` on. A sampler without a contour (`stats` `None`) records nothing.
#[derive(Clone, Debug)]
pub struct ContourWatch {
    stats: Option<ContourStats>,
    burn_in: u64,
}

impl ContourWatch {
    /// Watches a run whose bins count from step `burn_in`, into `stats` (a contour sampler's,
    /// e.g. `ContourStats::new(reach)` with its `multiplier_reach`; `None` for others).
    pub fn new(stats: Option<ContourStats>, burn_in: u64) -> Self {
        Self { stats, burn_in }
    }

    /// The statistics recorded so far.
    pub fn into_stats(self) -> Option<ContourStats> {
        self.stats
    }
}

impl<S: Sampler> Observer<S> for ContourWatch {
    fn on_step(&mut self, at: &Progress, _: &S, report: &StepReport) -> Result<(), RunError> {
        if let Some(s) = self.stats.as_mut() {
            s.step(report, at.step >= self.burn_in);
        }
        Ok(())
    }

    fn save(&self) -> Result<Vec<u8>, RunError> {
        encode(&self.stats)
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RunError> {
        self.stats = decode(state)?;
        Ok(())
    }
}
