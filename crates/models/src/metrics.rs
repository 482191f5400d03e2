//! Predictive metrics of (weighted) Bayesian model averages, on host `f64`.
//!
//! Classification predictions are row-major `[n, k]` class probabilities; regression ones are
//! means and variances. [`Bma`] accumulates importance-weighted averages of per-model
//! predictions (`sum w_s p_s / sum w_s`; weights 1 for plain samplers, `theta[J]^zeta` for
//! contour samplers).

pub use sgmcmc_samplers::collect::LogWeightedMean as Bma;

/// Fraction of rows whose most probable class is the label.
pub fn accuracy(probs: &[f64], k: usize, labels: &[usize]) -> f64 {
    let hits = labels
        .iter()
        .enumerate()
        .filter(|(i, y)| argmax(&probs[i * k..(i + 1) * k]) == **y)
        .count();
    hits as f64 / labels.len().max(1) as f64
}

/// Mean `-ln p(y)` (probabilities floored at 1e-12).
pub fn nll(probs: &[f64], k: usize, labels: &[usize]) -> f64 {
    labels
        .iter()
        .enumerate()
        .map(|(i, y)| -probs[i * k + y].max(1e-12).ln())
        .sum::<f64>()
        / labels.len().max(1) as f64
}

/// Mean Brier score `sum_c (p_c - 1{c = y})^2`.
pub fn brier(probs: &[f64], k: usize, labels: &[usize]) -> f64 {
    labels
        .iter()
        .enumerate()
        .map(|(i, y)| {
            (0..k)
                .map(|c| (probs[i * k + c] - f64::from(u8::from(c == *y))).powi(2))
                .sum::<f64>()
        })
        .sum::<f64>()
        / labels.len().max(1) as f64
}

/// Expected calibration error with `bins` equal-width confidence bins:
/// `sum_b (n_b / n) |accuracy_b - confidence_b|`.
pub fn ece(probs: &[f64], k: usize, labels: &[usize], bins: usize) -> f64 {
    let bins = bins.max(1);
    let (mut count, mut conf, mut acc) = (vec![0.0; bins], vec![0.0; bins], vec![0.0; bins]);
    for (i, y) in labels.iter().enumerate() {
        let row = &probs[i * k..(i + 1) * k];
        let c = argmax(row);
        let p = row[c];
        let b = ((p * bins as f64) as usize).min(bins - 1);
        count[b] += 1.0;
        conf[b] += p;
        acc[b] += f64::from(u8::from(c == *y));
    }
    let n = labels.len().max(1) as f64;
    (0..bins)
        .filter(|&b| count[b] > 0.0)
        .map(|b| count[b] / n * (acc[b] / count[b] - conf[b] / count[b]).abs())
        .sum()
}

/// Predictive entropy `-sum_c p_c ln p_c` of every row.
pub fn entropy(probs: &[f64], k: usize) -> Vec<f64> {
    probs
        .chunks(k)
        .map(|row| {
            -row.iter()
                .filter(|p| **p > 0.0)
                .map(|p| p * p.ln())
                .sum::<f64>()
        })
        .collect()
}

/// One confidence bin of a reliability diagram: the mean top-class probability of the rows
/// whose confidence falls in it, their accuracy, and how many they are.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReliabilityBin {
    /// Mean confidence (top-class probability) of the bin's rows.
    pub confidence: f64,
    /// Fraction of the bin's rows whose top class is the label.
    pub accuracy: f64,
    /// Rows in the bin.
    pub count: usize,
}

/// The reliability diagram of `bins` equal-width confidence bins (bin `b` holds confidences in
/// `[b / bins, (b + 1) / bins)`, the last one including 1), empty bins left out. [`ece`] is
/// `sum_b (count_b / n) |accuracy_b - confidence_b|` over these bins.
pub fn reliability(probs: &[f64], k: usize, labels: &[usize], bins: usize) -> Vec<ReliabilityBin> {
    let bins = bins.max(1);
    let mut acc = vec![(0.0, 0.0, 0usize); bins];
    for (i, y) in labels.iter().enumerate() {
        let row = &probs[i * k..(i + 1) * k];
        let c = argmax(row);
        let b = ((row[c] * bins as f64) as usize).min(bins - 1);
        acc[b].0 += row[c];
        acc[b].1 += f64::from(u8::from(c == *y));
        acc[b].2 += 1;
    }
    acc.into_iter()
        .filter(|b| b.2 > 0)
        .map(|(conf, hits, n)| ReliabilityBin {
            confidence: conf / n as f64,
            accuracy: hits / n as f64,
            count: n,
        })
        .collect()
}

