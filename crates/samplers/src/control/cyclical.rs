//! Cyclical cosine schedule (Zhang et al., 2020, "Cyclical stochastic gradient MCMC").

use serde::{Deserialize, Serialize};

use crate::error::{SamplerError, check, positive};

/// Exploration or sampling part of a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Phase {
    /// Large steps, optionally noise-free (SGD): samples are not collected.
    Exploration,
    /// Small steps with noise: samples are collected.
    Sampling,
}

/// `lr_k = lr_0 / 2 * (cos(pi * min(mod(k, C) / C, h)) + 1)` with cycle length `C = ceil(K /
/// M)` (Zhang et al. 2020, eq. 1, written for the 0-based step `k`) and hold `h`: from the
/// cycle position `h` on the value stays at `lr_0 / 2 (cos(pi h) + 1)` (thesis E.4.4: "the
/// learning rate in the last 15% of each cycle is fixed at a constant value", `h = 0.85`, for
/// cycSGHMC and cycSWAG; `h = 1`, no hold, is Zhang et al.'s schedule). A step is in the
/// sampling phase when its position in the cycle `mod(k, C) / C` is at least
/// `sampling_threshold` (e.g. 0.5 or 0.95), otherwise in the exploration phase, which may be
/// noise-free.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cyclical {
    /// Peak value `lr_0` at the start of each cycle.
    pub initial: f64,
    /// Total number of steps `K`.
    pub total_steps: u64,
    /// Number of cycles `M`.
    pub cycles: u64,
    /// Cycle position from which steps belong to the sampling phase, in `[0, 1]`.
    pub sampling_threshold: f64,
    /// Run the exploration phase without noise (temperature 0).
    pub noise_free_exploration: bool,
    /// Cycle position `h` in `(0, 1]` from which the value is held (1: no hold).
    #[serde(default = "no_hold")]
    pub hold: f64,
}

fn no_hold() -> f64 {
    1.0
}

impl Cyclical {
    /// Cycle length `C = ceil(K / M)`.
    pub fn cycle_length(&self) -> u64 {
        self.total_steps.div_ceil(self.cycles.max(1)).max(1)
    }

    /// Position of step `k` in its cycle, in `[0, 1)`.
    pub fn position(&self, k: u64) -> f64 {
        let c = self.cycle_length();
        (k % c) as f64 / c as f64
    }

    /// The value at step `k`.
    pub fn value(&self, k: u64) -> f64 {
        let p = self.position(k).min(self.hold);
        self.initial / 2.0 * ((std::f64::consts::PI * p).cos() + 1.0)
    }

    /// The phase of step `k`.
    pub fn phase(&self, k: u64) -> Phase {
        if self.position(k) >= self.sampling_threshold {
            Phase::Sampling
        } else {
            Phase::Exploration
        }
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), SamplerError> {
        positive("initial", self.initial)?;
        check(self.total_steps >= 1, "total_steps", 0.0, "must be >= 1")?;
        check(self.cycles >= 1, "cycles", 0.0, "must be >= 1")?;
        check(
            (0.0..=1.0).contains(&self.sampling_threshold),
            "sampling_threshold",
            self.sampling_threshold,
            "must lie in [0, 1]",
        )?;
        check(
            self.hold > 0.0 && self.hold <= 1.0,
            "hold",
            self.hold,
            "must lie in (0, 1]",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule() -> Cyclical {
        Cyclical {
            initial: 0.5,
            total_steps: 1000,
            cycles: 3,
            sampling_threshold: 0.8,
            noise_free_exploration: true,
            hold: 1.0,
        }
    }

    #[test]
    fn formula_at_chosen_steps_and_cycle_boundaries() {
        let c = schedule();
        assert_eq!(c.cycle_length(), 334); // ceil(1000 / 3)
        // k = 0 and every cycle start: the peak lr_0.
        for k in [0, 334, 668] {
            assert!((c.value(k) - 0.5).abs() < 1e-15, "k = {k}");
            assert_eq!(c.phase(k), Phase::Exploration);
        }
        // Half a cycle: lr_0 / 2 exactly (cos(pi/2) = 0).
        assert!((c.value(167) - 0.25).abs() < 1e-15);
        // Last step of the first cycle: lr_0/2 (cos(pi * 333/334) + 1).
        let expect = 0.25 * ((std::f64::consts::PI * 333.0 / 334.0).cos() + 1.0);
        assert!((c.value(333) - expect).abs() < 1e-15);
        assert!(c.value(333) < 2e-5); // lr_0 (pi / 334)^2 / 8 = 1.1e-5
        // Arbitrary step in the third cycle.
        let k = 900;
        let expect = 0.25 * ((std::f64::consts::PI * 232.0 / 334.0).cos() + 1.0);
        assert!((c.value(k) - expect).abs() < 1e-15);
        // Sampling phase starts at position >= 0.8: mod(k, 334) >= 267.2.
        assert_eq!(c.phase(267), Phase::Exploration);
        assert_eq!(c.phase(268), Phase::Sampling);
        assert_eq!(c.phase(333), Phase::Sampling);
        assert_eq!(c.phase(334 + 268), Phase::Sampling);
    }

    #[test]
    fn the_hold_keeps_the_value_at_its_position_to_the_cycle_end() {
        let c = Cyclical {
            hold: 0.85,
            ..schedule()
        };
        // lr_0 / 2 (cos(0.85 pi) + 1) = 0.25 * (1 - 0.891007) = 0.0272483.
        let held = 0.25 * ((0.85 * std::f64::consts::PI).cos() + 1.0);
        assert!((held - 0.027_248_3).abs() < 1e-7);
        // Positions 283/334 = 0.8473 (still falling) and 284/334 = 0.8503 .. 333/334 (held).
        assert!(c.value(283) > held);
        for k in [284, 300, 333, 334 + 290] {
            assert_eq!(c.value(k), held, "k = {k}");
        }
        assert_eq!(c.value(100), schedule().value(100));
        assert_eq!(c.value(334), 0.5);
        for bad in [0.0, -0.1, 1.5, f64::NAN] {
            assert!(
                Cyclical {
                    hold: bad,
                    ..c.clone()
                }
                .validate()
                .is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn invalid_cycles_are_rejected() {
        let mut c = schedule();
        c.cycles = 0;
        assert!(c.validate().is_err());
        let mut c = schedule();
        c.sampling_threshold = 1.5;
        assert!(c.validate().is_err());
    }
}
