//! The model average of a classifier: the Bayesian model average's class probabilities, and the
//! scores a Bayesian deep-learning paper reports for them.

use serde::{Deserialize, Serialize};
use sgmcmc_models::metrics::{
    ReliabilityBin, accuracy, auroc, average_precision, brier, ece, entropy, mutual_information,
    nll, reliability,
};
use sgmcmc_samplers::collect::LogWeightedMean;

use super::keep::{Keep, KeptModel, observe_by_keeping};
use crate::error::RunError;

pub use sgmcmc_models::metrics::CALIBRATION_BINS;

/// The weighted model average of a classifier's class probabilities on one input set:
/// `p(y | x) = sum_s w_s p(y | x, theta_s) / sum_s w_s` over the kept models (weights as
/// [`ModelAverage`](super::ModelAverage)'s: 1 for plain samplers, the importance weight of
/// contour samplers, rung 0 of replica exchange; in the log domain), together with the
/// weighted average of each model's predictive entropy, which splits the predictive
/// uncertainty into its aleatoric and epistemic (mutual information) parts.
///
/// `predict` returns a model's class probabilities on the set, `[n, classes]` row-major (a
/// softmax of its logits). Scores: [`ClassifierAverage::scores`] (accuracy, NLL, Brier, ECE with
/// its reliability bins, mean entropy and mutual information), the same for the last model
/// alone ([`ClassifierAverage::last_scores`]), and out-of-distribution detection against the
/// average on another set ([`ClassifierAverage::ood_detection`]). Checkpointed with the run.
pub struct ClassifierAverage<F> {
    classes: usize,
    predict: F,
    state: State,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct State {
    probabilities: LogWeightedMean,
    entropy: LogWeightedMean,
    last: Option<Vec<f64>>,
}

/// How a set of class probabilities scores on labelled inputs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClassifierScores {
    /// Fraction of inputs whose most probable class is the label.
    pub accuracy: f64,
    /// Mean negative log-likelihood of the labels.
    pub nll: f64,
    /// Mean Brier score `sum_c (p_c - 1{c = y})^2`.
    pub brier: f64,
    /// Expected calibration error over [`CALIBRATION_BINS`] confidence bins.
    pub ece: f64,
    /// The reliability diagram of those bins (empty ones left out).
    pub reliability: Vec<ReliabilityBin>,
    /// Mean predictive entropy.
    pub entropy: f64,
    /// Mean mutual information between label and model (the epistemic part of the entropy);
    /// 0 for a single model.
    pub mutual_information: f64,
}

/// Out-of-distribution detection by predictive entropy (out-of-distribution inputs are the
/// positives).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct OodDetection {
    /// Area under the ROC curve.
    pub auroc: f64,
    /// Average precision (area under the precision-recall curve).
    pub aupr: f64,
}

impl<F> ClassifierAverage<F> {
    /// Averages the class probabilities `predict(model)` over `classes` classes.
    pub fn new(classes: usize, predict: F) -> Self {
        Self {
            classes,
            predict,
            state: State::default(),
        }
    }

    /// Adds one model's class probabilities with log weight `log_w` (what the observer does
    /// for every kept model; for models scored outside a run, e.g. a saved posterior's).
    ///
    /// # Errors
    ///
    /// If `probs` is not `[n, classes]` with the `n` of the models added before.
    pub fn add_log(&mut self, log_w: f64, probs: &[f64]) -> Result<(), String> {
        let k = self.classes;
        let known = self.state.last.as_ref().map(Vec::len);
        if k == 0 || !probs.len().is_multiple_of(k) || known.is_some_and(|n| n != probs.len()) {
            return Err(format!(
                "a classifier's prediction must be [inputs, {k}] probabilities like the models' \
                 before ({} values{})",
                probs.len(),
                known.map_or(String::new(), |n| format!(", earlier {n}"))
            ));
        }
        self.state.probabilities.add_log(log_w, probs);
        self.state.entropy.add_log(log_w, &entropy(probs, k));
        self.state.last = Some(probs.to_vec());
        Ok(())
    }