/// The epistemic part of the predictive uncertainty per row: the mutual information
/// `I = H[sum_s w_s p_s] - sum_s w_s H[p_s]` between the label and the model, from the
/// averaged probabilities `mean` (`[n, k]`) and the averaged per-model entropies
/// `mean_entropy` (`[n]`); floored at 0 against rounding (it is non-negative by Jensen).
pub fn mutual_information(mean: &[f64], k: usize, mean_entropy: &[f64]) -> Vec<f64> {
    entropy(mean, k)
        .into_iter()
        .zip(mean_entropy)
        .map(|(total, expected)| (total - expected).max(0.0))
        .collect()
}

/// Area under the ROC curve of telling `positives` from `negatives` by their scores (higher
/// means positive): `P(s+ > s-) + P(s+ = s-) / 2` over all pairs, the Mann-Whitney statistic;
/// `NaN` when either set is empty. For out-of-distribution detection the scores are the
/// predictive entropies and the out-of-distribution inputs are the positives. A NaN score
/// makes it NaN.
pub fn auroc(negatives: &[f64], positives: &[f64]) -> f64 {
    if negatives.is_empty() || positives.is_empty() || any_nan(negatives, positives) {
        return f64::NAN;
    }
    // Ranks from 1, tied scores sharing their mean rank.
    let mut rank_sum = 0.0;
    for (start, end, hits) in tie_groups(negatives, positives, false) {
        rank_sum += (start + 1 + end) as f64 / 2.0 * hits as f64;
    }
    let (np, nn) = (positives.len() as f64, negatives.len() as f64);
    (rank_sum - np * (np + 1.0) / 2.0) / (np * nn)
}

/// Average precision of telling `positives` from `negatives` by their scores (higher means
/// positive), the area under the precision-recall curve as scikit-learn's
/// `average_precision_score` computes it: `sum_t (R_t - R_{t-1}) P_t` over the distinct scores
/// `t` from the highest down, with precision `P_t` and recall `R_t` of calling every score
/// `>= t` positive; `NaN` without positives or with a NaN score.
pub fn average_precision(negatives: &[f64], positives: &[f64]) -> f64 {
    if positives.is_empty() || any_nan(negatives, positives) {
        return f64::NAN;
    }
    let (mut tp, mut ap, mut recall) = (0.0, 0.0, 0.0);
    for (_, end, hits) in tie_groups(negatives, positives, true) {
        tp += hits as f64;
        let r = tp / positives.len() as f64;
        ap += (r - recall) * tp / end as f64;
        recall = r;
    }
    ap
}

/// Whether a score is NaN (no ranking then: both areas are NaN).
fn any_nan(negatives: &[f64], positives: &[f64]) -> bool {
    negatives.iter().chain(positives).any(|s| s.is_nan())
}

/// The scores of `negatives` and `positives` sorted (descending or ascending) and cut into
/// runs of equal scores: `(start, end, positives in the run)`, positions 0-based, `end`
/// exclusive.
fn tie_groups(
    negatives: &[f64],
    positives: &[f64],
    descending: bool,
) -> Vec<(usize, usize, usize)> {
    let mut all: Vec<(f64, bool)> = negatives
        .iter()
        .map(|&s| (s, false))
        .chain(positives.iter().map(|&s| (s, true)))
        .collect();
    all.sort_by(|a, b| match descending {
        true => b.0.total_cmp(&a.0),
        false => a.0.total_cmp(&b.0),
    });
    let mut groups = Vec::new();
    let mut i = 0;
    while i < all.len() {
        let j = i + all[i..]
            .iter()
            .take_while(|x| x.0.total_cmp(&all[i].0).is_eq())
            .count();
        groups.push((i, j, all[i..j].iter().filter(|x| x.1).count()));
        i = j;
    }
    groups
}

