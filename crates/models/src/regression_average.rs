//! The weighted model average of a Gaussian regression and its predictive, as the CSGLD paper
//! scores its UCI runs (sec. 4.2, Table 1).
//!
//! Models `k` (kept samples, in the order they are added: the sums' rounding) with importance
//! weights `w_k` predict `m_kt` on the test inputs and `r_ki` on the training inputs, in the
//! network's units. With `W = sum_k w_k`:
//!
//! * the predictive mean `mu_t = sum_k w_k m_kt / W`, mapped to the target's units by the
//!   affine `back`;
//! * its variance, the models' spread plus a plug-in noise variance, the mean squared training
//!   residual of the averaged prediction: `v_t = sum_k w_k m_kt^2 / W - mu_t^2 +
//!   (1 / N) sum_i (sum_k w_k r_ki / W - y_i)^2`, in the target's units
//!   `(back(mu_t + sqrt(v_t)) - back(mu_t))^2`, and the Gaussian NLL of the test targets;
//! * with a noise precision sampled per model (`lambda_k = e^(s_k)`), the NLL of the mixture
//!   predictive `sum_k w_k N(y; back(m_kt), sigma_k^2) / W` itself
//!   ([`MixtureNll`], `sigma_k = |back(1) - back(0)| lambda_k^(-1/2)`), and the weighted mean
//!   noise sd.

use serde::{Deserialize, Serialize};

use crate::metrics::gaussian_nll;
use crate::mixture_nll::MixtureNll;

/// One model's predictions: what it adds to the average.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ModelPredictions {
    /// On the test inputs (network units).
    pub test: Vec<f64>,
    /// On the training inputs (network units).
    pub train: Vec<f64>,
    /// The model's sampled log noise precision `ln lambda`, when it has one.
    pub log_precision: Option<f64>,
}

/// The weighted sums behind the average (checkpointed with a run).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RegressionAverage {
    test: Vec<f64>,
    test_sq: Vec<f64>,
    train: Vec<f64>,
    weight: f64,
    weight_sq: f64,
    mixture: MixtureNll,
    sd: f64,
    /// Whether the models carry a sampled noise precision (left out of the serialized form
    /// when not, so a fixed-noise run's state reads as before it existed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    sampled: bool,
}

/// The predictive of the average on the test inputs, in the target's units.
#[derive(Clone, Debug, PartialEq)]
pub struct RegressionPredictive {
    /// Predictive means.
    pub mean: Vec<f64>,
    /// Predictive variances (the models' spread and the plug-in noise).
    pub variance: Vec<f64>,
    /// Mean test NLL: of the mixture predictive with sampled noise (where it has a value),
    /// else Gaussian with [`Self::variance`].
    pub nll: f64,
    /// With sampled noise: the weighted mean noise sd.
    pub noise_sd: Option<f64>,
}

impl RegressionAverage {
    /// An empty average over `n_test` test inputs whose targets are `y_test` (the target's
    /// units) and `n_train` training inputs.
    pub fn new(n_train: usize, y_test: Vec<f64>) -> Self {
        Self {
            test: vec![0.0; y_test.len()],
            test_sq: vec![0.0; y_test.len()],
            train: vec![0.0; n_train],
            weight: 0.0,
            weight_sq: 0.0,
            mixture: MixtureNll::new(y_test),
            sd: 0.0,
            sampled: false,
        }
    }

    /// Adds model `m` with importance weight `w`; `back` maps network units to the target's.
    pub fn add(&mut self, w: f64, m: &ModelPredictions, back: &dyn Fn(f64) -> f64) {
        for (sum, (q, p)) in self
            .test
            .iter_mut()
            .zip(self.test_sq.iter_mut().zip(&m.test))
        {
            *sum += w * p;
            *q += w * p * p;
        }
        for (sum, p) in self.train.iter_mut().zip(&m.train) {
            *sum += w * p;
        }
        if let Some(lp) = m.log_precision {
            let sd = (back(1.0) - back(0.0)).abs() * (-0.5 * lp).exp();
            let means: Vec<f64> = m.test.iter().map(|p| back(*p)).collect();
            self.mixture.add(w, &means, sd);
            self.sd += w * sd;
            self.sampled = true;
        }
        self.weight += w;
        self.weight_sq += w * w;
    }

