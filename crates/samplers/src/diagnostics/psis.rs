//! Pareto-smoothed importance sampling (Vehtari, Simpson, Gelman, Yao and Gabry 2024, JMLR
//! 25(72)): the tail of the importance weights replaced by quantiles of a generalized Pareto
//! fit, and the fit's shape `k-hat`, the diagnostic of whether the weighted average can be
//! trusted. Computed as ArviZ's `az.psislw` computes it (`tests/arviz_diagnostics.rs` pins its
//! values).
//!
//! Of `S` log weights, the largest `M = ceil(min(S / 5, 3 sqrt(S / r_eff)))` (those above the
//! `M + 1`-th largest) form the tail; `w - w_cut` over the tail is fitted by Zhang and Stephens'
//! (2009) empirical-Bayes estimate of the generalized Pareto shape, shrunk towards 0.5 by a weak
//! prior (`k = (M k + 5) / (M + 10)`), and the tail's weights become the fit's quantiles at
//! `(i - 1/2) / M`, capped at the largest raw weight.
//!
//! * `k < 0.5`: the weights have finite variance; the estimate converges at the usual rate.
//! * `0.5 <= k < 0.7`: finite mean, slower convergence; PSIS still gives a usable estimate.
//! * `k >= 0.7` (or `1 - 1 / log10(S)` for small `S`): the average rests on a few draws and
//!   cannot be trusted; for a contour sampler, the energy partition or `zeta` needs changing.
//!
//! Fewer than five tail draws, or a NaN log weight: `k = inf` and no smoothing, as ArviZ does
//! (a NaN leaves every smoothed weight NaN).

/// Pareto-smoothed log weights and the tail shape.
#[derive(Clone, Debug, PartialEq)]
pub struct Psis {
    /// Smoothed log weights, normalised (`logsumexp = 0`), in the input's order.
    pub log_weights: Vec<f64>,
    /// The generalized Pareto shape of the tail, `k-hat`.
    pub k_hat: f64,
}

/// PSIS of `log_weights` (one per draw; any constant offset) whose draws have relative
/// efficiency `r_eff` (`ESS / S`, 1 for independent draws).
pub fn psis(log_weights: &[f64], r_eff: f64) -> Psis {
    let s = log_weights.len();
    if log_weights.iter().any(|w| w.is_nan()) {
        return Psis {
            log_weights: vec![f64::NAN; s],
            k_hat: f64::INFINITY,
        };
    }
    let max = log_weights
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    let mut x: Vec<f64> = log_weights.iter().map(|w| w - max).collect();
    let tail_size = (s as f64 / 5.0).min(3.0 * (s as f64 / r_eff).sqrt()).ceil() as usize;
    let mut order: Vec<usize> = (0..s).collect();
    order.sort_by(|&a, &b| x[a].total_cmp(&x[b]));
    let k_hat = if tail_size + 1 > s {
        f64::INFINITY
    } else {
        let cut = x[order[s - tail_size - 1]].max(f64::MIN_POSITIVE.ln());
        smooth_tail(&mut x, &order, cut)
    };
    let total = log_sum_exp(&x);
    Psis {
        log_weights: x.iter().map(|v| v - total).collect(),
        k_hat,
    }
}

/// Pareto `k-hat` of `log_weights` ([`psis`]).
pub fn pareto_k_hat(log_weights: &[f64], r_eff: f64) -> f64 {
    psis(log_weights, r_eff).k_hat
}

/// Pareto `k-hat` of `log_weights` when they vary, `None` when all are equal (the draws of
/// an unweighted sampler, where importance sampling has nothing to diagnose).
pub fn weighted_k_hat(log_weights: &[f64], r_eff: f64) -> Option<f64> {
    let first = *log_weights.first()?;
    log_weights
        .iter()
        .any(|w| *w != first)
        .then(|| pareto_k_hat(log_weights, r_eff))
}

/// Smooths the weights of `x` (shifted to max 0, `order` sorting it) above `cut`; the shape.
fn smooth_tail(x: &mut [f64], order: &[usize], cut: f64) -> f64 {
    let tail: Vec<usize> = order.iter().copied().filter(|&i| x[i] > cut).collect();
    if tail.len() <= 4 {
        return f64::INFINITY;
    }
    let exp_cut = cut.exp();
    let excess: Vec<f64> = tail.iter().map(|&i| x[i].exp() - exp_cut).collect();
    let (k, sigma) = generalized_pareto_fit(&excess);
    if k.is_finite() && sigma > 0.0 {
        let m = tail.len() as f64;
        for (j, &i) in tail.iter().enumerate() {
            let p = (j as f64 + 0.5) / m;
            let q = if k.abs() < f64::EPSILON {
                -(-p).ln_1p()
            } else {
                (-k * (-p).ln_1p()).exp_m1() / k
            };
            x[i] = (q * sigma + exp_cut).ln().min(0.0);
        }
    }
    k
}

/// Zhang and Stephens' (2009) estimate of the generalized Pareto shape and scale of sorted
/// `x > 0`, with the weak prior on the shape that PSIS adds.
fn generalized_pareto_fit(x: &[f64]) -> (f64, f64) {
    const PRIOR_BS: f64 = 3.0;
    const PRIOR_K: f64 = 10.0;
    let n = x.len();
    let nf = n as f64;
    let m = 30 + (nf.sqrt() as usize);
    let quartile = x[((nf / 4.0 + 0.5) as usize).saturating_sub(1)];
    let b: Vec<f64> = (1..=m)
        .map(|j| {
            (1.0 - (m as f64 / (j as f64 - 0.5)).sqrt()) / (PRIOR_BS * quartile) + 1.0 / x[n - 1]
        })
        .collect();
    let k_of = |b: f64| x.iter().map(|v| (-b * v).ln_1p()).sum::<f64>() / nf;
    let log_lik: Vec<f64> = b
        .iter()
        .map(|&b| {
            let k = k_of(b);
            nf * ((-(b / k)).ln() - k - 1.0)
        })
        .collect();
    let mut weights: Vec<(f64, f64)> = b
        .iter()
        .zip(&log_lik)
        .map(|(&b, &l)| (b, 1.0 / log_lik.iter().map(|&o| (o - l).exp()).sum::<f64>()))
        .filter(|&(_, w)| w >= 10.0 * f64::EPSILON)
        .collect();
    let total: f64 = weights.iter().map(|(_, w)| w).sum();
    for (_, w) in &mut weights {
        *w /= total;
    }
    let b_post: f64 = weights.iter().map(|(b, w)| b * w).sum();
    let k = k_of(b_post);
    let sigma = -k / b_post;
    ((nf * k + PRIOR_K * 0.5) / (nf + PRIOR_K), sigma)
}

/// `ln sum_i exp(x_i)`.
fn log_sum_exp(x: &[f64]) -> f64 {
    let max = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    max + x.iter().map(|v| (v - max).exp()).sum::<f64>().ln()
}
