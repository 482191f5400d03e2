//! Convergence diagnostics over several chains: split R-hat and effective sample size.
//!
//! Both follow Gelman et al., *Bayesian Data Analysis* (3rd ed., sec. 11.4-11.5) as implemented
//! in Stan: chains are split in halves; R-hat compares between- and within-half variances; the
//! ESS sums the combined autocorrelation `rho_t = 1 - (W - mean_j acov_j(t)) / var+` over
//! Geyer's initial positive (monotone) sequence.
//!
//! Weighted estimates (contour samplers' importance weights) have their own effective sample
//! size: Kish's `(sum w)^2 / sum w^2` for the weights alone, and [`weighted_ess`] for a
//! self-normalised mean, which combines the weights with the autocorrelation. Chains that
//! share adaptive state ([`Coupling::Shared`]: ICSGLD's `theta`) are not independent replicates;
//! their errors come from the chain-averaged trace, one series for the whole system.
//!
//! [`rank`] has the rank-normalised forms of Vehtari et al. (2021) that ArviZ and Stan report
//! today (bulk and folded R-hat, bulk and tail ESS, MCSE), and [`mod@psis`] the Pareto `k-hat` of
//! importance weights (Vehtari et al. 2024), both equal to ArviZ's on pinned arrays.
//! [`contour`] summarises what a contour sampler's bins, multiplier and weights did in a run;
//! [`plane`] finds the plane of weight-space snapshots that a trajectory picture projects on.

pub mod contour;
pub mod plane;
pub mod psis;
pub mod rank;

pub use contour::ContourStats;
pub use plane::PrincipalPlane;
pub use psis::{Psis, pareto_k_hat, psis, weighted_k_hat};
pub use rank::{Convergence, ess_bulk, ess_tail, mcse_mean, mcse_sd, rank_rhat};

/// Split R-hat of scalar traces (one `Vec` per chain, equal lengths >= 4). NaN when undefined.
pub fn split_rhat(chains: &[Vec<f64>]) -> f64 {
    let halves = split(chains);
    if halves.len() < 2 {
        return f64::NAN;
    }
    let n = halves[0].len() as f64;
    let (w, b) = within_between(&halves);
    let var_plus = (n - 1.0) / n * w + b / n;
    (var_plus / w).sqrt()
}

/// Effective sample size of scalar traces (all chains together, after splitting).
pub fn ess(chains: &[Vec<f64>]) -> f64 {
    let halves = split(chains);
    let m = halves.len();
    if m == 0 {
        return f64::NAN;
    }
    let n = halves[0].len();
    let (w, b) = within_between(&halves);
    let nf = n as f64;
    let var_plus = (nf - 1.0) / nf * w + if m > 1 { b / nf } else { 0.0 };
    if var_plus.is_nan() || var_plus <= 0.0 {
        return (m * n) as f64;
    }
    // Mean autocovariance over the split chains, all lags at once by FFT (O(n log n)).
    let mut acov_sum = vec![0.0; n];
    for c in &halves {
        for (a, v) in acov_sum.iter_mut().zip(autocovariance(c)) {
            *a += v;
        }
    }
    let acov = |t: usize| acov_sum[t] / m as f64;
    let rho = |t: usize| 1.0 - (w - acov(t)) / var_plus;
    // Geyer: sum pairs P_k = rho_{2k} + rho_{2k+1} while positive, monotone non-increasing.
    let mut tau = -1.0;
    let mut prev_pair = f64::INFINITY;
    let mut t = 0;
    while t + 1 < n {
        let pair = (rho(t) + rho(t + 1)).min(prev_pair);
        if pair <= 0.0 {
            break;
        }
        tau += 2.0 * pair;
        prev_pair = pair;
        t += 2;
    }
    let total = (m * n) as f64;
    // Stan caps the autocorrelation time from below at 1 / log10(total).
    total / tau.max(1.0 / total.log10().max(1.0))
}

/// Monte Carlo standard error of the mean of the traces: `sd / sqrt(ESS)`.
pub fn mcse(chains: &[Vec<f64>]) -> f64 {
    let all: Vec<f64> = chains.iter().flatten().copied().collect();
    let mu = mean(&all);
    let var = all.iter().map(|x| (x - mu) * (x - mu)).sum::<f64>() / (all.len() as f64 - 1.0);
    (var / ess(chains)).sqrt()
}

