//! Scoring sampled ResNets as the papers report them: accuracy, NLL (mean and summed over the
//! test set, Table 6.1), Brier score (per mille) and expected calibration error on the test
//! set ([`ClassifierMetrics`]); predictive entropy and Brier score on out-of-distribution
//! images ([`sgmcmc_models::metrics::OodMetrics`]). The class probabilities come from
//! [`sgmcmc_engine::predict::classifier::probabilities`] (each sampled network with its own
//! running BatchNorm statistics); the model average is the weighted average of these.

use serde::{Deserialize, Serialize};
use sgmcmc_data::Images;
use sgmcmc_models::metrics::{self, Bma, CALIBRATION_BINS, ClassifierMetrics};

/// Metrics of `probs` on `set`.
pub fn metrics(probs: &[f64], set: &Images) -> ClassifierMetrics {
    ClassifierMetrics::of(probs, usize::from(set.classes), &labels(set))
}

fn labels(set: &Images) -> Vec<usize> {
    set.labels.iter().map(|&l| usize::from(l)).collect()
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
    fn metrics_and_reliability_match_hand_values() {
        let p = [0.9, 0.1, 0.4, 0.6];
        let m = metrics(&p, &set(vec![0, 0]));
        assert_eq!(m, ClassifierMetrics::of(&p, 2, &[0, 0]));
        let r = reliability(&p, &set(vec![0, 0]));
        assert_eq!(r, vec![(0.6, 0.0, 1), (0.9, 1.0, 1)]);
    }
}
