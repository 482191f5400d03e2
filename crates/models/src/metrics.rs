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

#[cfg(test)]
mod tests {
    use super::*;

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