/// Biased autocovariance `acov(t) = sum_i (x_i - mu)(x_{i+t} - mu) / n` for every lag, by
/// zero-padded FFT.
pub(crate) fn autocovariance(x: &[f64]) -> Vec<f64> {
    let n = x.len();
    let size = (2 * n).next_power_of_two();
    let mu = mean(x);
    let mut re: Vec<f64> = x
        .iter()
        .map(|v| v - mu)
        .chain(std::iter::repeat(0.0))
        .take(size)
        .collect();
    let mut im = vec![0.0; size];
    fft(&mut re, &mut im, false);
    for (r, i) in re.iter_mut().zip(im.iter_mut()) {
        *r = *r * *r + *i * *i;
        *i = 0.0;
    }
    fft(&mut re, &mut im, true);
    re.truncate(n);
    re.iter().map(|v| v / (size as f64 * n as f64)).collect()
}

/// In-place iterative radix-2 FFT (unnormalised; `inverse` flips the sign of the exponent).
fn fft(re: &mut [f64], im: &mut [f64], inverse: bool) {
    let n = re.len();
    let mut j = 0;
    for i in 1..n {
        let mut bit = n >> 1;
        while j & bit != 0 {
            j ^= bit;
            bit >>= 1;
        }
        j |= bit;
        if i < j {
            re.swap(i, j);
            im.swap(i, j);
        }
    }
    let sign = if inverse { 1.0 } else { -1.0 };
    let mut len = 2;
    while len <= n {
        let ang = sign * 2.0 * std::f64::consts::PI / len as f64;
        let (w_im, w_re) = ang.sin_cos();
        for start in (0..n).step_by(len) {
            let (mut c_re, mut c_im) = (1.0, 0.0);
            for k in 0..len / 2 {
                let (a, b) = (start + k, start + k + len / 2);
                let t_re = re[b] * c_re - im[b] * c_im;
                let t_im = re[b] * c_im + im[b] * c_re;
                re[b] = re[a] - t_re;
                im[b] = im[a] - t_im;
                re[a] += t_re;
                im[a] += t_im;
                let next = c_re * w_re - c_im * w_im;
                c_im = c_re * w_im + c_im * w_re;
                c_re = next;
            }
        }
        len <<= 1;
    }
}

/// Standard error of the grand mean from independent chains: `sd(chain means) / sqrt(P)`.
pub fn between_chain_se(chains: &[Vec<f64>]) -> f64 {
    let means: Vec<f64> = chains.iter().map(|c| mean(c)).collect();
    let p = means.len() as f64;
    let mu = means.iter().sum::<f64>() / p;
    (means.iter().map(|m| (m - mu) * (m - mu)).sum::<f64>() / (p - 1.0) / p).sqrt()
}

/// How the chains of a run relate, for standard errors and effective sample sizes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Coupling {
    /// Independent replicates: each chain counts as a sample of its own.
    #[default]
    Independent,
    /// One dependent system: the chains interact through shared state (the `theta` of a
    /// contour sampler with `P > 1` chains, ICSGLD), so a fluctuation of that state moves all
    /// of them together. Errors come from the trace of the per-step average over the chains.
    Shared,
}

/// Kish's effective sample size of importance weights, `(sum w)^2 / sum w^2`: the number of
/// equally weighted independent samples with the same variance of a weighted mean (for values
/// independent of the weights). `n` for equal weights, 1 for a single non-zero weight, 0 without
/// weight.
pub fn kish_ess(weights: &[f64]) -> f64 {
    // Scaled by the largest weight, so that weights like exp(-2e5) do not underflow.
    let max = weights.iter().copied().fold(0.0, f64::max);
    if max <= 0.0 {
        return 0.0;
    }
    let (s, s2) = weights.iter().fold((0.0, 0.0), |(s, s2), w| {
        let v = w / max;
        (s + v, s2 + v * v)
    });
    s * s / s2
}

