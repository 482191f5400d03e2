//! What a contour sampler (CSGLD, ICSGLD, AWSGLD) did during a run: which energy bins its
//! first chain visited after burn-in, the range of its gradient multiplier `psi` (eq. 8 of the
//! CSGLD paper), and how evenly the importance weights `theta[J]^zeta` spread over the
//! averaged models. These say whether the contour machinery acted at all: with a partition
//! whose first bin holds every energy the run sees (the CSGLD paper's UCI protocol, bins of
//! `du = 100` from 0, on a network whose stochastic energy stays below 100), the chain sits in
//! bin 0, where `psi = 1` and every weight is `theta[0]^zeta`, and the sampler is then its base
//! kernel step for step.

use serde::{Deserialize, Serialize};

use crate::sampler::StepReport;

/// Contour diagnostics of one run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ContourStats {
    /// Lowest energy bin `J` visited after burn-in (0-based).
    pub bin_min: usize,
    /// Highest energy bin visited after burn-in.
    pub bin_max: usize,
    /// Fraction of the steps after burn-in spent in bin 0 (where `psi = 1`).
    pub bin0_fraction: f64,
    /// Smallest gradient multiplier over the whole run.
    pub psi_min: f64,
    /// Largest gradient multiplier over the whole run.
    pub psi_max: f64,
    /// Moves with a negative multiplier.
    pub bouncy_moves: u64,
    /// Kish's effective number of the averaged models, `(sum w)^2 / sum w^2`.
    pub effective_models: f64,
    /// Largest entry of `theta` at the end of the run.
    pub theta_max: f64,
    /// How far `theta` moved over the run: the total-variation distance
    /// `sum_i |theta_i - theta0_i| / 2` between its final and initial values (0: never moved;
    /// `theta` normalised like a distribution for the power and interacting fields).
    #[serde(default)]
    pub theta_moved: f64,
    /// To first order from the start, how far the multiplier could move over the run (see
    /// [`Contour::multiplier_reach`](crate::sampler::Contour::multiplier_reach)); far below 1,
    /// the sampler moves as its base kernel.
    pub psi_reach: f64,
    /// Steps after burn-in (the running counts behind `bin0_fraction`).
    pub steps_after_burn_in: u64,
    /// Of those, steps in bin 0.
    pub bin0_steps: u64,
    /// Sum of the averaged models' weights (behind `effective_models`).
    pub weight_sum: f64,
    /// Sum of their squares.
    pub weight_sq_sum: f64,
}

impl ContourStats {
    /// Empty statistics of a run whose multiplier can move `psi_reach` (see the field).
    pub fn new(psi_reach: f64) -> Self {
        Self {
            psi_reach,
            bin_min: usize::MAX,
            psi_min: f64::INFINITY,
            psi_max: f64::NEG_INFINITY,
            ..Self::default()
        }
    }

    /// Records chain 0 of one step's report; `after_burn_in` marks the steps that count for
    /// the bins.
    pub fn step(&mut self, report: &StepReport, after_burn_in: bool) {
        if let Some(s) = report.step_sizes.first() {
            self.psi_min = self.psi_min.min(s.multiplier);
            self.psi_max = self.psi_max.max(s.multiplier);
        }
        self.bouncy_moves = report.bouncy_moves;
        if let (true, Some(&j)) = (after_burn_in, report.bins.first()) {
            self.bin_min = self.bin_min.min(j);
            self.bin_max = self.bin_max.max(j);
            self.steps_after_burn_in += 1;
            self.bin0_steps += u64::from(j == 0);
        }
    }

    /// Records the averaged models' weights: their sum and the sum of their squares.
    pub fn weights(&mut self, sum: f64, sum_sq: f64) {
        (self.weight_sum, self.weight_sq_sum) = (sum, sum_sq);
    }

