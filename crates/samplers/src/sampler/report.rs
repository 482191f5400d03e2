//! What a sampler step reports to observers.

use std::ops::Range;

use crate::control::Phase;
use crate::kernel::StepSize;

/// Diagnostics of one step, per chain: every vector has one entry per chain of the run, in
/// global chain order, also when the chains are spread over ranks ([`crate::comm`]). Coupled
/// samplers (replica exchange, contour) gather the energies every step, so every rank's report
/// is the whole run's; independent chains exchange nothing, and a rank's report holds only its
/// own chains' energies (the entries in [`StepReport::local`]).
#[derive(Clone, Debug, Default)]
pub struct StepReport {
    /// The global indices of the chains this process steps (all of them in one process).
    pub local: Range<usize>,
    /// The step index (0-based).
    pub step: u64,
    /// Stochastic energy `U~` of each chain *before* the move (at the point the gradient was
    /// taken).
    pub energies: Vec<f64>,
    /// The step size each chain moved with.
    pub step_sizes: Vec<StepSize>,
    /// Exploration or sampling (cyclical schedules); samples are collected in the sampling phase.
    pub phase: Option<Phase>,
    /// Energy bin `J` of each chain's pre-move point (contour samplers; empty otherwise).
    pub bins: Vec<usize>,
    /// Importance weight of each chain's pre-move point `x_k` (`theta[J]^zeta` for contour
    /// samplers, 1 otherwise): a sample `x_k` collected *before* step `k` carries this weight.
    pub weights: Vec<f64>,
    /// `ln` of `weights`, exact where the weight itself under- or overflows (`zeta = 3e4` on
    /// MNIST gives weights like `exp(-2e5)`); 0 for plain samplers.
    pub log_weights: Vec<f64>,
    /// Moves with a negative gradient multiplier so far ("bouncy" escapes).
    pub bouncy_moves: u64,
    /// Rung of each chain after this step's swaps (replica exchange; empty otherwise): the
    /// chain on rung 0 samples the target, from the pre-move point of this step.
    pub rungs: Vec<usize>,
}
