//! Convergence diagnostics over several chains: split R-hat and effective sample size.
//!
//! Both follow Gelman et al., *Bayesian Data Analysis* (3rd ed., sec. 11.4-11.5) as implemented
//! in Stan: chains are split in halves; R-hat compares between- and within-half variances; the
//! ESS sums the combined autocorrelation `rho_t = 1 - (W - mean_j acov_j(t)) / var+` over
//! Geyer's initial positive (monotone) sequence.

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
fn autocovariance(x: &[f64]) -> Vec<f64> {
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
    fn rhat_detects_a_shifted_chain() {
        let good = ar1(0.5, 5_000, 4, 0.0);
        let r = split_rhat(&good);
        assert!(r < 1.01, "rhat {r}");
        let bad = ar1(0.5, 5_000, 4, 1.0);
        assert!(split_rhat(&bad) > 1.05);
    }
}