    /// Fills the derived fields; `theta` is the final `theta`, `start` the initial one.
    pub fn finish(mut self, theta: Option<&[f64]>, start: &[f64]) -> Self {
        self.bin0_fraction = self.bin0_steps as f64 / self.steps_after_burn_in.max(1) as f64;
        self.effective_models = if self.weight_sq_sum > 0.0 {
            self.weight_sum * self.weight_sum / self.weight_sq_sum
        } else {
            0.0
        };
        self.theta_max = theta.map_or(f64::NAN, |t| t.iter().copied().fold(0.0, f64::max));
        self.theta_moved = theta.map_or(f64::NAN, |t| {
            0.5 * t.iter().zip(start).map(|(a, b)| (a - b).abs()).sum::<f64>()
        });
        if self.steps_after_burn_in == 0 {
            self.bin_min = 0;
        }
        self
    }
}

/// One line over several runs of one setting: the bins visited after burn-in, the multiplier range,
/// and the means of the bouncy moves, the effective number of models and `max theta`.
pub fn describe(runs: &[&ContourStats]) -> Option<String> {
    if runs.is_empty() {
        return None;
    }
    let n = runs.len() as f64;
    let mean = |f: fn(&ContourStats) -> f64| runs.iter().map(|s| f(s)).sum::<f64>() / n;
    let fold = |f: fn(&ContourStats) -> f64, min: bool| {
        runs.iter().map(|s| f(s)).fold(
            if min {
                f64::INFINITY
            } else {
                f64::NEG_INFINITY
            },
            if min { f64::min } else { f64::max },
        )
    };
    Some(format!(
        "bins {}..={} after burn-in, psi in [{:.4}, {:.4}], bouncy moves {:.0}, \
         effective models {:.1}, max theta {:.3}, theta moved (TV) {:.3}, psi reach {:.1e} \
         (means over {} runs){}",
        runs.iter().map(|s| s.bin_min).min().unwrap_or(0),
        runs.iter().map(|s| s.bin_max).max().unwrap_or(0),
        fold(|s| s.psi_min, true),
        fold(|s| s.psi_max, false),
        mean(|s| s.bouncy_moves as f64),
        mean(|s| s.effective_models),
        mean(|s| s.theta_max),
        mean(|s| s.theta_moved),
        mean(|s| s.psi_reach),
        runs.len(),
        if fold(|s| s.psi_reach, false) < 0.01 {
            ": psi cannot leave its start by 0.01, the sampler is in effect its base kernel"
        } else {
            ""
        }
    ))
}

#[cfg(test)]
mod tests {
    use crate::kernel::StepSize;

    use super::*;

    fn report(bin: usize, psi: f64, bouncy: u64) -> StepReport {
        StepReport {
            bins: vec![bin],
            step_sizes: vec![StepSize {
                multiplier: psi,
                ..StepSize::new(1.0, 1.0)
            }],
            bouncy_moves: bouncy,
            ..StepReport::default()
        }
    }

    #[test]
    fn bins_multipliers_and_weights_are_summarised() {
        let mut s = ContourStats::new(1e-30);
        s.step(&report(7, 3.0, 0), false); // burn-in: counts for psi only
        s.step(&report(0, 1.0, 0), true);
        s.step(&report(2, -0.5, 1), true);
        s.step(&report(0, 1.0, 1), true);
        s.weights(1.0 + 3.0, 1.0 + 9.0);
        let s = s.finish(Some(&[0.2, 0.5, 0.3]), &[1.0 / 3.0; 3]);
        assert_eq!((s.bin_min, s.bin_max), (0, 2));
        assert!((s.bin0_fraction - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!((s.psi_min, s.psi_max, s.bouncy_moves), (-0.5, 3.0, 1));
        // Kish: 16 / 10.
        assert!((s.effective_models - 1.6).abs() < 1e-12);
        assert_eq!(s.theta_max, 0.5);
        // TV from uniform: (|0.2 - 1/3| + |0.5 - 1/3| + |0.3 - 1/3|) / 2 = 1/6.
        assert!((s.theta_moved - 1.0 / 6.0).abs() < 1e-12);
        let line = describe(&[&s, &s]).unwrap();
        assert!(
            line.starts_with("bins 0..=2 after burn-in, psi in [-0.5000, 3.0000], bouncy moves 1"),
            "{line}"
        );
        assert!(line.ends_with("the sampler is in effect its base kernel"));
        assert!(describe(&[]).is_none());
    }
}
