//! The stochastic-approximation estimate `sigma2_hat` of the variance of one chain's stochastic
//! energy, used by the corrected swap (thesis sec. 2.3, Algorithm 1).
//!
//! Every refresh draws a few fresh stochastic energies `U~_1 .. U~_n` of each chain at its
//! current point (n >= 2), takes their sample variance `s2` (divisor n - 1) and updates the
//! estimate of the chain's rung: `sigma2 <- (1 - gamma) sigma2 + gamma s2`, with
//! `gamma = 1 / m` at the m-th refresh (a running mean; the initial value is forgotten at the
//! first refresh) or a fixed `gamma` (exponential smoothing, for variances that drift). The
//! variance used by a swap between rungs `r` and `r + 1` is the mean of their two estimates:
//! the variance of one chain's energy, not of the difference of two (which is twice it).

use serde::{Deserialize, Serialize};

use crate::error::{SamplerError, check};

/// How refreshes are averaged.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Smoothing {
    /// `gamma = 1 / m` at the m-th refresh.
    RunningMean,
    /// A fixed `gamma` in (0, 1].
    Fixed(f64),
}

/// `sigma2_hat` per rung.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EnergyVariance {
    sigma2: Vec<f64>,
    refreshes: Vec<u64>,
    smoothing: Smoothing,
}

impl EnergyVariance {
    /// Estimates for `p` rungs starting at `initial >= 0`.
    pub fn new(p: usize, initial: f64, smoothing: Smoothing) -> Result<Self, SamplerError> {
        check(
            initial.is_finite() && initial >= 0.0,
            "initial_variance",
            initial,
            "must be finite and >= 0",
        )?;
        if let Smoothing::Fixed(g) = smoothing {
            check(g > 0.0 && g <= 1.0, "gamma", g, "must lie in (0, 1]")?;
        }
        Ok(Self {
            sigma2: vec![initial; p],
            refreshes: vec![0; p],
            smoothing,
        })
    }

    /// Folds the fresh energies of the chain on `rung` into its estimate.
    pub fn refresh(&mut self, rung: usize, energies: &[f64]) {
        let n = energies.len();
        if n < 2 {
            return;
        }
        let mean = energies.iter().sum::<f64>() / n as f64;
        let s2 = energies.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        self.refreshes[rung] += 1;
        let gamma = match self.smoothing {
            Smoothing::RunningMean => 1.0 / self.refreshes[rung] as f64,
            Smoothing::Fixed(g) => g,
        };
        self.sigma2[rung] = (1.0 - gamma) * self.sigma2[rung] + gamma * s2;
    }

    /// The variance a swap of pair `r` (rungs `r`, `r + 1`) uses.
    pub fn pair(&self, r: usize) -> f64 {
        0.5 * (self.sigma2[r] + self.sigma2[r + 1])
    }

    /// The per-rung estimates.
    pub fn values(&self) -> &[f64] {
        &self.sigma2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_mean_averages_refreshes() {
        let mut v = EnergyVariance::new(2, 100.0, Smoothing::RunningMean).unwrap();
        v.refresh(0, &[1.0, 3.0]); // s2 = 2
        assert!((v.values()[0] - 2.0).abs() < 1e-12);
        v.refresh(0, &[0.0, 2.0, 4.0]); // s2 = 4
        assert!((v.values()[0] - 3.0).abs() < 1e-12);
        assert!((v.pair(0) - 0.5 * (3.0 + 100.0)).abs() < 1e-12);
        let mut f = EnergyVariance::new(1, 10.0, Smoothing::Fixed(0.3)).unwrap();
        f.refresh(0, &[1.0, 3.0]);
        assert!((f.values()[0] - (0.7 * 10.0 + 0.3 * 2.0)).abs() < 1e-12);
        assert!(EnergyVariance::new(1, -1.0, Smoothing::RunningMean).is_err());
        assert!(EnergyVariance::new(1, 1.0, Smoothing::Fixed(0.0)).is_err());
    }
}