    /// The sum of the weights and the sum of their squares.
    pub fn weights(&self) -> (f64, f64) {
        (self.weight, self.weight_sq)
    }

    /// The predictive on the test inputs, from the training targets `y_train` in network
    /// units; `None` when no weight was added (or the weights vanished).
    pub fn predictive(
        &self,
        y_train: &[f32],
        back: &dyn Fn(f64) -> f64,
    ) -> Option<RegressionPredictive> {
        let wsum = self.weight;
        if wsum.is_nan() || wsum <= 0.0 {
            return None;
        }
        let noise = self
            .train
            .iter()
            .zip(y_train)
            .map(|(t, y)| (t / wsum - f64::from(*y)).powi(2))
            .sum::<f64>()
            / y_train.len() as f64;
        let (mut mean, mut variance) = (Vec::new(), Vec::new());
        for (t, q) in self.test.iter().zip(&self.test_sq) {
            let mu = t / wsum;
            let v = (q / wsum - mu * mu).max(0.0) + noise;
            let p = back(mu);
            mean.push(p);
            variance.push((back(mu + v.sqrt()) - p).powi(2));
        }
        let nll = match self.mixture.value() {
            Some(v) if self.sampled => v,
            _ => gaussian_nll(&mean, &variance, self.mixture.targets()),
        };
        Some(RegressionPredictive {
            mean,
            variance,
            nll,
            noise_sd: self.sampled.then(|| self.sd / wsum),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_models_give_the_hand_computed_predictive() {
        // Weights 1 and 3; test means 1 and 3 at one point; training predictions 0 and 4 at
        // two points with targets 2 and 3 (network units); back(v) = 2 v + 1.
        let back = |v: f64| 2.0 * v + 1.0;
        let mut avg = RegressionAverage::new(2, vec![6.0]);
        let model = |t: f64, r: f64| ModelPredictions {
            test: vec![t],
            train: vec![r, r],
            log_precision: None,
        };
        avg.add(1.0, &model(1.0, 0.0), &back);
        avg.add(3.0, &model(3.0, 4.0), &back);
        assert_eq!(avg.weights(), (4.0, 10.0));
        let p = avg.predictive(&[2.0, 3.0], &back).unwrap();
        // mu = 10 / 4 = 2.5; spread 28 / 4 - 6.25 = 0.75; train mean 3: residuals 1, 0 -> 0.5.
        let v: f64 = 0.75 + 0.5;
        assert_eq!(p.mean, vec![6.0]);
        assert!((p.variance[0] - 4.0 * v).abs() < 1e-12, "{:?}", p.variance);
        let nll = 0.5 * (2.0 * std::f64::consts::PI * 4.0 * v).ln();
        assert!((p.nll - nll).abs() < 1e-12, "{} vs {nll}", p.nll);
        assert_eq!(p.noise_sd, None);
        assert!(
            RegressionAverage::new(1, vec![0.0])
                .predictive(&[0.0], &back)
                .is_none()
        );
    }

    #[test]
    fn sampled_noise_scores_the_mixture_and_its_mean_sd() {
        let back = |v: f64| v;
        let mut avg = RegressionAverage::new(1, vec![0.5]);
        for (w, lp) in [(1.0, 0.0), (1.0, (4.0f64).ln())] {
            let m = ModelPredictions {
                test: vec![0.0],
                train: vec![0.0],
                log_precision: Some(lp),
            };
            avg.add(w, &m, &back);
        }
        let p = avg.predictive(&[0.0], &back).unwrap();
        // Noise sds 1 and 1/2: their mean 0.75; the mixture's density at 0.5.
        assert!((p.noise_sd.unwrap() - 0.75).abs() < 1e-12);
        let pdf =
            |s: f64| (-0.5 * (0.5 / s).powi(2)).exp() / (s * (2.0 * std::f64::consts::PI).sqrt());
        let nll = -(0.5 * (pdf(1.0) + pdf(0.5))).ln();
        assert!((p.nll - nll).abs() < 1e-12, "{} vs {nll}", p.nll);
    }
}
