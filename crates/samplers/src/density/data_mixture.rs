//! The VR-reSGLD data posterior (thesis sec. 3.5.1): data `y_i ~ 0.5 N(beta, sigma^2) +
//! 0.5 N(phi - beta, sigma^2)` (beta = -5, phi = 20, sigma = 5), a N(0, prior_var) prior on
//! beta, and minibatch energies at full-data scale
//! `L(B | beta) = beta^2 / (2 prior_var) - (N / n) sum_(i in B) log p(y_i | beta)`.
//!
//! The likelihood is symmetric under `beta -> phi - beta`: the posterior has two modes (near -5
//! and 25) that differ only through the prior, by `(25^2 - 5^2) / (2 prior_var)` in energy.

use crate::ensemble::{ExactHostTarget, HostTarget};
use crate::error::TargetError;
use crate::rng::ChainRng;

/// Data, model constants and the prior.
#[derive(Clone, Debug)]
pub struct MixtureData {
    data: Vec<f64>,
    phi: f64,
    sigma: f64,
    prior_var: f64,
}

/// A minibatch: indices into the data (drawn with replacement).
pub type Indices = Vec<usize>;

impl MixtureData {
    /// `n` points from the model at `beta`, drawn with `seed`.
    pub fn generate(
        n: usize,
        beta: f64,
        phi: f64,
        sigma: f64,
        prior_var: f64,
        seed: u64,
    ) -> Result<Self, TargetError> {
        for (name, v) in [("sigma", sigma), ("prior_var", prior_var)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(TargetError::InvalidParameter {
                    name,
                    value: v.to_string(),
                    reason: "must be finite and > 0",
                });
            }
        }
        if n == 0 {
            return Err(TargetError::Shape("need at least one data point".into()));
        }
        let mut rng = ChainRng::new(seed, 0);
        let data = (0..n)
            .map(|_| {
                let centre = if rng.uniform() < 0.5 {
                    beta
                } else {
                    phi - beta
                };
                centre + sigma * rng.normal()
            })
            .collect();
        Ok(Self {
            data,
            phi,
            sigma,
            prior_var,
        })
    }

    /// The thesis' setting: beta = -5, phi = 20, sigma = 5, prior N(0, 100).
    pub fn thesis(n: usize, seed: u64) -> Result<Self, TargetError> {
        Self::generate(n, -5.0, 20.0, 5.0, 100.0, seed)
    }

    /// Number of data points `N`.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether there is no data (never, once built).
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// A minibatch of `n` indices drawn with replacement.
    pub fn minibatch(&self, n: usize, rng: &mut ChainRng) -> Indices {
        (0..n).map(|_| rng.below(self.data.len())).collect()
    }

    /// `-log p(y | beta)` (up to a constant) and its derivative in beta.
    #[inline]
    fn point(&self, y: f64, beta: f64) -> (f64, f64) {
        let s2 = self.sigma * self.sigma;
        let (a, b) = (y - beta, y - (self.phi - beta));
        let (la, lb) = (-a * a / (2.0 * s2), -b * b / (2.0 * s2));
        let m = la.max(lb);
        let (ea, eb) = ((la - m).exp(), (lb - m).exp());
        let nll = -(m + (0.5 * (ea + eb)).ln());
        // d/dbeta of -log(0.5 e^la + 0.5 e^lb): la' = a / s2, lb' = -b / s2.
        let grad = -(ea * a / s2 - eb * b / s2) / (ea + eb);
        (nll, grad)
    }

    /// Energy and derivative on the points `idx`, scaled to the full data.
    pub fn batch_energy_grad(&self, beta: f64, idx: &[usize]) -> (f64, f64) {
        let scale = self.data.len() as f64 / idx.len().max(1) as f64;
        let (mut e, mut g) = (0.0, 0.0);
        for &i in idx {
            let (a, b) = self.point(self.data[i], beta);
            e += a;
            g += b;
        }
        let prior = beta * beta / (2.0 * self.prior_var);
        (prior + scale * e, beta / self.prior_var + scale * g)
    }

    /// The full-data energy `L(beta)`.
    pub fn full_energy(&self, beta: f64) -> f64 {
        let e: f64 = self.data.iter().map(|y| self.point(*y, beta).0).sum();
        beta * beta / (2.0 * self.prior_var) + e
    }
}

impl HostTarget for MixtureData {
    type Batch = Indices;

    fn dim(&self) -> usize {
        1
    }

    fn energy_grad(&self, x: &[f64], batch: &Indices, grad: &mut [f64], _: &mut ChainRng) -> f64 {
        let (e, g) = self.batch_energy_grad(x[0], batch);
        grad[0] = g;
        e
    }
}

impl ExactHostTarget for MixtureData {
    fn batch_energy(&self, x: &[f64], batch: &Indices) -> f64 {
        self.batch_energy_grad(x[0], batch).0
    }

    fn full_energy(&self, x: &[f64]) -> f64 {
        MixtureData::full_energy(self, x[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gradient_matches_finite_differences_and_the_likelihood_is_symmetric() {
        let m = MixtureData::thesis(2000, 3).unwrap();
        let idx: Vec<usize> = (0..2000).collect();
        for beta in [-5.3, 2.0, 24.6] {
            let h = 1e-5;
            let (_, g) = m.batch_energy_grad(beta, &idx);
            let fd = (m.full_energy(beta + h) - m.full_energy(beta - h)) / (2.0 * h);
            assert!((g - fd).abs() < 1e-4 * (1.0 + fd.abs()), "{g} vs {fd}");
        }
        // Only the prior separates beta and 20 - beta.
        let (a, b) = (m.full_energy(-5.0), m.full_energy(25.0));
        assert!(((b - a) - (625.0 - 25.0) / 200.0).abs() < 1e-6 * a.abs().max(1.0));
        assert!(MixtureData::generate(10, 0.0, 20.0, -1.0, 1.0, 1).is_err());
    }
}