    /// The averaged class probabilities, `[n, classes]` (`None` before a model with positive
    /// weight).
    pub fn probabilities(&self) -> Option<Vec<f64>> {
        self.state.probabilities.mean()
    }

    /// The last model's class probabilities.
    pub fn last(&self) -> Option<&[f64]> {
        self.state.last.as_deref()
    }

    /// The running average of the class probabilities itself: its models and Kish's effective
    /// number of them ([`LogWeightedMean::models`], [`LogWeightedMean::effective_models`]).
    pub fn average(&self) -> &LogWeightedMean {
        &self.state.probabilities
    }

    /// Per input: the predictive entropy of the average (total uncertainty) and the mutual
    /// information (its epistemic part; the rest, the averaged entropy, is aleatoric).
    pub fn uncertainty(&self) -> Option<(Vec<f64>, Vec<f64>)> {
        let mean = self.probabilities()?;
        let expected = self.state.entropy.mean()?;
        let mi = mutual_information(&mean, self.classes, &expected);
        Some((entropy(&mean, self.classes), mi))
    }

    /// The model average's scores on the set's `labels` (one per input, each below `classes`;
    /// `usize`, or the `u8` labels of the data readers).
    ///
    /// # Errors
    ///
    /// Before a model with positive weight, or for labels that do not fit the predictions.
    pub fn scores<L: Copy + Into<usize>>(
        &self,
        labels: &[L],
    ) -> Result<ClassifierScores, RunError> {
        let (_, mi) = self.uncertainty().ok_or_else(no_model)?;
        let mean = self.probabilities().ok_or_else(no_model)?;
        score(&mean, self.classes, &indices(labels), mean_of(&mi))
    }

    /// The last model's scores on the set's `labels`, for comparison with the average.
    ///
    /// # Errors
    ///
    /// As [`ClassifierAverage::scores`].
    pub fn last_scores<L: Copy + Into<usize>>(
        &self,
        labels: &[L],
    ) -> Result<ClassifierScores, RunError> {
        let last = self.last().ok_or_else(no_model)?;
        score(last, self.classes, &indices(labels), 0.0)
    }

    /// How well the average's predictive entropy tells `other`'s inputs (out of distribution)
    /// from this set's.
    pub fn ood_detection<G>(&self, other: &ClassifierAverage<G>) -> Option<OodDetection> {
        let (inside, _) = self.uncertainty()?;
        let (outside, _) = other.uncertainty()?;
        Some(OodDetection {
            auroc: auroc(&inside, &outside),
            aupr: average_precision(&inside, &outside),
        })
    }
}

fn no_model() -> RunError {
    RunError::Observer("the classifier average has no model with a positive weight yet".into())
}

