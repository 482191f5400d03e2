//! Stopping a run whose chains left their valid range.

use sgmcmc_samplers::sampler::{Sampler, StepReport};

use crate::error::RunError;
use crate::observer::{Observer, Progress};

/// Stops the run with [`RunError::Diverged`] (naming the chain and the step) when a chain's
/// energy exceeds `max_energy`, or its gradient multiplier or log weight is not finite. A
/// non-finite energy already stops every sampler; the bound catches a chain that is running
/// away before it overflows.
#[derive(Clone, Debug, Default)]
pub struct DivergenceGuard {
    max_energy: Option<f64>,
}

impl DivergenceGuard {
    /// A guard on finiteness only.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also stops when an energy exceeds `u`.
    pub fn max_energy(mut self, u: f64) -> Self {
        self.max_energy = Some(u);
        self
    }
}

impl<S: Sampler> Observer<S> for DivergenceGuard {
    fn on_step(&mut self, at: &Progress, _: &S, r: &StepReport) -> Result<(), RunError> {
        let diverged = |chain: usize, what: String| RunError::Diverged {
            chain,
            step: at.step,
            what,
        };
        for (p, e) in r.energies.iter().enumerate() {
            if let Some(max) = self.max_energy
                && *e > max
            {
                return Err(diverged(p, format!("energy {e} exceeds {max}")));
            }
        }
        for (p, s) in r.step_sizes.iter().enumerate() {
            if !s.multiplier.is_finite() {
                return Err(diverged(p, format!("gradient multiplier {}", s.multiplier)));
            }
        }
        for (p, w) in r.log_weights.iter().enumerate() {
            if w.is_nan() {
                return Err(diverged(p, "importance weight is NaN".into()));
            }
        }
        Ok(())
    }
}
