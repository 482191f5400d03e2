//! 1-D Gaussian mixtures `sum_k w_k N(mu_k, sigma_k^2)`: `U(x) = -ln sum_k w_k N(x; mu_k, sigma_k^2)`.

use crate::{ModeMap, Potential};
use sgmcmc_samplers::error::TargetError;

/// A 1-D Gaussian mixture; its modes are the basins between density minima.
#[derive(Clone, Debug)]
pub struct Mixture1d {
    weights: Vec<f64>,
    means: Vec<f64>,
    sds: Vec<f64>,
    modes: MixtureModes,
}

/// Basins of a 1-D mixture: components sorted by mean, split at the density minimum between
/// consecutive means.
#[derive(Clone, Debug)]
pub struct MixtureModes {
    centres: Vec<f64>,
    boundaries: Vec<f64>,
}

impl Mixture1d {
    /// Mixture of `(weight, mean, sd)` components; weights are normalised.
    pub fn new(components: &[(f64, f64, f64)]) -> Result<Self, TargetError> {
        let bad = |name, v: f64, reason| TargetError::InvalidParameter {
            name,
            value: v.to_string(),
            reason,
        };
        if components.is_empty() {
            return Err(TargetError::Shape("a mixture needs >= 1 component".into()));
        }
        for &(w, m, s) in components {
            if !(w.is_finite() && w > 0.0) {
                return Err(bad("weight", w, "must be finite and > 0"));
            }
            if !m.is_finite() {
                return Err(bad("mean", m, "must be finite"));
            }
            if !(s.is_finite() && s > 0.0) {
                return Err(bad("sd", s, "must be finite and > 0"));
            }
        }
        let mut comps = components.to_vec();
        comps.sort_by(|a, b| a.1.total_cmp(&b.1));
        let total: f64 = comps.iter().map(|c| c.0).sum();
        let mut mix = Self {
            weights: comps.iter().map(|c| c.0 / total).collect(),
            means: comps.iter().map(|c| c.1).collect(),
            sds: comps.iter().map(|c| c.2).collect(),
            modes: MixtureModes {
                centres: comps.iter().map(|c| c.1).collect(),
                boundaries: vec![],
            },
        };
        mix.modes.boundaries = mix
            .means
            .windows(2)
            .map(|w| mix.energy_argmax(w[0], w[1]))
            .collect();
        Ok(mix)
    }

    /// Maximum of the energy (density minimum) on `[a, b]` by a fine grid plus golden refinement.
    fn energy_argmax(&self, a: f64, b: f64) -> f64 {
        let n = 2000;
        let h = (b - a) / n as f64;
        let i = (0..=n)
            .max_by(|&i, &j| {
                self.energy(&[a + i as f64 * h])
                    .total_cmp(&self.energy(&[a + j as f64 * h]))
            })
            .unwrap_or(0);
        let (mut lo, mut hi) = (
            a + (i.max(1) - 1) as f64 * h,
            a + ((i + 1).min(n)) as f64 * h,
        );
        let phi = 0.5 * (5f64.sqrt() - 1.0);
        for _ in 0..60 {
            let c = hi - phi * (hi - lo);
            let d = lo + phi * (hi - lo);
            if self.energy(&[c]) > self.energy(&[d]) {
                hi = d;
            } else {
                lo = c;
            }
        }
        0.5 * (lo + hi)
    }

    /// Normalised weights, means and standard deviations (sorted by mean).
    pub fn components(&self) -> Vec<(f64, f64, f64)> {
        (0..self.weights.len())
            .map(|k| (self.weights[k], self.means[k], self.sds[k]))
            .collect()
    }

    /// Exact mean `sum_k w_k mu_k` (at temperature 1).
    pub fn mean(&self) -> f64 {
        self.weights
            .iter()
            .zip(&self.means)
            .map(|(w, m)| w * m)
            .sum()
    }

    /// The boundaries between basins.
    pub fn boundaries(&self) -> &[f64] {
        &self.modes.boundaries
    }
}

impl Potential for Mixture1d {
    fn dim(&self) -> usize {
        1
    }

    fn energy(&self, x: &[f64]) -> f64 {
        let mut g = [0.0];
        self.energy_grad(x, &mut g)
    }

    fn energy_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        // log-sum-exp of l_k = ln w_k - ln(sigma_k sqrt(2 pi)) - (x - mu_k)^2 / (2 sigma_k^2).
        const HALF_LN_2PI: f64 = 0.918_938_533_204_672_8;
        let x = x[0];
        let log_term = |k: usize| {
            let z = (x - self.means[k]) / self.sds[k];
            self.weights[k].ln() - self.sds[k].ln() - HALF_LN_2PI - 0.5 * z * z
        };
        let n = self.weights.len();
        let lmax = (0..n).map(log_term).fold(f64::NEG_INFINITY, f64::max);
        if !lmax.is_finite() {
            // |x| so large that every component underflows (or x is not finite): report an
            // infinite energy, which samplers turn into a divergence error.
            grad[0] = f64::NAN;
            return f64::INFINITY;
        }
        let (mut s, mut ds) = (0.0, 0.0);
        for k in 0..n {
            let e = (log_term(k) - lmax).exp();
            s += e;
            ds += e * (x - self.means[k]) / (self.sds[k] * self.sds[k]);
        }
        grad[0] = ds / s;
        -(lmax + s.ln())
    }

    fn support(&self) -> Option<Vec<(f64, f64)>> {
        let lo = (0..self.means.len())
            .map(|k| self.means[k] - 12.0 * self.sds[k])
            .fold(f64::INFINITY, f64::min);
        let hi = (0..self.means.len())
            .map(|k| self.means[k] + 12.0 * self.sds[k])
            .fold(f64::NEG_INFINITY, f64::max);
        Some(vec![(lo, hi)])
    }

    fn modes(&self) -> Option<&dyn ModeMap> {
        Some(&self.modes)
    }
}

impl ModeMap for MixtureModes {
    fn n_modes(&self) -> usize {
        self.centres.len()
    }

    fn mode_of(&self, x: &[f64]) -> usize {
        self.boundaries.iter().take_while(|&&b| x[0] > b).count()
    }

    fn labels(&self) -> Vec<String> {
        self.centres.iter().map(|c| format!("x~{c}")).collect()
    }

    fn centres(&self) -> Vec<Vec<f64>> {
        self.centres.iter().map(|&c| vec![c]).collect()
    }
}
