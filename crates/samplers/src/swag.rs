//! SWAG, the stochastic weight averaging Gaussian of Maddox et al. (2019, "A Simple Baseline
//! for Bayesian Uncertainty in Deep Learning", Algorithm 1): a Gaussian fitted to the iterates
//! `theta_1, ..., theta_T` of SGD,
//!
//! `theta_SWA = (1/T) sum_t theta_t`, `Sigma_diag = diag((1/T) sum_t theta_t^2 - theta_SWA^2)`,
//! `D = [theta_t - theta_SWA(t)]` over the last `K` iterates (the running mean at the time of
//! each iterate, as in the reference code),
//!
//! sampled as `theta = theta_SWA + (1/sqrt 2) Sigma_diag^(1/2) z_1 + (1/sqrt(2 (K - 1))) D z_2`
//! with `z_1 ~ N(0, I_d)`, `z_2 ~ N(0, I_K)`: the covariance `(Sigma_diag + D D^T / (K - 1)) / 2`.
//! cycSWAG (thesis Tables 4.2 and 6.1) fits one such Gaussian to the iterates of each cycle of
//! a cyclical learning rate and draws its models from it.

use serde::{Deserialize, Serialize};

use crate::error::SamplerError;
use crate::rng::ChainRng;

/// A SWAG fit in progress (checkpointable).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Swag {
    rank: usize,
    count: u64,
    mean: Vec<f64>,
    sq_mean: Vec<f64>,
    /// The last `rank` deviations, oldest first.
    deviations: Vec<Vec<f32>>,
}

impl Swag {
    /// An empty fit of `dim` parameters keeping `rank` deviations (`K >= 2`).
    pub fn new(dim: usize, rank: usize) -> Result<Self, SamplerError> {
        if rank < 2 {
            return Err(SamplerError::InvalidHyperParameter {
                name: "swag.rank",
                value: rank.to_string(),
                reason: "must be >= 2 (the low-rank part divides by K - 1)",
            });
        }
        Ok(Self {
            rank,
            count: 0,
            mean: vec![0.0; dim],
            sq_mean: vec![0.0; dim],
            deviations: Vec::new(),
        })
    }

    /// Iterates added so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Deviations kept (at most the rank).
    pub fn kept(&self) -> usize {
        self.deviations.len()
    }

    /// Adds the iterate `theta`.
    pub fn add(&mut self, theta: &[f32]) -> Result<(), SamplerError> {
        if theta.len() != self.mean.len() {
            return Err(SamplerError::InvalidSetting(format!(
                "SWAG fits {} parameters, got an iterate of {}",
                self.mean.len(),
                theta.len()
            )));
        }
        self.count += 1;
        let w = 1.0 / self.count as f64;
        let mut dev = Vec::with_capacity(theta.len());
        for ((m, s), &x) in self.mean.iter_mut().zip(&mut self.sq_mean).zip(theta) {
            let x = f64::from(x);
            *m += w * (x - *m);
            *s += w * (x * x - *s);
            dev.push((x - *m) as f32);
        }
        if self.deviations.len() == self.rank {
            self.deviations.remove(0);
        }
        self.deviations.push(dev);
        Ok(())
    }

    /// `theta_SWA`.
    pub fn mean(&self) -> &[f64] {
        &self.mean
    }

    /// `Sigma_diag` (clamped at 0 against rounding).
    pub fn diag_variance(&self) -> Vec<f64> {
        self.mean
            .iter()
            .zip(&self.sq_mean)
            .map(|(m, s)| (s - m * m).max(0.0))
            .collect()
    }

    /// The diagonal of the covariance [`Swag::sample`] draws from,
    /// `(Sigma_diag + (D D^T)_ii / (K - 1)) / 2` (with `K` the deviations kept).
    pub fn sample_variance(&self) -> Vec<f64> {
        let k = self.deviations.len();
        let mut low = vec![0.0; self.mean.len()];
        if k >= 2 {
            for d in &self.deviations {
                for (l, &x) in low.iter_mut().zip(d) {
                    *l += f64::from(x) * f64::from(x);
                }
            }
            low.iter_mut().for_each(|l| *l /= (k - 1) as f64);
        }
        self.diag_variance()
            .iter()
            .zip(&low)
            .map(|(d, l)| 0.5 * (d + l))
            .collect()
    }

    /// One draw from the SWAG Gaussian (the low-rank part once at least 2 deviations are kept).
    pub fn sample(&self, rng: &mut ChainRng) -> Result<Vec<f32>, SamplerError> {
        if self.count == 0 {
            return Err(SamplerError::InvalidSetting(
                "SWAG has no iterate to sample around".into(),
            ));
        }
        let diag = self.diag_variance();
        let mut theta: Vec<f64> = self
            .mean
            .iter()
            .zip(&diag)
            .map(|(m, v)| m + (0.5 * v).sqrt() * rng.normal())
            .collect();
        let k = self.deviations.len();
        if k >= 2 {
            let c = (0.5 / (k - 1) as f64).sqrt();
            for d in &self.deviations {
                let z = c * rng.normal();
                for (t, &x) in theta.iter_mut().zip(d) {
                    *t += z * f64::from(x);
                }
            }
        }
        Ok(theta.into_iter().map(|t| t as f32).collect())
    }
}

