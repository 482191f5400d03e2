//! What a sampler step reports to observers.

use crate::control::Phase;
use crate::kernel::StepSize;

/// Diagnostics of one step, per chain.
#[derive(Clone, Debug, Default)]
pub struct StepReport {
    /// The step index (0-based).
    pub step: u64,
    /// Stochastic energy `U~` of each chain *before* the move (at the point the gradient was
    /// taken).
    pub energies: Vec<f64>,
    /// The step size each chain moved with.
    pub step_sizes: Vec<StepSize>,
    /// Exploration or sampling (cyclical schedules); samples are collected in the sampling phase.
    pub phase: Option<Phase>,
}
