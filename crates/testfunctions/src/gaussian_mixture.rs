//! Gaussian mixtures in any dimension, `pi(x) = sum_k w_k N(x; mu_k, C_k)`, with
//! `U(x) = -ln pi(x)` and `grad U(x) = sum_k r_k(x) C_k^-1 (x - mu_k)`, where
//! `r_k(x) = w_k N(x; mu_k, C_k) / pi(x)` are the responsibilities. Both come from one pass of
//! a running log-sum-exp over `l_k = ln w_k - (d/2) ln 2 pi - ln |C_k|^(1/2) - q_k / 2`,
//! `q_k = (x - mu_k)^T C_k^-1 (x - mu_k)`, so far tails neither underflow nor overflow.
//!
//! Modes are the cells of the nearest mean ([`NearestMean`]). Exact draws make Monte Carlo
//! masses possible in any dimension: at temperature `tau`, `pi_tau ∝ pi^(1/tau)` is drawn through
//! the proposal `q_tau = sum_k v_k N(mu_k, tau C_k)` with
//! `v_k ∝ w_k^(1/tau) |C_k|^((1 - 1/tau)/2)`, the mass `∫ (w_k N_k)^(1/tau)` that component `k`
//! contributes when the components do not overlap; at `tau = 1`, `q_1 = pi` and the draws are
//! exact.

use crate::ExactDraws;
use crate::covariance::{Covariance, Factor};
use crate::nearest_mean::NearestMean;
use crate::{ModeMap, Potential};
use sgmcmc_samplers::error::MixtureError;
use sgmcmc_samplers::rng::ChainRng;

const HALF_LN_2PI: f64 = 0.918_938_533_204_672_8;

/// One component: its mean and covariance factors.
#[derive(Clone, Debug)]
struct Component {
    mean: Vec<f64>,
    factor: Factor,
}

impl Component {
    /// `q = (x - mu)^T P (x - mu)`.
    fn quad(&self, x: &[f64]) -> f64 {
        let d = self.mean.len();
        let p = &self.factor.precision;
        if self.factor.diagonal {
            return (0..d)
                .map(|i| (x[i] - self.mean[i]).powi(2) * p[i * d + i])
                .sum();
        }
        (0..d)
            .map(|i| {
                let row: f64 = (0..d).map(|j| p[i * d + j] * (x[j] - self.mean[j])).sum();
                (x[i] - self.mean[i]) * row
            })
            .sum()
    }

    /// `g += scale P (x - mu)`.
    fn add_gradient(&self, x: &[f64], scale: f64, g: &mut [f64]) {
        let d = self.mean.len();
        let p = &self.factor.precision;
        for (i, gi) in g.iter_mut().enumerate() {
            *gi += scale
                * if self.factor.diagonal {
                    p[i * d + i] * (x[i] - self.mean[i])
                } else {
                    (0..d).map(|j| p[i * d + j] * (x[j] - self.mean[j])).sum()
                };
        }
    }

    /// Variance of coordinate `i`, `C_ii = sum_j L_ij^2`.
    fn variance(&self, i: usize) -> f64 {
        let d = self.mean.len();
        (0..=i).map(|j| self.factor.chol[i * d + j].powi(2)).sum()
    }
}

/// A Gaussian mixture on `R^d` with full covariances.
#[derive(Clone, Debug)]
pub struct GaussianMixture {
    log_weights: Vec<f64>,
    components: Vec<Component>,
    modes: NearestMean,
}

impl GaussianMixture {
    /// The mixture with (unnormalised, positive) `weights`, `means` (all of one dimension `d`)
    /// and one covariance per component. Weights are normalised to sum to 1.
    pub fn new(
        weights: &[f64],
        means: &[Vec<f64>],
        covariances: &[Covariance],
    ) -> Result<Self, MixtureError> {
        let n = means.len();
        let d = means.first().ok_or(MixtureError::Empty)?.len();
        if d == 0 {
            return Err(MixtureError::ZeroDimension);
        }
        let count = |what, got| MixtureError::Count {
            what,
            got,
            expected: n,
        };
        if weights.len() != n {
            return Err(count("weights", weights.len()));
        }
        if covariances.len() != n {
            return Err(count("covariances", covariances.len()));
        }
        let mut components = Vec::with_capacity(n);
        for (k, ((&w, mean), cov)) in weights.iter().zip(means).zip(covariances).enumerate() {
            if !(w.is_finite() && w > 0.0) {
                return Err(MixtureError::Weight {
                    component: k,
                    value: w,
                });
            }
            if mean.len() != d {
                return Err(MixtureError::Size {
                    component: k,
                    what: "mean",
                    got: mean.len(),
                    expected: d,
                    dim: d,
                });
            }
            if let Some(&value) = mean.iter().find(|v| !v.is_finite()) {
                return Err(MixtureError::NonFinite {
                    component: k,
                    what: "mean",
                    value,
                });
            }
            components.push(Component {
                mean: mean.clone(),
                factor: cov.factor(k, d)?,
            });
        }
        let total: f64 = weights.iter().sum();
        if !total.is_finite() {
            return Err(MixtureError::Weight {
                component: 0,
                value: total,
            });
        }
        Ok(Self {
            log_weights: weights.iter().map(|w| (w / total).ln()).collect(),
            components,
            modes: NearestMean::new(means),
        })
    }

    /// The normalised weights.
    pub fn weights(&self) -> Vec<f64> {
        self.log_weights.iter().map(|l| l.exp()).collect()
    }

