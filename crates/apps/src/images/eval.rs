//! Scoring sampled ResNets as the papers report them: accuracy, NLL (mean and summed over the
//! test set, Table 6.1), Brier score (per mille) and expected calibration error on the test
//! set; predictive entropy and Brier score on out-of-distribution images.
//!
//! **BatchNorm.** A sampled network is scored with the running means and variances its own
//! forward passes accumulated while it was sampled (burn's `BatchNorm` on a plain device, like
//! the reference code's `model.eval()`): the running statistics are not sampled; each collected
//! model brings its own, and the model average is the weighted average of the class
//! probabilities of these networks.

use burn::tensor::{Device, Tensor, activation};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sgmcmc_data::Images;
use sgmcmc_data::datasets::ChannelBatcher;
use sgmcmc_models::Network;
use sgmcmc_models::metrics::{self, Bma, accuracy, brier, ece, entropy, nll};

use crate::error::AppError;
use crate::images::data::tensor;

/// Images per forward pass during evaluation.
const CHUNK: usize = 500;

/// Confidence bins of the ECE (and of the calibration plot).
pub const ECE_BINS: usize = 15;

/// Class probabilities `[n, k]` (row-major) of `model` on every image of `set`, forward only on
/// the plain `device` with the running BatchNorm statistics. Chunks of images run on the
/// threads of the current pool (burn's inference convolution keeps about one core busy); each
/// chunk is computed alone and the rows are concatenated in order, so the result does not
/// depend on the threads.
pub fn probabilities<M: Network<Input = Tensor<4>> + Sync>(
    model: &M,
    set: &Images,
    norm: &ChannelBatcher,
    device: &Device,
) -> Result<Vec<f64>, AppError> {
    let model = model.valid();
    let starts: Vec<usize> = (0..set.len()).step_by(CHUNK).collect();
    let chunks: Vec<Vec<f32>> = starts
        .into_par_iter()
        .map(|start| {
            let end = (start + CHUNK).min(set.len());
            let x = tensor(set, start..end, norm, device);
            activation::softmax(model.forward(x), 1)
                .into_data()
                .try_into_vec::<f32>()
                .map_err(|e| AppError::Run(format!("reading predictions: {e:?}")))
        })
        .collect::<Result<_, _>>()?;
    Ok(chunks.into_iter().flatten().map(f64::from).collect())
}

/// Test-set metrics of one prediction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Accuracy.
    pub accuracy: f64,
    /// Mean negative log-likelihood (nats per image).
    pub nll: f64,
    /// Negative log-likelihood summed over the test set (Table 6.1's NLL).
    pub nll_sum: f64,
    /// Mean Brier score `sum_c (p_c - 1{c = y})^2`, per mille.
    pub brier_permille: f64,
    /// Expected calibration error ([`ECE_BINS`] equal-width confidence bins), per cent.
    pub ece_percent: f64,
}

/// Metrics of `probs` on `set`.
pub fn metrics(probs: &[f64], set: &Images) -> Metrics {
    let k = usize::from(set.classes);
    let labels: Vec<usize> = set.labels.iter().map(|&l| usize::from(l)).collect();
    let mean_nll = nll(probs, k, &labels);
    Metrics {
        accuracy: accuracy(probs, k, &labels),
        nll: mean_nll,
        nll_sum: mean_nll * labels.len() as f64,
        brier_permille: 1000.0 * brier(probs, k, &labels),
        ece_percent: 100.0 * ece(probs, k, &labels, ECE_BINS),
    }
}

/// Out-of-distribution metrics of one prediction: the model should be unsure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OodMetrics {
    /// Mean predictive entropy (nats; `ln k` is the most unsure).
    pub mean_entropy: f64,
    /// Table 6.1's out-of-distribution Brier score: the squared error against the all-zero
    /// target (no class is right), averaged over images and classes, `mean_i mean_c p_ic^2`,
    /// per mille (`1000 / k^2` for uniform predictions, `1000 / k` for one-hot ones).
    pub brier_permille: f64,
}

/// Out-of-distribution metrics of `probs` with `k` classes.
pub fn ood_metrics(probs: &[f64], k: usize) -> OodMetrics {
    let h = entropy(probs, k);
    let n = h.len().max(1) as f64;
    let brier: f64 = probs
        .chunks(k)
        .map(|row| row.iter().map(|p| p * p).sum::<f64>() / k as f64)
        .sum::<f64>()
        / n;
    OodMetrics {
        mean_entropy: h.iter().sum::<f64>() / n,
        brier_permille: 1000.0 * brier,
    }
}

/// Predictive entropies (nats) of `probs` with `k` classes, sorted.
pub fn sorted_entropy(probs: &[f64], k: usize) -> Vec<f64> {
    let mut e = entropy(probs, k);
    e.sort_by(f64::total_cmp);
    e
}

/// Reliability diagram: per confidence bin `(mean confidence, accuracy, count)` of the
/// top-class predictions (empty bins left out).
pub fn reliability(probs: &[f64], set: &Images) -> Vec<(f64, f64, usize)> {
    let labels: Vec<usize> = set.labels.iter().map(|&l| usize::from(l)).collect();
    metrics::reliability(probs, usize::from(set.classes), &labels, ECE_BINS)
        .into_iter()
        .map(|b| (b.confidence, b.accuracy, b.count))
        .collect()
}

/// The weighted model averages of a run (checkpointed with it).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Averages {
    /// On the test set.
    pub test: Bma,
    /// On the out-of-distribution set.
    pub ood: Bma,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(labels: Vec<u8>) -> Images {
        Images {
            pixels: vec![0; labels.len()],
            labels,
            channels: 1,
            rows: 1,
            cols: 1,
            classes: 2,
        }
    }

    #[test]
    fn metrics_and_ood_scores_match_hand_values() {
        let p = [0.9, 0.1, 0.4, 0.6];
        let m = metrics(&p, &set(vec![0, 0]));
        assert_eq!(m.accuracy, 0.5);
        let nll = -(0.9f64.ln() + 0.4f64.ln()) / 2.0;
        assert!((m.nll - nll).abs() < 1e-12 && (m.nll_sum - 2.0 * nll).abs() < 1e-12);
        // Brier: (0.01 + 0.01 + 0.36 + 0.36) / 2 = 0.37.
        assert!((m.brier_permille - 370.0).abs() < 1e-9);
        // ECE: bin of 0.9 (right, gap 0.1) and of 0.6 (wrong, gap 0.6), half the mass each.
        assert!((m.ece_percent - 35.0).abs() < 1e-9);
        let o = ood_metrics(&[0.5, 0.5, 1.0, 0.0], 2);
        assert!((o.mean_entropy - 2f64.ln() / 2.0).abs() < 1e-12);
        // (0.25 + 0.25) / 2 and (1 + 0) / 2, averaged: 0.375.
        assert!((o.brier_permille - 375.0).abs() < 1e-9);
        let r = reliability(&p, &set(vec![0, 0]));
        assert_eq!(r, vec![(0.6, 0.0, 1), (0.9, 1.0, 1)]);
    }
}
