//! Control-variate energies of variance-reduced replica exchange (thesis Algorithm 2, eq. 3.5).
//!
//! Every `m` steps each chain stores a snapshot `x^` of its parameters and the exact full-data
//! energy `L^ = L(x^)`. On a minibatch `B` the swap test then uses
//! `L~(B | x) = L(B | x) + c (L(B | x^) - L^)`, both minibatch energies on the same `B` at full
//! data scale. `c = -1` is the textbook control variate (exact when `x = x^`); the adaptive
//! option moves `c` toward the variance-minimising `c^ = -Cov(L(B|x), L(B|x^)) / Var(L(B|x^))`,
//! `c <- (1 - gamma) c + gamma c^`, from draws the caller supplies. Gradients are not
//! variance-reduced. A snapshot belongs to its parameter set: since swaps exchange rungs and
//! not parameters, it stays with its chain.

use serde::{Deserialize, Serialize};

use crate::error::{SamplerError, check};

/// Snapshot energies and the control-variate coefficient.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ControlVariate {
    period: u64,
    coefficient: f64,
    adapt: Option<f64>,
    full: Vec<f64>,
}

impl ControlVariate {
    /// `chains` snapshots refreshed every `period >= 1` steps, coefficient `c` (usually -1),
    /// optional adaptation step `gamma` in (0, 1].
    pub fn new(
        chains: usize,
        period: u64,
        coefficient: f64,
        adapt: Option<f64>,
    ) -> Result<Self, SamplerError> {
        check(period >= 1, "vr_period", period as f64, "must be >= 1")?;
        check(
            coefficient.is_finite(),
            "vr_coefficient",
            coefficient,
            "must be finite",
        )?;
        if let Some(g) = adapt {
            check(g > 0.0 && g <= 1.0, "vr_gamma", g, "must lie in (0, 1]")?;
        }
        Ok(Self {
            period,
            coefficient,
            adapt,
            full: vec![f64::NAN; chains],
        })
    }

    /// Whether the snapshots are due at step `k` (every `m` steps from step 0).
    pub fn due(&self, k: u64) -> bool {
        k.is_multiple_of(self.period)
    }

    /// Stores the exact energy `L^` of chain `p`'s new snapshot.
    pub fn set(&mut self, p: usize, full_energy: f64) {
        self.full[p] = full_energy;
    }

    /// `L~(B | x) = L(B | x) + c (L(B | x^) - L^)` of chain `p`.
    #[inline]
    pub fn energy(&self, p: usize, at_x: f64, at_snapshot: f64) -> f64 {
        at_x + self.offset(p, at_snapshot)
    }

    /// `c (L(B | x^) - L^)` of chain `p`: what the control variate adds to the chain's own
    /// minibatch energy.
    #[inline]
    pub fn offset(&self, p: usize, at_snapshot: f64) -> f64 {
        self.coefficient * (at_snapshot - self.full[p])
    }

    /// The coefficient `c`.
    pub fn coefficient(&self) -> f64 {
        self.coefficient
    }

    /// Moves `c` toward `-Cov(a, b) / Var(b)` of paired draws `a = L(B|x)`, `b = L(B|x^)` (no-op
    /// without adaptation or with fewer than two draws or a zero variance).
    pub fn adapt(&mut self, at_x: &[f64], at_snapshot: &[f64]) {
        let Some(gamma) = self.adapt else { return };
        let n = at_x.len().min(at_snapshot.len());
        if n < 2 {
            return;
        }
        let ma = at_x[..n].iter().sum::<f64>() / n as f64;
        let mb = at_snapshot[..n].iter().sum::<f64>() / n as f64;
        let (mut cov, mut var) = (0.0, 0.0);
        for (a, b) in at_x.iter().zip(at_snapshot) {
            cov += (a - ma) * (b - mb);
            var += (b - mb) * (b - mb);
        }
        if var > 0.0 {
            self.coefficient = (1.0 - gamma) * self.coefficient + gamma * (-cov / var);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_control_variate_is_exact_at_the_snapshot_and_adapts_to_the_regression() {
        let mut cv = ControlVariate::new(1, 40, -1.0, Some(1.0)).unwrap();
        cv.set(0, 100.0);
        // At x = x^ the minibatch noise cancels: L~ = L^.
        assert_eq!(cv.energy(0, 103.0, 103.0), 100.0);
        assert!(cv.due(0) && cv.due(80) && !cv.due(41));
        // a = 2 b + const: c^ = -2.
        cv.adapt(&[1.0, 3.0, 5.0], &[0.0, 1.0, 2.0]);
        assert!((cv.coefficient() + 2.0).abs() < 1e-12);
        assert!(ControlVariate::new(1, 0, -1.0, None).is_err());
        assert!(ControlVariate::new(1, 10, -1.0, Some(0.0)).is_err());
    }
}
