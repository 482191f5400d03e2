//! Step-indexed schedules for the learning rate and the temperature.

use serde::{Deserialize, Serialize};

use super::cyclical::{Cyclical, Phase};
use crate::error::{SamplerError, check, positive};

/// A schedule `k -> value` for step `k = 0, 1, ...`; `epoch = floor(k / steps_per_epoch)`.
///
/// | variant | value at step `k` |
/// |---|---|
/// | `Constant` | `v` |
/// | `ExpDecay` (annealing) | `initial / factor^max(0, epoch - hold_epochs)`, e.g. `lr_0 / 1.01^epoch` |
/// | `StepDecay` | `initial * gamma^floor(epoch / every_epochs)` |
/// | `Milestones` | `initial * gamma^#{m in at_steps : m <= k}` (thesis E.4.2: x0.2 at epochs 250 and 375) |
/// | `Cyclical` | cosine cycles of Zhang et al. (2020), see [`Cyclical`] |
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Schedule {
    /// The same value at every step.
    Constant {
        /// The value.
        value: f64,
    },
    /// Exponential decay per epoch (simulated annealing of the lr or the temperature).
    ExpDecay {
        /// Value at epoch 0.
        initial: f64,
        /// Division factor per epoch (> 0; > 1 decays).
        factor: f64,
        /// Steps per epoch (>= 1).
        steps_per_epoch: u64,
        /// Epochs the decay's epoch counter waits: the value is `initial` up to epoch
        /// `hold_epochs` and first divided at epoch `hold_epochs + 1` (0-based). 0 divides from
        /// epoch 1 on; the papers' "lr fixed in the first 400 epochs, then divided by 1.01 at
        /// each epoch" is 399 (first division at 0-based epoch 400).
        #[serde(default)]
        hold_epochs: u64,
    },
    /// Multiply by `gamma` every `every_epochs` epochs.
    StepDecay {
        /// Value at epoch 0.
        initial: f64,
        /// Multiplicative factor (> 0).
        gamma: f64,
        /// Epochs between decays (>= 1).
        every_epochs: u64,
        /// Steps per epoch (>= 1).
        steps_per_epoch: u64,
    },
    /// Multiply by `gamma` at each of the given steps (PyTorch's `MultiStepLR`).
    Milestones {
        /// Value before the first milestone.
        initial: f64,
        /// Multiplicative factor at each milestone (> 0).
        gamma: f64,
        /// Steps from which one more factor applies, non-decreasing (a repeated step applies
        /// the factor once for each, as PyTorch's `MultiStepLR`).
        at_steps: Vec<u64>,
    },
    /// Cyclical cosine schedule.
    Cyclical(Cyclical),
}

impl Schedule {
    /// A constant schedule.
    pub fn constant(value: f64) -> Self {
        Self::Constant { value }
    }

    /// The value at step `k`.
    pub fn value(&self, k: u64) -> f64 {
        match self {
            Self::Constant { value } => *value,
            Self::ExpDecay {
                initial,
                factor,
                steps_per_epoch,
                hold_epochs,
            } => {
                let epoch = k / steps_per_epoch.max(&1);
                initial / factor.powf(epoch.saturating_sub(*hold_epochs) as f64)
            }
            Self::StepDecay {
                initial,
                gamma,
                every_epochs,
                steps_per_epoch,
            } => {
                let epoch = k / steps_per_epoch.max(&1);
                initial * gamma.powf((epoch / every_epochs.max(&1)) as f64)
            }
            Self::Milestones {
                initial,
                gamma,
                at_steps,
            } => {
                let passed = at_steps.iter().take_while(|&&m| m <= k).count();
                initial * gamma.powi(passed as i32)
            }
            Self::Cyclical(c) => c.value(k),
        }
    }

    /// The phase of step `k`: always [`Phase::Sampling`] except in the exploration part of a
    /// cyclical schedule.
    pub fn phase(&self, k: u64) -> Phase {
        match self {
            Self::Cyclical(c) => c.phase(k),
            _ => Phase::Sampling,
        }
    }