    /// The component means.
    pub fn means(&self) -> Vec<Vec<f64>> {
        self.components.iter().map(|c| c.mean.clone()).collect()
    }

    /// Exact mean `sum_k w_k mu_k` (at temperature 1).
    pub fn mean(&self) -> Vec<f64> {
        let mut m = vec![0.0; self.dim()];
        for (lw, c) in self.log_weights.iter().zip(&self.components) {
            for (mi, ci) in m.iter_mut().zip(&c.mean) {
                *mi += lw.exp() * ci;
            }
        }
        m
    }

    /// `ln sum_k exp(lw_k) N(x; mu_k, tau C_k)`; with `grad`, also writes
    /// `-grad_x` of it, `sum_k r_k (tau C_k)^-1 (x - mu_k)`.
    fn log_mix(&self, x: &[f64], lw: &[f64], tau: f64, mut grad: Option<&mut [f64]>) -> f64 {
        let d = x.len() as f64;
        let norm = d * (HALF_LN_2PI + 0.5 * tau.ln());
        if let Some(g) = grad.as_deref_mut() {
            g.fill(0.0);
        }
        // Running log-sum-exp: `max` is the largest term so far, `s` the sum of
        // exp(l_k - max) and `grad` the responsibility-weighted sum at the same scale.
        let (mut max, mut s) = (f64::NEG_INFINITY, 0.0);
        for (c, &l0) in self.components.iter().zip(lw) {
            let l = l0 - norm - c.factor.half_log_det - 0.5 * c.quad(x) / tau;
            if l.is_nan() {
                return f64::NAN;
            }
            if l == f64::NEG_INFINITY {
                continue;
            }
            if l > max {
                let f = (max - l).exp();
                s *= f;
                if let Some(g) = grad.as_deref_mut() {
                    g.iter_mut().for_each(|v| *v *= f);
                }
                max = l;
            }
            let e = (l - max).exp();
            s += e;
            if let Some(g) = grad.as_deref_mut() {
                c.add_gradient(x, e / tau, g);
            }
        }
        if let Some(g) = grad {
            g.iter_mut().for_each(|v| *v /= s);
        }
        max + s.ln()
    }

    /// Log proposal weights `ln v_k` at temperature `tau`, normalised.
    fn proposal_log_weights(&self, tau: f64) -> Vec<f64> {
        let raw: Vec<f64> = self
            .log_weights
            .iter()
            .zip(&self.components)
            .map(|(lw, c)| lw / tau + (1.0 - 1.0 / tau) * c.factor.half_log_det)
            .collect();
        let max = raw.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let lse = max + raw.iter().map(|r| (r - max).exp()).sum::<f64>().ln();
        raw.iter().map(|r| r - lse).collect()
    }
}

impl Potential for GaussianMixture {
    fn dim(&self) -> usize {
        self.components[0].mean.len()
    }

    fn energy(&self, x: &[f64]) -> f64 {
        -self.log_mix(x, &self.log_weights, 1.0, None)
    }

    fn energy_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let u = -self.log_mix(x, &self.log_weights, 1.0, Some(grad));
        if !u.is_finite() {
            // Every component underflows (or x is not finite): an infinite energy, which
            // samplers report as a divergence.
            grad.fill(f64::NAN);
            return f64::INFINITY;
        }
        u
    }

    /// Each coordinate's range over the components' means +- 12 marginal sds.
    fn support(&self) -> Option<Vec<(f64, f64)>> {
        Some(
            (0..self.dim())
                .map(|i| {
                    let ends = self.components.iter().map(|c| {
                        let r = 12.0 * c.variance(i).sqrt();
                        (c.mean[i] - r, c.mean[i] + r)
                    });
                    ends.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (a, b)| {
                        (lo.min(a), hi.max(b))
                    })
                })
                .collect(),
        )
    }

    fn modes(&self) -> Option<&dyn ModeMap> {
        Some(&self.modes)
    }

    fn exact_draws(&self) -> Option<&dyn ExactDraws> {
        Some(self)
    }
}

impl ExactDraws for GaussianMixture {
    fn draw(&self, tau: f64, rng: &mut ChainRng, x: &mut [f64]) -> f64 {
        let exact = tau == 1.0;
        let lv = if exact {
            self.log_weights.clone()
        } else {
            self.proposal_log_weights(tau)
        };
        let u = rng.uniform();
        let mut acc = 0.0;
        let mut k = lv.len() - 1;
        for (i, l) in lv.iter().enumerate() {
            acc += l.exp();
            if u < acc {
                k = i;
                break;
            }
        }
        // x = mu_k + sqrt(tau) L_k xi.
        let c = &self.components[k];
        let d = x.len();
        let xi: Vec<f64> = (0..d).map(|_| rng.normal()).collect();
        for (i, xv) in x.iter_mut().enumerate() {
            let lx: f64 = (0..=i).map(|j| c.factor.chol[i * d + j] * xi[j]).sum();
            *xv = c.mean[i] + tau.sqrt() * lx;
        }
        if exact {
            return 0.0;
        }
        -self.energy(x) / tau - self.log_mix(x, &lv, tau, None)
    }

    fn min_scale(&self) -> f64 {
        // The smallest sd along any direction is 1 / sqrt(lambda_max(P)) >= 1 / sqrt(tr P).
        let d = self.dim();
        self.components
            .iter()
            .map(|c| {
                1.0 / (0..d)
                    .map(|i| c.factor.precision[i * d + i])
                    .sum::<f64>()
                    .sqrt()
            })
            .fold(f64::INFINITY, f64::min)
    }
}

#[cfg(test)]
mod tests;
