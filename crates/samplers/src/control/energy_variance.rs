//! The stochastic-approximation estimate `sigma2_hat` used by the corrected swap (thesis sec.
//! 2.3, Algorithm 1; VR paper Algorithm 1), one per pair of adjacent rungs.
//!
//! The corrected rate `S = exp(d (U~_r - U~_(r+1) - d sigma2 / F))` is unbiased at `F = 1` when
//! the energy difference `D~ = U~_r - U~_(r+1)` is Gaussian with variance `2 sigma2`:
//! `E[exp(d D~ - d^2 sigma2)] = exp(d D)`. So `sigma2` is half the variance of the *difference*.
//! With independent estimates (injected noise, or separate minibatches) that is the variance of
//! one chain's energy; when both replicas read the same minibatch, as every step of the papers'
//! algorithms does, their errors are correlated and the difference varies far less than either
//! energy (on a posterior with mirrored modes, 50-250x less). The estimate is therefore taken
//! from paired draws: at every refresh each replica's energy is estimated on the same `n >= 2`
//! fresh minibatches `B_1 .. B_n`, and pair `r` folds in
//! `s2 = Var_j(U~(B_j | x_r) - U~(B_j | x_(r+1))) / 2` (sample variance, divisor n - 1). This is
//! the VR paper's Algorithm 1 (`sigma2` estimates `Var(L(B | b1) - L(B | b2))`), with the factor
//! 1/2 that keeps `F = 1` unbiased in the reSGLD paper's convention.
//!
//! The update is `sigma2 <- (1 - gamma) sigma2 + gamma s2`, with `gamma = 1 / m` at the m-th
//! refresh (a running mean; the initial value is forgotten at the first refresh) or a fixed
//! `gamma` (exponential smoothing, for variances that drift).

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

/// `sigma2_hat` per pair of adjacent rungs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EnergyVariance {
    sigma2: Vec<f64>,
    refreshes: Vec<u64>,
    smoothing: Smoothing,
}

impl EnergyVariance {
    /// Estimates for the `rungs - 1` pairs of a ladder, starting at `initial >= 0`.
    pub fn new(rungs: usize, initial: f64, smoothing: Smoothing) -> Result<Self, SamplerError> {
        check(
            initial.is_finite() && initial >= 0.0,
            "initial_variance",
            initial,
            "must be finite and >= 0",
        )?;
        if let Smoothing::Fixed(g) = smoothing {
            check(g > 0.0 && g <= 1.0, "gamma", g, "must lie in (0, 1]")?;
        }
        let pairs = rungs.saturating_sub(1);
        Ok(Self {
            sigma2: vec![initial; pairs],
            refreshes: vec![0; pairs],
            smoothing,
        })
    }

    /// Folds paired draws into pair `r`'s estimate: `lower[j]` and `upper[j]` are the energies
    /// of the replicas on rungs `r` and `r + 1` on the same `j`-th minibatch (or independent
    /// draws). Fewer than two pairs of draws leave the estimate as it is. A refresh that is
    /// not finite (a NaN or infinite draw, or differences beyond `f64`) is refused with
    /// [`SamplerError::NonFiniteVariance`] and leaves the estimate as it is: folded in, it
    /// would make `sigma2_hat` non-finite for good, and `ln u < NaN` never accepts a swap.
    pub fn refresh(&mut self, r: usize, lower: &[f64], upper: &[f64]) -> Result<(), SamplerError> {
        let n = lower.len().min(upper.len());
        if n < 2 {
            return Ok(());
        }
        let s2 = half_paired_variance(lower, upper);
        if !s2.is_finite() {
            return Err(SamplerError::NonFiniteVariance { pair: r, value: s2 });
        }
        self.fold(r, s2);
        Ok(())
    }

    fn fold(&mut self, r: usize, s2: f64) {
        self.refreshes[r] += 1;
        let gamma = match self.smoothing {
            Smoothing::RunningMean => 1.0 / self.refreshes[r] as f64,
            Smoothing::Fixed(g) => g,
        };
        self.sigma2[r] = (1.0 - gamma) * self.sigma2[r] + gamma * s2;
    }