/// cycSWAG over the chains of an ensemble (thesis Tables 4.2 and 6.1; MultiSWAG with one fit
/// per chain): within each cycle of `cycle` steps of a cyclical learning rate, every
/// `every`-th step of the sampling phase adds each chain's trainable parameters to that
/// chain's [`Swag`] fit; at the end of the cycle (and of the run) each fit that holds an
/// iterate gives `samples` draws, chain `p`'s in cycle `c` from the stream
/// `(seed ^ 0x5A6A_6000, 64 c + p)`, and the fits restart. The fits are the caller's state
/// (checkpointed with its run).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CycleSwag {
    /// Deviations each fit keeps (`K >= 2`).
    pub rank: usize,
    /// Steps between the iterates added in the sampling phase.
    pub every: u64,
    /// Steps per cycle.
    pub cycle: u64,
    /// Draws per fitted chain at a cycle's end.
    pub samples: usize,
    /// Seed of the draws' streams.
    pub seed: u64,
}

/// One draw of [`CycleSwag`]: a chain's trainable parameters at the end of a cycle.
#[derive(Clone, Debug, PartialEq)]
pub struct SwagDraw {
    /// The chain whose fit it comes from.
    pub chain: usize,
    /// The cycle (0-based).
    pub cycle: u64,
    /// The trainable parameters (visit order, as
    /// [`crate::ensemble::with_trainable_values`] takes them).
    pub theta: Vec<f32>,
}

impl CycleSwag {
    /// Whether [`CycleSwag::after_step`] reads the chains' networks after the step that made
    /// `done` steps in all (`sampling`, `last` as there): at an iterate it adds to the fits, at
    /// the end of a cycle or of the run (whose draws are built on the networks), and on a
    /// schedule it refuses. Elsewhere `after_step` does nothing, so a caller may skip it.
    pub fn reads(&self, done: u64, (sampling, last): (bool, bool)) -> bool {
        let refused = self.every == 0 || self.cycle == 0 || done == 0;
        refused
            || (sampling && done.is_multiple_of(self.every))
            || done.is_multiple_of(self.cycle)
            || last
    }

    /// After the step that made `done` steps in all, with the chains' networks `modules` as
    /// the step left them: adds their parameters to `fits` when due (`sampling`: the step was
    /// in the sampling phase), and at the end of a cycle (or of the run, `last`) returns every
    /// fitted chain's draws, in chain order, emptying `fits`. Errors on a schedule of zero
    /// steps (`every`, `cycle`) or `done = 0`.
    pub fn after_step<M: burn::module::Module>(
        &self,
        fits: &mut Vec<Swag>,
        done: u64,
        (sampling, last): (bool, bool),
        modules: &[M],
    ) -> Result<Vec<SwagDraw>, SamplerError> {
        for (name, value) in [("every", self.every), ("cycle", self.cycle), ("done", done)] {
            if value == 0 {
                return Err(SamplerError::InvalidHyperParameter {
                    name,
                    value: "0".into(),
                    reason: "cycSWAG counts steps from 1",
                });
            }
        }
        if sampling && done.is_multiple_of(self.every) {
            for (p, m) in modules.iter().enumerate() {
                let theta = crate::ensemble::trainable_values(m)?;
                if fits.len() <= p {
                    fits.push(Swag::new(theta.len(), self.rank)?);
                }
                fits[p].add(&theta)?;
            }
        }
        if !(done.is_multiple_of(self.cycle) || last) {
            return Ok(Vec::new());
        }
        let cycle = (done - 1) / self.cycle;
        let mut drawn = Vec::new();
        for (p, fit) in std::mem::take(fits).iter().enumerate() {
            if fit.count() == 0 {
                continue;
            }
            let mut rng = ChainRng::new(self.seed ^ 0x5A6A_6000, cycle * 64 + p as u64);
            for _ in 0..self.samples {
                drawn.push(SwagDraw {
                    chain: p,
                    cycle,
                    theta: fit.sample(&mut rng)?,
                });
            }
        }
        Ok(drawn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_of_a_handful_of_iterates_are_exact() {
        let mut s = Swag::new(2, 2).unwrap();
        for x in [[1.0f32, 0.0], [3.0, 2.0], [5.0, 4.0]] {
            s.add(&x).unwrap();
        }
        assert_eq!(s.mean(), &[3.0, 2.0]);
        // Population variances of (1, 3, 5) and (0, 2, 4): 8/3.
        for v in s.diag_variance() {
            assert!((v - 8.0 / 3.0).abs() < 1e-12);
        }
        // Deviations from the running means: x2 - mean(x1, x2) = (1, 1), x3 - mean = (2, 2);
        // the first fell out (rank 2). Low-rank variance (1 + 4) / (2 - 1) = 5.
        assert_eq!(s.kept(), 2);
        for v in s.sample_variance() {
            assert!((v - 0.5 * (8.0 / 3.0 + 5.0)).abs() < 1e-12);
        }
        assert!(s.add(&[1.0]).is_err());
        assert!(Swag::new(3, 1).is_err());
        assert!(
            Swag::new(3, 2)
                .unwrap()
                .sample(&mut ChainRng::new(1, 0))
                .is_err()
        );
    }
}
