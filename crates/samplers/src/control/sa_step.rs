//! Stochastic-approximation step sizes `omega_k`.

use serde::{Deserialize, Serialize};

use crate::error::{SamplerError, check, positive};

/// `omega_k = min(omega_max, A / (k^alpha + B))` for the `k`-th update, `k = 1, 2, ...`
/// (CSGLD paper sec. 4.1: `omega_k = min(0.003, 10 / (k^0.8 + 100))`; thesis eq. 6.8 setting
/// `omega_k = min(0.01, 1 / (k^0.6 + 100))`). Satisfies the SA conditions
/// `sum omega_k = inf`, `sum omega_k^2 < inf` for `alpha` in `(0.5, 1]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SaStepSize {
    /// Cap `omega_max` (use `f64::INFINITY` for none).
    pub omega_max: f64,
    /// Numerator `A`.
    pub a: f64,
    /// Decay exponent `alpha`.
    pub alpha: f64,
    /// Offset `B`.
    pub b: f64,
}

impl SaStepSize {
    /// The step size of update `k >= 1` (`k = 0` is treated as 1).
    pub fn omega(&self, k: u64) -> f64 {
        let k = k.max(1) as f64;
        (self.a / (k.powf(self.alpha) + self.b)).min(self.omega_max)
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), SamplerError> {
        positive("omega_a", self.a)?;
        check(
            self.alpha > 0.5 && self.alpha <= 1.0,
            "omega_alpha",
            self.alpha,
            "must lie in (0.5, 1] (sum omega_k = inf, sum omega_k^2 < inf)",
        )?;
        check(
            self.b.is_finite() && self.b >= 0.0,
            "omega_b",
            self.b,
            "must be finite and >= 0",
        )?;
        check(
            self.omega_max > 0.0,
            "omega_max",
            self.omega_max,
            "must be > 0",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn omega_matches_formula_and_cap() {
        // CSGLD 9-mode setting: min(0.003, 10 / (k^0.8 + 100)).
        let s = SaStepSize {
            omega_max: 0.003,
            a: 10.0,
            alpha: 0.8,
            b: 100.0,
        };
        assert_eq!(s.omega(1), 0.003); // 10/101 capped
        let k: f64 = 1e6;
        let expect = 10.0 / (k.powf(0.8) + 100.0);
        assert!(expect < 0.003);
        assert!((s.omega(1_000_000) - expect).abs() < 1e-18);
        // Where the cap stops binding: 10 / (k^0.8 + 100) = 0.003 at k^0.8 = 3233.3.
        let k_star = (10.0f64 / 0.003 - 100.0).powf(1.0 / 0.8);
        assert_eq!(s.omega(k_star.floor() as u64), 0.003);
        assert!(s.omega(k_star.ceil() as u64 + 1) < 0.003);
        // Uncapped 1-D setting 1 / (k^0.6 + 100).
        let u = SaStepSize {
            omega_max: f64::INFINITY,
            a: 1.0,
            alpha: 0.6,
            b: 100.0,
        };
        assert!((u.omega(1) - 1.0 / 101.0).abs() < 1e-18);
        assert!((u.omega(1000) - 1.0 / (1000f64.powf(0.6) + 100.0)).abs() < 1e-18);
    }

    #[test]
    fn invalid_parameters_are_rejected() {
        let with = |alpha| SaStepSize {
            omega_max: 0.01,
            a: 1.0,
            alpha,
            b: 100.0,
        };
        assert!(with(1.5).validate().is_err());
        // alpha <= 0.5 makes sum omega_k^2 diverge: outside the SA conditions.
        let err = with(0.5).validate().unwrap_err();
        assert!(err.to_string().contains("(0.5, 1]"), "{err}");
        assert!(with(0.3).validate().is_err());
        assert!(with(0.51).validate().is_ok() && with(1.0).validate().is_ok());
    }
}