/// Root mean squared error.
pub fn rmse(pred: &[f64], y: &[f64]) -> f64 {
    (pred
        .iter()
        .zip(y)
        .map(|(p, t)| (p - t).powi(2))
        .sum::<f64>()
        / y.len().max(1) as f64)
        .sqrt()
}

/// Mean Gaussian negative log-likelihood of `y` under `N(mean, var)`.
pub fn gaussian_nll(mean: &[f64], var: &[f64], y: &[f64]) -> f64 {
    mean.iter()
        .zip(var)
        .zip(y)
        .map(|((m, v), t)| 0.5 * (2.0 * std::f64::consts::PI * v).ln() + 0.5 * (t - m).powi(2) / v)
        .sum::<f64>()
        / y.len().max(1) as f64
}

fn argmax(row: &[f64]) -> usize {
    row.iter()
        .enumerate()
        .fold(
            (0, f64::NEG_INFINITY),
            |b, (i, p)| if *p > b.1 { (i, *p) } else { b },
        )
        .0
}

/// Confidence bins of the expected calibration error and the reliability diagram (the 15 of
/// Guo et al. 2017, as the papers' tables use).
pub const CALIBRATION_BINS: usize = 15;

/// A classifier's test-set metrics in the units of the papers' tables (thesis Table 6.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClassifierMetrics {
    /// Accuracy.
    pub accuracy: f64,
    /// Mean negative log-likelihood (nats per input).
    pub nll: f64,
    /// Negative log-likelihood summed over the inputs (Table 6.1's NLL).
    pub nll_sum: f64,
    /// Mean Brier score `sum_c (p_c - 1{c = y})^2`, per mille.
    pub brier_permille: f64,
    /// Expected calibration error ([`CALIBRATION_BINS`] equal-width confidence bins), per cent.
    pub ece_percent: f64,
}

impl ClassifierMetrics {
    /// The metrics of class probabilities `probs` (`[n, k]` row-major) against `labels`.
    pub fn of(probs: &[f64], k: usize, labels: &[usize]) -> Self {
        let mean_nll = nll(probs, k, labels);
        Self {
            accuracy: accuracy(probs, k, labels),
            nll: mean_nll,
            nll_sum: mean_nll * labels.len() as f64,
            brier_permille: 1000.0 * brier(probs, k, labels),
            ece_percent: 100.0 * ece(probs, k, labels, CALIBRATION_BINS),
        }
    }
}

/// Out-of-distribution metrics of one prediction, where the model should be unsure (thesis
/// Table 6.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OodMetrics {
    /// Mean predictive entropy (nats; `ln k` is the most unsure).
    pub mean_entropy: f64,
    /// Table 6.1's out-of-distribution Brier score: the squared error against the all-zero
    /// target (no class is right), averaged over inputs and classes, `mean_i mean_c p_ic^2`,
    /// per mille (`1000 / k^2` for uniform predictions, `1000 / k` for one-hot ones).
    pub brier_permille: f64,
}

impl OodMetrics {
    /// The metrics of class probabilities `probs` (`[n, k]` row-major).
    pub fn of(probs: &[f64], k: usize) -> Self {
        let h = entropy(probs, k);
        let n = h.len().max(1) as f64;
        let brier: f64 = probs
            .chunks(k)
            .map(|row| row.iter().map(|p| p * p).sum::<f64>() / k as f64)
            .sum::<f64>()
            / n;
        Self {
            mean_entropy: h.iter().sum::<f64>() / n,
            brier_permille: 1000.0 * brier,
        }
    }
}

/// Predictive entropies (nats) of `probs` with `k` classes, sorted (an empirical CDF's points).
pub fn sorted_entropy(probs: &[f64], k: usize) -> Vec<f64> {
    let mut e = entropy(probs, k);
    e.sort_by(f64::total_cmp);
    e
}

