//! Scoring sampled ResNets as the papers report them: accuracy, NLL (mean and summed over the
//! test set, Table 6.1), Brier score (per mille) and expected calibration error on the test
//! set ([`ClassifierMetrics`]); predictive entropy and Brier score on out-of-distribution
//! images. The class probabilities come from
//! [`sgmcmc_engine::predict::classifier::probabilities`] (each sampled network with its own
//! running BatchNorm statistics); the model average is the weighted average of these.

use serde::{Deserialize, Serialize};
use sgmcmc_data::Images;
use sgmcmc_models::metrics::{self, Bma, CALIBRATION_BINS, ClassifierMetrics, entropy};

/// Metrics of `probs` on `set`.
pub fn metrics(probs: &[f64], set: &Images) -> ClassifierMetrics {
    ClassifierMetrics::of(probs, usize::from(set.classes), &labels(set))
}

fn labels(set: &Images) -> Vec<usize> {
    set.labels.iter().map(|&l| usize::from(l)).collect()
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
    metrics::reliability(
        probs,
        usize::from(set.classes),
        &labels(set),
        CALIBRATION_BINS,
    )
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
        assert_eq!(m, ClassifierMetrics::of(&p, 2, &[0, 0]));
        let o = ood_metrics(&[0.5, 0.5, 1.0, 0.0], 2);
        assert!((o.mean_entropy - 2f64.ln() / 2.0).abs() < 1e-12);
        // (0.25 + 0.25) / 2 and (1 + 0) / 2, averaged: 0.375.
        assert!((o.brier_permille - 375.0).abs() < 1e-9);
        let r = reliability(&p, &set(vec![0, 0]));
        assert_eq!(r, vec![(0.6, 0.0, 1), (0.9, 1.0, 1)]);
    }
}
