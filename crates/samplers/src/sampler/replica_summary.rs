//! What a replica-exchange run did: its swap statistics ([`ReplicaSummary`]) and a row of its
//! state for a trace ([`ReplicaExchange::trace_row`]).

use serde::Serialize;

use super::ReplicaExchange;
use crate::ensemble::Ensemble;

impl<E: Ensemble> ReplicaExchange<E> {
    /// A trace row of the current state: rung of each replica, learning rate of each rung,
    /// buffer `C`, cumulative accepted swaps of each pair, cumulative passed swap tests of each
    /// pair, round trips.
    pub fn trace_row(&self) -> Vec<f64> {
        let stats = self.stats();
        self.index()
            .rungs()
            .iter()
            .map(|v| *v as f64)
            .chain(self.config().ladder.lrs.iter().copied())
            .chain(std::iter::once(self.buffer()))
            .chain(stats.accepts.iter().map(|a| *a as f64))
            .chain(stats.passes.iter().map(|a| *a as f64))
            .chain(std::iter::once(self.index().total_round_trips() as f64))
            .collect()
    }

    /// The swap statistics after `steps` steps.
    pub fn summary(&self, steps: u64) -> ReplicaSummary {
        ReplicaSummary::of(self, steps)
    }
}

/// The swap statistics of a replica-exchange run.
#[derive(Clone, Debug, Serialize)]
pub struct ReplicaSummary {
    /// Swap attempts per pair.
    pub attempts: Vec<u64>,
    /// Accepted swaps per pair.
    pub accepts: Vec<u64>,
    /// Acceptance rate per pair (accepted / attempted).
    pub swap_rates: Vec<f64>,
    /// Pass rate of the swap test per pair over all tests (the deterministic rule tests every
    /// pair every step, whether the window lets it swap or not).
    pub test_pass_rates: Vec<f64>,
    /// Accepted swaps over all steps and pairs, per step.
    pub swaps_per_step: f64,
    /// Round trips of every replica (rung 0 to the top and back).
    pub round_trips: u64,
    /// Round trips per 1000 steps.
    pub round_trips_per_1000: f64,
    /// Window `W` of the scheme.
    pub window: u64,
    /// Final correction buffer `C` (deterministic rule).
    pub buffer: f64,
    /// Final learning rates of the rungs.
    pub lrs: Vec<f64>,
    /// Final `sigma2_hat` per rung (Metropolis rule).
    pub sigma2: Option<Vec<f64>>,
}

impl ReplicaSummary {
    /// The statistics of `r` after `steps` steps.
    fn of<E: Ensemble>(r: &ReplicaExchange<E>, steps: u64) -> Self {
        let trips = r.index().total_round_trips();
        Self {
            attempts: r.stats().attempts.clone(),
            accepts: r.stats().accepts.clone(),
            swap_rates: r.stats().rates(),
            test_pass_rates: r.stats().pass_rates(),
            swaps_per_step: r.stats().total_accepts() as f64 / steps.max(1) as f64,
            round_trips: trips,
            round_trips_per_1000: 1000.0 * trips as f64 / steps.max(1) as f64,
            window: r.window(),
            buffer: r.buffer(),
            lrs: r.config().ladder.lrs.clone(),
            sigma2: r.variance().map(|v| v.values().to_vec()),
        }
    }
}