/// The fraction of the ascending `sorted` values above `level` (NaN for none).
pub fn fraction_above(sorted: &[f64], level: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let below = sorted.partition_point(|&e| e <= level);
    (sorted.len() - below) as f64 / sorted.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_metrics_match_hand_values() {
        let p = [0.9, 0.1, 0.4, 0.6];
        let m = ClassifierMetrics::of(&p, 2, &[0, 0]);
        assert_eq!(m.accuracy, 0.5);
        let nll = -(0.9f64.ln() + 0.4f64.ln()) / 2.0;
        assert!((m.nll - nll).abs() < 1e-12 && (m.nll_sum - 2.0 * nll).abs() < 1e-12);
        // Brier: (0.01 + 0.01 + 0.36 + 0.36) / 2 = 0.37.
        assert!((m.brier_permille - 370.0).abs() < 1e-9);
        // ECE: bin of 0.9 (right, gap 0.1) and of 0.6 (wrong, gap 0.6), half the mass each.
        assert!((m.ece_percent - 35.0).abs() < 1e-9);
    }

    #[test]
    fn ood_metrics_and_entropy_fractions_match_hand_values() {
        let o = OodMetrics::of(&[0.5, 0.5, 1.0, 0.0], 2);
        assert!((o.mean_entropy - 2f64.ln() / 2.0).abs() < 1e-12);
        // (0.25 + 0.25) / 2 and (1 + 0) / 2, averaged: 0.375.
        assert!((o.brier_permille - 375.0).abs() < 1e-9);
        let e = sorted_entropy(&[0.5, 0.5, 1.0, 0.0, 0.9, 0.1], 2);
        assert_eq!(e[0], 0.0);
        assert!((e[2] - 2f64.ln()).abs() < 1e-12 && e[1] < e[2]);
        assert_eq!(fraction_above(&e, 0.5), 1.0 / 3.0);
        assert!(fraction_above(&[], 0.5).is_nan());
    }

    #[test]
    fn metrics_match_hand_computed_values() {
        // Two points, three classes.
        let p = [0.7, 0.2, 0.1, 0.1, 0.3, 0.6];
        let y = [0, 1];
        assert_eq!(accuracy(&p, 3, &y), 0.5);
        let expect_nll = -(0.7f64.ln() + 0.3f64.ln()) / 2.0;
        assert!((nll(&p, 3, &y) - expect_nll).abs() < 1e-12);
        let b0 = 0.3f64.powi(2) + 0.2f64.powi(2) + 0.1f64.powi(2);
        let b1 = 0.1f64.powi(2) + 0.7f64.powi(2) + 0.6f64.powi(2);
        assert!((brier(&p, 3, &y) - (b0 + b1) / 2.0).abs() < 1e-12);
        // ECE, 10 bins: point 0 (conf 0.7, right), point 1 (conf 0.6, wrong), separate bins.
        assert!((ece(&p, 3, &y, 10) - (0.5 * 0.3 + 0.5 * 0.6)).abs() < 1e-12);
        let h = entropy(&[0.5, 0.5], 2);
        assert!((h[0] - 2f64.ln()).abs() < 1e-12);
        assert!((rmse(&[1.0, 3.0], &[0.0, 3.0]) - 0.5f64.sqrt()).abs() < 1e-12);
        let g = gaussian_nll(&[0.0], &[1.0], &[0.0]);
        assert!((g - 0.5 * (2.0 * std::f64::consts::PI).ln()).abs() < 1e-12);
    }

    #[test]
    fn reliability_bins_match_hand_values_and_give_the_ece() {
        // Confidences 0.7 (right), 0.6 (wrong), 0.65 (right), 1.0 (right), 10 bins.
        let p = [0.7, 0.3, 0.4, 0.6, 0.65, 0.35, 1.0, 0.0];
        let y = [0, 0, 0, 0];
        let r = reliability(&p, 2, &y, 10);
        let bin = |confidence, accuracy, count| ReliabilityBin {
            confidence,
            accuracy,
            count,
        };
        assert_eq!(r.len(), 3);
        assert!((r[0].confidence - 0.625).abs() < 1e-12 && r[0].accuracy == 0.5);
        assert_eq!(
            (r[0].count, r[1], r[2]),
            (2, bin(0.7, 1.0, 1), bin(1.0, 1.0, 1))
        );
        let from_bins: f64 = r
            .iter()
            .map(|b| b.count as f64 / 4.0 * (b.accuracy - b.confidence).abs())
            .sum();
        assert!((ece(&p, 2, &y, 10) - from_bins).abs() < 1e-15);
    }

    #[test]
    fn mutual_information_is_total_minus_expected_entropy() {
        // Two confident models that disagree: the average is uniform (entropy ln 2), each
        // model's entropy is that of (0.9, 0.1); the difference is the epistemic part.
        let h = entropy(&[0.9, 0.1], 2)[0];
        let mi = mutual_information(&[0.5, 0.5], 2, &[h]);
        let want = 2f64.ln() + 0.9 * 0.9f64.ln() + 0.1 * 0.1f64.ln();
        assert!((mi[0] - want).abs() < 1e-15, "{mi:?} vs {want}");
        // Models that agree carry no epistemic uncertainty.
        assert_eq!(mutual_information(&[0.9, 0.1], 2, &[h]), vec![0.0]);
    }

    #[test]
    fn auroc_and_average_precision_match_hand_values() {
        // Separable: every positive above every negative.
        assert_eq!(auroc(&[0.1, 0.2], &[0.3, 0.4]), 1.0);
        assert_eq!(average_precision(&[0.1, 0.2], &[0.3, 0.4]), 1.0);
        // Reversed.
        assert_eq!(auroc(&[0.3, 0.4], &[0.1, 0.2]), 0.0);
        // Pairs (pos, neg): (0.35 vs 0.1, 0.4, 0.35) -> 1 + 0 + 1/2; (0.8 vs all) -> 3.
        let (neg, pos) = ([0.1, 0.4, 0.35], [0.35, 0.8]);
        assert!((auroc(&neg, &pos) - 4.5 / 6.0).abs() < 1e-15);
        // Thresholds from the top: 0.8 (tp 1, fp 0: R 1/2, P 1); 0.4 (R 1/2, P 1/2: adds 0);
        // 0.35 (tp 2, fp 2: R 1, P 1/2): AP = 1/2 * 1 + 1/2 * 1/2 = 0.75.
        assert!((average_precision(&neg, &pos) - 0.75).abs() < 1e-15);
        assert!(auroc(&[], &pos).is_nan() && average_precision(&neg, &[]).is_nan());
        // A NaN score ranks nothing (and does not hang the tie grouping).
        assert!(auroc(&[f64::NAN], &pos).is_nan() && average_precision(&neg, &[f64::NAN]).is_nan());
    }

    #[test]
    fn bma_is_the_weighted_mean() {
        let mut b = Bma::default();
        assert!(b.mean().is_none());
        b.add(1.0, &[1.0, 0.0]);
        b.add(3.0, &[0.0, 1.0]);
        assert_eq!(b.mean().unwrap(), vec![0.25, 0.75]);
        assert_eq!(b.models(), 2);
    }

    #[test]
    fn bma_in_the_log_domain_survives_weights_beyond_f64() {
        // Weights exp(-2e5 + c): as plain f64 they are all 0; the average is exact anyway.
        let mut b = Bma::default();
        b.add_log(-2e5, &[1.0, 0.0]);
        b.add_log(-2e5 + 3f64.ln(), &[0.0, 1.0]);
        // `-2e5 + ln 3` carries f64's absolute error at 2e5 (~3e-11), hence 1e-9.
        let m = b.mean().unwrap();
        assert!(
            (m[0] - 0.25).abs() < 1e-9 && (m[1] - 0.75).abs() < 1e-9,
            "{m:?}"
        );
        // Kish's effective size of weights (1, 3): 16 / 10.
        assert!((b.effective_models() - 1.6).abs() < 1e-9);
        // A later, much larger weight dominates; an earlier larger one is not rescaled away.
        b.add_log(-1e5, &[0.5, 0.5]);
        let m = b.mean().unwrap();
        assert!((m[0] - 0.5).abs() < 1e-12, "{m:?}");
        assert!((b.effective_models() - 1.0).abs() < 1e-12);
        // -inf (weight 0) counts the model but moves nothing.
        b.add_log(f64::NEG_INFINITY, &[1.0, 0.0]);
        assert_eq!(b.models(), 4);
        assert!((b.mean().unwrap()[0] - 0.5).abs() < 1e-12);
    }
}
