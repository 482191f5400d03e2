//! Control-variate energies of variance-reduced replica exchange (thesis Algorithm 2, eq. 3.5).
//!
//! Every `m` steps each chain stores a snapshot `x^` of its parameters and the exact full-data
//! energy `L^ = L(x^)`. On a minibatch `B` the swap test then uses
//! `L~(B | x) = L(B | x) + c (L(B | x^) - L^)`, both minibatch energies on the same `B` at full
//! data scale. `c = -1` is the textbook control variate (exact when `x = x^`); the adaptive
//! option moves each chain's `c_p` toward its variance-minimising
//! `c^_p = -Cov(L(B|x_p), L(B|x^_p)) / Var(L(B|x^_p))`, `c_p <- (1 - gamma) c_p + gamma c^_p`,
//! from draws the caller supplies (one coefficient per chain, as the reference code keeps one
//! per replica: the chains sit at different temperatures, so their regressions differ).
//! Gradients are not variance-reduced. A snapshot belongs to its parameter set: since swaps exchange rungs and
//! not parameters, it stays with its chain.

use serde::{Deserialize, Serialize};

use crate::error::{SamplerError, check};

/// Snapshot energies and the control-variate coefficients, one per chain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ControlVariate {
    period: u64,
    coefficients: Vec<f64>,
    adapt: Option<f64>,
    full: Vec<f64>,
}

impl ControlVariate {
    /// `chains` snapshots refreshed every `period >= 1` steps, every chain's coefficient
    /// starting at `c` (usually -1), optional adaptation step `gamma` in (0, 1].
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
            coefficients: vec![coefficient; chains],
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

    /// `c_p (L(B | x^) - L^)` of chain `p`: what the control variate adds to the chain's own
    /// minibatch energy.
    #[inline]
    pub fn offset(&self, p: usize, at_snapshot: f64) -> f64 {
        self.coefficients[p] * (at_snapshot - self.full[p])
    }

    /// The coefficients `c_p`, in chain order.
    pub fn coefficients(&self) -> &[f64] {
        &self.coefficients
    }

    /// Moves chain `p`'s `c_p` toward `-Cov(a, b) / Var(b)` of its paired draws `a = L(B|x_p)`,
    /// `b = L(B|x^_p)` (no-op without adaptation or with fewer than two draws or a zero
    /// variance).
    pub fn adapt(&mut self, p: usize, at_x: &[f64], at_snapshot: &[f64]) {
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
            let c = &mut self.coefficients[p];
            *c = (1.0 - gamma) * *c + gamma * (-cov / var);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_control_variate_is_exact_at_the_snapshot_and_adapts_to_the_regression() {
        let mut cv = ControlVariate::new(2, 40, -1.0, Some(1.0)).unwrap();
        cv.set(0, 100.0);
        // At x = x^ the minibatch noise cancels: L~ = L^.
        assert_eq!(cv.energy(0, 103.0, 103.0), 100.0);
        assert!(cv.due(0) && cv.due(80) && !cv.due(41));
        // Chain 0: a = 2 b + const, c^ = -2; chain 1: a = 3 b, c^ = -3. Each chain keeps its
        // own (one shared coefficient would end at chain 1's, or a blend at gamma < 1).
        cv.adapt(0, &[1.0, 3.0, 5.0], &[0.0, 1.0, 2.0]);
        cv.adapt(1, &[0.0, 3.0, 6.0], &[0.0, 1.0, 2.0]);
        let c = cv.coefficients();
        assert!(
            (c[0] + 2.0).abs() < 1e-12 && (c[1] + 3.0).abs() < 1e-12,
            "{c:?}"
        );
        // gamma 1/2 moves chain 0 halfway from -2 toward a new -4 and leaves chain 1.
        let mut half = ControlVariate::new(2, 40, -2.0, Some(0.5)).unwrap();
        half.adapt(0, &[0.0, 4.0, 8.0], &[0.0, 1.0, 2.0]);
        assert_eq!(half.coefficients(), &[-3.0, -2.0]);
        cv.set(1, 10.0);
        assert_eq!(cv.offset(1, 12.0), -6.0);
        assert!(ControlVariate::new(1, 0, -1.0, None).is_err());
        assert!(ControlVariate::new(1, 10, -1.0, Some(0.0)).is_err());
    }
}