/// The self-normalised weighted mean `r = sum w f / sum w` over every chain and sample, and its
/// Monte Carlo standard error. To first order `r - E r` is the mean of the linearised trace
/// `z = w (f - r) / mean(w)`; its error is `sd / sqrt(ESS)` of the `z` traces (independent
/// chains; for 32 or more, the spread of the per-chain means, O(samples)) or of the one trace
/// `z_t = mean_p z_(p,t)` of a coupled system. `values[p][t]` and `weights[p][t]` are chain `p`'s
/// `t`-th sample and weight; coupled chains are cut to their shortest length.
pub fn weighted_mean_se(
    values: &[Vec<f64>],
    weights: &[Vec<f64>],
    coupling: Coupling,
) -> (f64, f64) {
    let (mut sw, mut swf, mut n) = (0.0, 0.0, 0usize);
    for (v, w) in values.iter().zip(weights) {
        for (f, w) in v.iter().zip(w) {
            sw += w;
            swf += w * f;
            n += 1;
        }
    }
    let r = swf / sw;
    let mean_w = sw / n as f64;
    let z: Vec<Vec<f64>> = values
        .iter()
        .zip(weights)
        .map(|(v, w)| v.iter().zip(w).map(|(f, w)| w * (f - r) / mean_w).collect())
        .collect();
    let se = match coupling {
        Coupling::Shared => {
            let len = z.iter().map(Vec::len).min().unwrap_or(0);
            let p = z.len() as f64;
            let avg: Vec<f64> = (0..len)
                .map(|t| z.iter().map(|c| c[t]).sum::<f64>() / p)
                .collect();
            mcse(std::slice::from_ref(&avg))
        }
        Coupling::Independent if z.len() >= 32 => between_chain_se(&z),
        Coupling::Independent => mcse(&z),
    };
    (r, se)
}

/// Effective sample size of the self-normalised weighted mean of `values`: the number of
/// independent draws from the target that would give the same standard error,
/// `ESS_w = var_w(f) / se^2` with `var_w(f) = sum w (f - r)^2 / sum w` and `se` from
/// [`weighted_mean_se`]. It accounts for the weights (about `ESS_auto * Kish / n` when the
/// weights are independent of the values) and for the autocorrelation, and counts coupled chains
/// as one system. With weights 1 and independent chains it is [`ess`] up to `n / (n - 1)`. The
/// number of samples when `f` is constant.
pub fn weighted_ess(values: &[Vec<f64>], weights: &[Vec<f64>], coupling: Coupling) -> f64 {
    let (r, se) = weighted_mean_se(values, weights, coupling);
    let (mut sw, mut sv, mut n) = (0.0, 0.0, 0usize);
    for (v, w) in values.iter().zip(weights) {
        for (f, w) in v.iter().zip(w) {
            sw += w;
            sv += w * (f - r) * (f - r);
            n += 1;
        }
    }
    let var = sv / sw;
    if var > 0.0 && se > 0.0 {
        var / (se * se)
    } else {
        n as f64
    }
}

/// Sums `(sum w, sum w f)` over `batches` consecutive batches of equal length of a weighted
/// trace (the tail that does not fill a batch is dropped), for [`ratio_estimate`]. Plain traces
/// pass weights of 1.
pub fn batch_sums(weights: &[f64], values: &[f64], batches: usize) -> Vec<(f64, f64)> {
    let n = weights.len().min(values.len());
    let len = n / batches.max(1);
    if len == 0 {
        return Vec::new();
    }
    (0..batches)
        .map(|b| {
            let r = b * len..(b + 1) * len;
            weights[r.clone()]
                .iter()
                .zip(&values[r])
                .fold((0.0, 0.0), |(sw, swf), (w, f)| (sw + w, swf + w * f))
        })
        .collect()
}