    /// The `sigma2_hat` a swap of pair `r` (rungs `r`, `r + 1`) uses.
    pub fn pair(&self, r: usize) -> f64 {
        self.sigma2[r]
    }

    /// The per-pair estimates.
    pub fn values(&self) -> &[f64] {
        &self.sigma2
    }
}

/// Half the sample variance of the paired differences `lower[j] - upper[j]`: the `sigma2` one
/// refresh measures.
pub fn half_paired_variance(lower: &[f64], upper: &[f64]) -> f64 {
    let diff: Vec<f64> = lower.iter().zip(upper).map(|(a, b)| a - b).collect();
    0.5 * sample_variance(&diff)
}

/// Sample variance (divisor `n - 1`) of `v`; 0 for fewer than two values.
pub fn sample_variance(v: &[f64]) -> f64 {
    let n = v.len();
    if n < 2 {
        return 0.0;
    }
    let m = v.iter().sum::<f64>() / n as f64;
    v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_mean_averages_half_the_paired_difference_variance() {
        let mut v = EnergyVariance::new(3, 100.0, Smoothing::RunningMean).unwrap();
        assert_eq!(v.values().len(), 2);
        // Differences 1, 3: s2 = 2, half is 1.
        v.refresh(0, &[11.0, 13.0], &[10.0, 10.0]).unwrap();
        assert!((v.pair(0) - 1.0).abs() < 1e-12);
        // Differences 0, 2, 4: s2 = 4, half 2; running mean (1 + 2) / 2.
        v.refresh(0, &[5.0, 7.0, 9.0], &[5.0, 5.0, 5.0]).unwrap();
        assert!((v.pair(0) - 1.5).abs() < 1e-12);
        assert_eq!(v.pair(1), 100.0);
        // A shared error cancels: both energies move together, the difference is constant.
        let mut s = EnergyVariance::new(2, 0.0, Smoothing::RunningMean).unwrap();
        s.refresh(0, &[100.0, 250.0, -40.0], &[90.0, 240.0, -50.0])
            .unwrap();
        assert_eq!(s.pair(0), 0.0);
        let mut f = EnergyVariance::new(2, 10.0, Smoothing::Fixed(0.3)).unwrap();
        f.refresh(0, &[1.0, 3.0], &[0.0, 0.0]).unwrap();
        assert!((f.pair(0) - (0.7 * 10.0 + 0.3 * 1.0)).abs() < 1e-12);
        assert!(EnergyVariance::new(2, -1.0, Smoothing::RunningMean).is_err());
        assert!(EnergyVariance::new(2, 1.0, Smoothing::Fixed(0.0)).is_err());
        assert_eq!(sample_variance(&[1.0, 3.0]), 2.0);
    }

    #[test]
    fn a_non_finite_refresh_is_refused_and_leaves_the_estimate() {
        let mut v = EnergyVariance::new(3, 4.0, Smoothing::RunningMean).unwrap();
        v.refresh(1, &[2.0, 4.0], &[0.0, 0.0]).unwrap();
        let before = v.values().to_vec();
        // A NaN draw, an infinite one, and finite draws whose differences overflow when squared.
        let big = 1e200;
        for (lower, upper) in [
            (vec![1.0, f64::NAN], vec![0.0, 0.0]),
            (vec![1.0, 2.0], vec![f64::INFINITY, 0.0]),
            (vec![big, -big], vec![-big, big]),
        ] {
            for r in 0..2 {
                let e = v.refresh(r, &lower, &upper).unwrap_err();
                assert!(
                    matches!(e, SamplerError::NonFiniteVariance { pair, .. } if pair == r),
                    "{e}"
                );
                assert!(
                    e.to_string().contains(&format!("rungs {r} and {}", r + 1)),
                    "{e}"
                );
            }
            assert_eq!(v.values(), &before[..]);
        }
        // The estimate goes on from where it was: the next finite refresh is the second of
        // pair 1: the running mean of 1 (differences 2, 4) and 0.25 (differences 1, 2).
        v.refresh(1, &[1.0, 2.0], &[0.0, 0.0]).unwrap();
        assert!((v.pair(1) - 0.625).abs() < 1e-12, "{}", v.pair(1));
    }
}
