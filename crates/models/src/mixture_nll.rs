//! Test NLL of a weighted Gaussian mixture predictive, streamed over collected models.
//!
//! A Bayesian model average over models `k` with weights `w_k`, mean predictions `m_kt` and
//! noise sd `sigma_k` (e.g. a learned noise precision per sample, `sigma_k = lambda_k^-1/2`)
//! predicts `p(y_t) = sum_k w_k N(y_t; m_kt, sigma_k^2) / sum_k w_k`. The NLL is
//! `-(1 / T) sum_t ln p(y_t)`, accumulated as a running log-sum-exp so no model's predictions
//! need to be stored.

use std::f64::consts::PI;

/// Streaming mean negative log predictive density of a Gaussian mixture.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct MixtureNll {
    y: Vec<f64>,
    /// `ln sum_k w_k N(y_t; m_kt, sigma_k^2)` per test point.
    log_mass: Vec<f64>,
    /// `ln sum_k w_k`.
    log_weight: f64,
}

/// `ln(e^a + e^b)`, exact at `-inf`.
fn log_add(a: f64, b: f64) -> f64 {
    let (hi, lo) = if a >= b { (a, b) } else { (b, a) };
    if lo == f64::NEG_INFINITY {
        hi
    } else {
        hi + (lo - hi).exp().ln_1p()
    }
}

impl MixtureNll {
    /// An empty mixture over the test targets `y`.
    pub fn new(y: Vec<f64>) -> Self {
        let log_mass = vec![f64::NEG_INFINITY; y.len()];
        Self {
            y,
            log_mass,
            log_weight: f64::NEG_INFINITY,
        }
    }

    /// Adds one component: weight `w >= 0`, means `m_t` (one per test target) and noise sd
    /// `sigma > 0`.
    pub fn add(&mut self, w: f64, means: &[f64], sigma: f64) {
        let lw = w.ln();
        let c = lw - sigma.ln() - 0.5 * (2.0 * PI).ln();
        for ((acc, y), m) in self.log_mass.iter_mut().zip(&self.y).zip(means) {
            let z = (y - m) / sigma;
            *acc = log_add(*acc, c - 0.5 * z * z);
        }
        self.log_weight = log_add(self.log_weight, lw);
    }

    /// The test targets `y_t`.
    pub fn targets(&self) -> &[f64] {
        &self.y
    }

    /// The mean NLL `-(1 / T) sum_t ln p(y_t)`; `None` before any component of positive weight.
    pub fn value(&self) -> Option<f64> {
        if !(self.log_weight.is_finite()) || self.y.is_empty() {
            return None;
        }
        let total: f64 = self.log_mass.iter().map(|l| self.log_weight - l).sum();
        Some(total / self.y.len() as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normal_pdf(y: f64, m: f64, s: f64) -> f64 {
        (-0.5 * ((y - m) / s).powi(2)).exp() / (s * (2.0 * PI).sqrt())
    }

    #[test]
    fn mixture_nll_matches_the_direct_sum() {
        let y = vec![0.3, -1.2];
        let mut mix = MixtureNll::new(y.clone());
        assert!(mix.value().is_none());
        let comps = [
            (1.0, [0.0, -1.0], 0.5),
            (3.0, [1.0, 0.5], 2.0),
            (0.0, [9.0, 9.0], 1.0),
        ];
        for (w, m, s) in &comps {
            mix.add(*w, m, *s);
        }
        let direct: f64 = y
            .iter()
            .enumerate()
            .map(|(t, yt)| {
                let p: f64 = comps
                    .iter()
                    .map(|(w, m, s)| w * normal_pdf(*yt, m[t], *s))
                    .sum();
                -(p / 4.0).ln()
            })
            .sum::<f64>()
            / 2.0;
        let got = mix.value().unwrap();
        assert!((got - direct).abs() < 1e-12, "{got} vs {direct}");
    }

    #[test]
    fn one_component_is_the_gaussian_nll() {
        let mut mix = MixtureNll::new(vec![2.0]);
        mix.add(0.7, &[1.0], 3.0);
        let want = 0.5 * (2.0 * PI * 9.0).ln() + 0.5 / 9.0;
        assert!((mix.value().unwrap() - want).abs() < 1e-12);
        // Far tails do not underflow to an infinite NLL.
        let mut far = MixtureNll::new(vec![1e3]);
        far.add(1.0, &[0.0], 1e-3);
        assert!(far.value().unwrap().is_finite());
    }
}