fn mean_of(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn indices<L: Copy + Into<usize>>(labels: &[L]) -> Vec<usize> {
    labels.iter().map(|&l| l.into()).collect()
}

/// Scores of the probabilities `probs` on `labels`, with the mutual information given.
fn score(
    probs: &[f64],
    k: usize,
    labels: &[usize],
    mutual_information: f64,
) -> Result<ClassifierScores, RunError> {
    if labels.len() * k != probs.len() || labels.iter().any(|&y| y >= k) {
        return Err(RunError::Observer(format!(
            "{} labels (each below {k}) for {} inputs of {k} class probabilities",
            labels.len(),
            probs.len() / k.max(1)
        )));
    }
    Ok(ClassifierScores {
        accuracy: accuracy(probs, k, labels),
        nll: nll(probs, k, labels),
        brier: brier(probs, k, labels),
        ece: ece(probs, k, labels, CALIBRATION_BINS),
        reliability: reliability(probs, k, labels, CALIBRATION_BINS),
        entropy: mean_of(&entropy(probs, k)),
        mutual_information,
    })
}

impl<M, F> Keep<M> for ClassifierAverage<F>
where
    F: FnMut(&M) -> Result<Vec<f64>, String>,
{
    fn keep(&mut self, kept: KeptModel<'_, M>) -> Result<(), RunError> {
        let probs = (self.predict)(kept.model).map_err(RunError::Observer)?;
        self.add_log(kept.log_weight, &probs)
            .map_err(RunError::Observer)
    }
}

observe_by_keeping!(ClassifierAverage);

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &()) -> Result<Vec<f64>, String> {
        Ok(Vec::new())
    }

    #[test]
    fn scores_of_two_weighted_models_match_hand_values() {
        // Two inputs, two classes; model A with weight 1, model B with weight 3.
        let mut avg = ClassifierAverage::new(2, none);
        avg.add_log(0.0, &[0.9, 0.1, 0.2, 0.8]).unwrap();
        avg.add_log(3f64.ln(), &[0.5, 0.5, 0.7, 0.3]).unwrap();
        let mean = avg.probabilities().unwrap();
        let want = [0.6, 0.4, 0.575, 0.425];
        assert!(mean.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-15));
        let s = avg.scores(&[0u8, 1]).unwrap();
        assert_eq!(s.accuracy, 0.5);
        assert!((s.nll - -(0.6f64.ln() + 0.425f64.ln()) / 2.0).abs() < 1e-15);
        assert!((s.brier - (2.0 * 0.16 + 2.0 * 0.575 * 0.575) / 2.0).abs() < 1e-15);
        let h = |p: f64| -(p * p.ln() + (1.0 - p) * (1.0 - p).ln());
        assert!((s.entropy - (h(0.6) + h(0.575)) / 2.0).abs() < 1e-15);
        // Mutual information per input: H(mean) - (1 H(A) + 3 H(B)) / 4.
        let mi0 = h(0.6) - (h(0.9) + 3.0 * h(0.5)) / 4.0;
        let mi1 = h(0.575) - (h(0.2) + 3.0 * h(0.7)) / 4.0;
        assert!((s.mutual_information - (mi0 + mi1) / 2.0).abs() < 1e-15);
        // ECE: confidences 0.6 (right, bin 9 of 15) and 0.575 (wrong, bin 8), half the
        // inputs each.
        assert!((s.ece - (0.5 * 0.4 + 0.5 * 0.575)).abs() < 1e-15);
        assert_eq!(s.reliability.len(), 2);
        // The last model alone: B (its tie in row 0 goes to the first class), no mutual
        // information.
        let last = avg.last_scores(&[0usize, 1]).unwrap();
        assert_eq!((last.accuracy, last.mutual_information), (0.5, 0.0));
        assert_eq!(avg.average().models(), 2);
        assert!((avg.average().effective_models() - 16.0 / 10.0).abs() < 1e-12);
    }

    #[test]
    fn ood_detection_ranks_out_of_distribution_entropies_higher() {
        let mut inside = ClassifierAverage::new(2, none);
        inside.add_log(0.0, &[0.99, 0.01, 0.9, 0.1]).unwrap();
        let mut outside = ClassifierAverage::new(2, none);
        outside.add_log(0.0, &[0.5, 0.5, 0.8, 0.2]).unwrap();
        // Entropies: inside (0.056, 0.325), outside (0.693, 0.500): every outside one above.
        let d = inside.ood_detection(&outside).unwrap();
        assert_eq!((d.auroc, d.aupr), (1.0, 1.0));
        // And the other way round.
        let d = outside.ood_detection(&inside).unwrap();
        assert_eq!(d.auroc, 0.0);
    }

    #[test]
    fn predictions_of_the_wrong_shape_are_refused() {
        let mut avg = ClassifierAverage::new(3, none);
        assert!(avg.add_log(0.0, &[0.5, 0.5]).is_err());
        avg.add_log(0.0, &[0.2, 0.3, 0.5]).unwrap();
        let e = avg
            .add_log(0.0, &[0.2, 0.3, 0.5, 0.2, 0.3, 0.5])
            .unwrap_err();
        assert!(e.contains("earlier 3"), "{e}");
        assert!(ClassifierAverage::new(0, none).add_log(0.0, &[]).is_err());
        // Labels must match the predictions: one per input, each a class.
        assert!(avg.scores(&[0usize]).is_ok());
        assert!(avg.scores(&[0usize, 1]).is_err() && avg.scores(&[3u8]).is_err());
        assert!(
            ClassifierAverage::new(3, none).scores(&[0usize]).is_err(),
            "no model yet"
        );
    }
}