/// The self-normalised estimate `r = sum w f / sum w` from batch sums `(sum w, sum w f)` and its
/// Monte Carlo standard error by batch means: to first order `r - E r` is the mean of
/// `z_b = (sum_b w f - r sum_b w) / mean_b(sum_b w)`, so `se = sd(z) / sqrt(B)`. Valid when the
/// batches are much longer than the trace's autocorrelation time (then they are nearly
/// independent); batches from independent runs can be pooled. NaN with fewer than 2 batches.
pub fn ratio_estimate(batches: &[(f64, f64)]) -> (f64, f64) {
    let b = batches.len() as f64;
    let (sw, swf) = batches
        .iter()
        .fold((0.0, 0.0), |(a, c), (w, wf)| (a + w, c + wf));
    let r = swf / sw;
    if batches.len() < 2 {
        return (r, f64::NAN);
    }
    let mean_w = sw / b;
    let z: Vec<f64> = batches
        .iter()
        .map(|(w, wf)| (wf - r * w) / mean_w)
        .collect();
    let zm = z.iter().sum::<f64>() / b;
    let var = z.iter().map(|v| (v - zm) * (v - zm)).sum::<f64>() / (b - 1.0);
    (r, (var / b).sqrt())
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

fn split(chains: &[Vec<f64>]) -> Vec<&[f64]> {
    let n = chains.iter().map(Vec::len).min().unwrap_or(0) / 2;
    if n < 2 {
        return Vec::new();
    }
    chains
        .iter()
        .flat_map(|c| [&c[..n], &c[c.len() - n..]])
        .collect()
}

/// Mean within-chain variance `W` and between-chain variance `B` (Gelman's `B = n var(means)`).
fn within_between(chains: &[&[f64]]) -> (f64, f64) {
    let m = chains.len() as f64;
    let n = chains[0].len() as f64;
    let means: Vec<f64> = chains.iter().map(|c| mean(c)).collect();
    let grand = means.iter().sum::<f64>() / m;
    let w = chains
        .iter()
        .zip(&means)
        .map(|(c, mu)| c.iter().map(|x| (x - mu) * (x - mu)).sum::<f64>() / (n - 1.0))
        .sum::<f64>()
        / m;
    let b = if m > 1.0 {
        n * means
            .iter()
            .map(|mu| (mu - grand) * (mu - grand))
            .sum::<f64>()
            / (m - 1.0)
    } else {
        0.0
    };
    (w, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::ChainRng;

    fn ar1(phi: f64, n: usize, chains: usize, shift: f64) -> Vec<Vec<f64>> {
        (0..chains)
            .map(|c| {
                let mut r = ChainRng::new(11, c as u64);
                let mut x = 0.0;
                (0..n)
                    .map(|_| {
                        x = phi * x + (1.0 - phi * phi).sqrt() * r.normal();
                        x + if c == 0 { shift } else { 0.0 }
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn ess_of_ar1_matches_theory() {
        // AR(1) with phi: integrated autocorrelation time (1 + phi) / (1 - phi) = 3 for phi 0.5,
        // so ESS ~ 8 * 20000 / 3 = 53,333. The estimator's relative sd at this length is ~3%;
        // allow 12%.
        let c = ar1(0.5, 20_000, 8, 0.0);
        let e = ess(&c);
        assert!((e / 53_333.0 - 1.0).abs() < 0.12, "ess {e}");
        let iid = ar1(0.0, 20_000, 4, 0.0);
        let e = ess(&iid);
        assert!((e / 80_000.0 - 1.0).abs() < 0.12, "ess {e}");
    }

    #[test]
    fn fft_autocovariance_matches_direct_sums() {
        let x: Vec<f64> = ar1(0.7, 301, 1, 0.0).remove(0);
        let mu = mean(&x);
        let fast = autocovariance(&x);
        for t in [0, 1, 5, 100, 300] {
            let direct: f64 = (0..x.len() - t)
                .map(|i| (x[i] - mu) * (x[i + t] - mu))
                .sum::<f64>()
                / x.len() as f64;
            assert!(
                (fast[t] - direct).abs() < 1e-10,
                "lag {t}: {} vs {direct}",
                fast[t]
            );
        }
    }

    #[test]
    fn batch_means_estimate_the_error_of_a_weighted_mean() {
        // AR(1) values (phi 0.5, unit variance, autocorrelation time 3) with weights 1 and 3 on
        // alternating samples: the weighted mean's variance is about tau_w var / n_eff with
        // n_eff = Kish's n / 1.25 here; check the batch-means se against the spread of 200
        // independent replicates (relative accuracy ~10% at 40 batches; allow 30%).
        let reps: Vec<(f64, f64)> = (0..200)
            .map(|r| {
                let mut rng = ChainRng::new(5, r);
                let mut x = 0.0;
                let (w, f): (Vec<f64>, Vec<f64>) = (0..20_000)
                    .map(|k| {
                        x = 0.5 * x + 0.75f64.sqrt() * rng.normal();
                        (if k % 2 == 0 { 1.0 } else { 3.0 }, x)
                    })
                    .unzip();
                ratio_estimate(&batch_sums(&w, &f, 40))
            })
            .collect();
        let m = reps.iter().map(|r| r.0).sum::<f64>() / 200.0;
        let sd = (reps.iter().map(|r| (r.0 - m).powi(2)).sum::<f64>() / 199.0).sqrt();
        let se = reps.iter().map(|r| r.1).sum::<f64>() / 200.0;
        assert!(
            (se / sd - 1.0).abs() < 0.3,
            "batch se {se} vs replicate sd {sd}"
        );
        assert!(m.abs() < 5.0 * sd / 200f64.sqrt(), "mean {m}");
        assert_eq!(batch_sums(&[1.0], &[1.0], 4), Vec::new());
        assert!(ratio_estimate(&[(1.0, 2.0)]).1.is_nan());
    }

    #[test]
    fn kish_ess_of_known_weights() {
        assert_eq!(kish_ess(&[1.0; 8]), 8.0);
        assert_eq!(kish_ess(&[0.0, 5.0, 0.0]), 1.0);
        // (1 + 2 + 3 + 4)^2 / (1 + 4 + 9 + 16) = 100 / 30, whatever the scale.
        assert!((kish_ess(&[1.0, 2.0, 3.0, 4.0]) - 10.0 / 3.0).abs() < 1e-12);
        assert!((kish_ess(&[1e-300, 2e-300, 3e-300, 4e-300]) - 10.0 / 3.0).abs() < 1e-9);
        // Half the samples carry weight 3, half weight 1: 4^2 n / (2 * 10) = 0.8 n.
        let w: Vec<f64> = (0..1000)
            .map(|k| if k % 2 == 0 { 1.0 } else { 3.0 })
            .collect();
        assert!((kish_ess(&w) - 800.0).abs() < 1e-9);
        assert_eq!(kish_ess(&[]), 0.0);
        assert_eq!(kish_ess(&[0.0, 0.0]), 0.0);
    }

    #[test]
    fn weighted_ess_counts_weights_autocorrelation_and_shared_chains() {
        let c = ar1(0.5, 20_000, 4, 0.0);
        let ones: Vec<Vec<f64>> = c.iter().map(|v| vec![1.0; v.len()]).collect();
        // Unit weights, independent chains: the autocorrelation ESS (80,000 / 3).
        let plain = weighted_ess(&c, &ones, Coupling::Independent);
        assert!((plain / ess(&c) - 1.0).abs() < 1e-3, "{plain}");
        // Weights 1 and 3 on alternate blocks of 1000 samples (far longer than the
        // autocorrelation time), independent of the values: Kish's factor 0.8. (Weights that
        // alternate every sample would average out over the correlated neighbours.)
        let w: Vec<Vec<f64>> = c
            .iter()
            .map(|v| (0..v.len()).map(|k| [1.0, 3.0][(k / 1000) % 2]).collect())
            .collect();
        let weighted = weighted_ess(&c, &w, Coupling::Independent);
        assert!(
            (weighted / (0.8 * plain) - 1.0).abs() < 0.15,
            "{weighted} vs {plain}"
        );
        // Four copies of one chain are one chain: the shared count gives the ESS of one copy,
        // the independent count four times too much.
        let copies = vec![c[0].clone(); 4];
        let one = ess(std::slice::from_ref(&c[0]));
        let shared = weighted_ess(&copies, &ones, Coupling::Shared);
        assert!((shared / one - 1.0).abs() < 1e-3, "{shared} vs {one}");
        let naive = weighted_ess(&copies, &ones, Coupling::Independent);
        assert!(naive > 3.0 * one, "{naive} vs {one}");
        // Independent chains counted as one system: the average of 4 chains has a quarter of
        // the variance, and the ESS stays that of the 4 chains.
        let system = weighted_ess(&c, &ones, Coupling::Shared);
        assert!((system / plain - 1.0).abs() < 0.15, "{system} vs {plain}");
    }

    #[test]
    fn rhat_detects_a_shifted_chain() {
        let good = ar1(0.5, 5_000, 4, 0.0);
        let r = split_rhat(&good);
        assert!(r < 1.01, "rhat {r}");
        let bad = ar1(0.5, 5_000, 4, 1.0);
        assert!(split_rhat(&bad) > 1.05);
    }
}