    /// Checks the schedule; `name` labels the error (e.g. "lr", "temperature").
    /// `allow_zero` admits a zero value (a zero temperature turns SGLD into SGD).
    pub fn validate(&self, name: &'static str, allow_zero: bool) -> Result<(), SamplerError> {
        let initial = match self {
            Self::Constant { value } => *value,
            Self::ExpDecay {
                initial,
                factor,
                steps_per_epoch,
                ..
            } => {
                positive("factor", *factor)?;
                check(
                    *steps_per_epoch >= 1,
                    "steps_per_epoch",
                    0.0,
                    "must be >= 1",
                )?;
                *initial
            }
            Self::StepDecay {
                initial,
                gamma,
                every_epochs,
                steps_per_epoch,
            } => {
                positive("gamma", *gamma)?;
                check(*every_epochs >= 1, "every_epochs", 0.0, "must be >= 1")?;
                check(
                    *steps_per_epoch >= 1,
                    "steps_per_epoch",
                    0.0,
                    "must be >= 1",
                )?;
                *initial
            }
            Self::Milestones {
                initial,
                gamma,
                at_steps,
            } => {
                positive("gamma", *gamma)?;
                check(
                    at_steps.windows(2).all(|w| w[0] <= w[1]),
                    "milestones",
                    0.0,
                    "must not decrease",
                )?;
                *initial
            }
            Self::Cyclical(c) => {
                c.validate()?;
                c.initial
            }
        };
        if allow_zero {
            check(
                initial.is_finite() && initial >= 0.0,
                name,
                initial,
                "must be finite and >= 0",
            )
        } else {
            check(
                initial.is_finite() && initial > 0.0,
                name,
                initial,
                "must be finite and > 0",
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decays_follow_their_formulas() {
        let e = Schedule::ExpDecay {
            initial: 0.5,
            factor: 1.01,
            steps_per_epoch: 10,
            hold_epochs: 0,
        };
        assert_eq!(e.value(0), 0.5);
        assert_eq!(e.value(9), 0.5);
        assert!((e.value(10) - 0.5 / 1.01).abs() < 1e-15);
        assert!((e.value(35) - 0.5 / 1.01f64.powi(3)).abs() < 1e-15);
        // Hold 2: epochs 0-2 (steps 0-29) at the initial value, then divided once per epoch.
        let held = Schedule::ExpDecay {
            initial: 0.5,
            factor: 1.01,
            steps_per_epoch: 10,
            hold_epochs: 2,
        };
        assert_eq!(held.value(29), 0.5);
        assert!((held.value(30) - 0.5 / 1.01).abs() < 1e-15);
        assert!((held.value(55) - 0.5 / 1.01f64.powi(3)).abs() < 1e-15);
        let s = Schedule::StepDecay {
            initial: 1.0,
            gamma: 0.1,
            every_epochs: 2,
            steps_per_epoch: 5,
        };
        assert_eq!(s.value(9), 1.0);
        assert!((s.value(10) - 0.1).abs() < 1e-15);
        assert!((s.value(20) - 0.01).abs() < 1e-15);
        // x0.2 from step 50 on, x0.04 from step 75 on.
        let m = Schedule::Milestones {
            initial: 2.0,
            gamma: 0.2,
            at_steps: vec![50, 75],
        };
        assert_eq!((m.value(0), m.value(49)), (2.0, 2.0));
        assert!((m.value(50) - 0.4).abs() < 1e-15 && (m.value(74) - 0.4).abs() < 1e-15);
        assert!((m.value(75) - 0.08).abs() < 1e-15 && (m.value(10_000) - 0.08).abs() < 1e-15);
        let unordered = Schedule::Milestones {
            initial: 1.0,
            gamma: 0.2,
            at_steps: vec![75, 50],
        };
        assert!(unordered.validate("lr", false).is_err());
    }

    #[test]
    fn invalid_values_are_rejected() {
        assert!(Schedule::constant(0.0).validate("lr", false).is_err());
        assert!(Schedule::constant(-1.0).validate("lr", false).is_err());
        assert!(
            Schedule::constant(f64::NAN)
                .validate("temperature", true)
                .is_err()
        );
        assert!(
            Schedule::constant(0.0)
                .validate("temperature", true)
                .is_ok()
        );
        let bad = Schedule::ExpDecay {
            initial: 1.0,
            factor: 0.0,
            steps_per_epoch: 1,
            hold_epochs: 0,
        };
        assert!(bad.validate("lr", false).is_err());
    }
}
