//! Rank-normalised convergence diagnostics (Vehtari, Gelman, Simpson, Carpenter and Bürkner
//! 2021, "Rank-normalization, folding, and localization: an improved R-hat"), computed as ArviZ
//! computes them (`az.rhat(method="rank")`, `az.ess(method="bulk" | "tail" | "mean")`,
//! `az.mcse(method="mean" | "sd")`); `tests/arviz_diagnostics.rs` pins ArviZ's values.
//!
//! With `M` chains of `N` draws, each chain is split in halves (`2M` chains of `N / 2` draws,
//! the middle draw of an odd chain dropped), and
//!
//! * **rank normalisation**: every draw `x` of all split chains is replaced by
//!   `z = Phi^-1((r - 3/8) / (S + 1/4))`, `r` its average rank among the `S` draws (Blom 1958);
//! * **R-hat** of split chains: `sqrt((B / W + n - 1) / n)` with `W` the mean within-chain
//!   variance and `B = n var(chain means)`; the *bulk* R-hat is that of the normalised draws, the
//!   *folded* (tail) R-hat that of the normalised `|x - median(x)|`, and the reported R-hat their
//!   maximum (eq. 5-6 of the paper; 1.01 is its suggested threshold);
//! * **ESS** `S / tau`, `tau = -1 + 2 sum_t rho_t` summed over Geyer's initial positive and
//!   monotone sequence of the combined autocorrelation `rho_t = 1 - (W - mean_j acov_j(t)) /
//!   var+` (eq. 10-11), with `tau >= 1 / log10(S)` (so ESS <= `S log10 S`); *bulk* ESS of the normalised split draws, *tail*
//!   ESS the smaller of the ESS of the indicators `x <= q_0.05` and `x <= q_0.95`, *mean* ESS of
//!   the split draws themselves;
//! * **MCSE** of the mean `sd / sqrt(ESS_mean)`, of the standard deviation by the delta method
//!   on `E[(x - mean)^2]` with that quantity's ESS.
//!
//! Undefined values are NaN, as in ArviZ: fewer than 4 draws, a NaN draw, chains of unequal
//! length, or (for R-hat) fewer than 2 chains.

use super::autocovariance;

/// The rank-normalised diagnostics of one scalar quantity over several chains. An undefined
/// value (NaN) is written as JSON `null` and read back as NaN.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Convergence {
    /// `max(bulk, folded)` R-hat ([`rank_rhat`]).
    #[serde(deserialize_with = "nan_if_null")]
    pub rhat: f64,
    /// Bulk effective sample size ([`ess_bulk`]).
    #[serde(deserialize_with = "nan_if_null")]
    pub ess_bulk: f64,
    /// Tail effective sample size ([`ess_tail`]).
    #[serde(deserialize_with = "nan_if_null")]
    pub ess_tail: f64,
    /// Monte Carlo standard error of the mean ([`mcse_mean`]).
    #[serde(deserialize_with = "nan_if_null")]
    pub mcse_mean: f64,
    /// Monte Carlo standard error of the standard deviation ([`mcse_sd`]).
    #[serde(deserialize_with = "nan_if_null")]
    pub mcse_sd: f64,
}

/// A number, or NaN for `null` (JSON writes NaN as `null`).
fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    use serde::Deserialize;
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

impl Convergence {
    /// Every diagnostic of `chains` (one `Vec` of draws per chain).
    pub fn of(chains: &[Vec<f64>]) -> Self {
        Self {
            rhat: rank_rhat(chains),
            ess_bulk: ess_bulk(chains),
            ess_tail: ess_tail(chains),
            mcse_mean: mcse_mean(chains),
            mcse_sd: mcse_sd(chains),
        }
    }
}

/// Rank-normalised split R-hat: the larger of the bulk and the folded R-hat.
pub fn rank_rhat(chains: &[Vec<f64>]) -> f64 {
    if !valid(chains, 2) {
        return f64::NAN;
    }
    let split = split_chains(chains);
    let bulk = rhat(&z_scale(&split));
    let median = median(split.iter().flatten().copied().collect());
    let folded: Vec<Vec<f64>> = split
        .iter()
        .map(|c| c.iter().map(|x| (x - median).abs()).collect())
        .collect();
    bulk.max(rhat(&z_scale(&folded)))
}

/// Bulk ESS: the ESS of the rank-normalised split chains.
pub fn ess_bulk(chains: &[Vec<f64>]) -> f64 {
    if !valid(chains, 1) {
        return f64::NAN;
    }
    ess(&z_scale(&split_chains(chains)))
}

/// Tail ESS: the smaller ESS of the 5% and 95% quantile indicators.
pub fn ess_tail(chains: &[Vec<f64>]) -> f64 {
    ess_quantile(chains, 0.05).min(ess_quantile(chains, 0.95))
}

/// ESS of the quantile `prob` (in `[0, 1]`): the ESS of the indicator `x <= q_prob` over the
/// split chains (`q_prob` as ArviZ takes it: SciPy's `mquantiles` with `alphap = betap = 1`).
pub fn ess_quantile(chains: &[Vec<f64>], prob: f64) -> f64 {
    if !valid(chains, 1) || !(0.0..=1.0).contains(&prob) {
        return f64::NAN;
    }
    let q = quantile(chains.iter().flatten().copied().collect(), prob);
    let below: Vec<Vec<f64>> = chains
        .iter()
        .map(|c| c.iter().map(|&x| f64::from(u8::from(x <= q))).collect())
        .collect();
    ess(&split_chains(&below))
}

/// ESS of the mean: the ESS of the split chains themselves.
pub fn ess_mean(chains: &[Vec<f64>]) -> f64 {
    if !valid(chains, 1) {
        return f64::NAN;
    }
    ess(&split_chains(chains))
}

/// Monte Carlo standard error of the mean, `sd / sqrt(ESS_mean)` (`sd` over all draws).
pub fn mcse_mean(chains: &[Vec<f64>]) -> f64 {
    if !valid(chains, 1) {
        return f64::NAN;
    }
    let all: Vec<f64> = chains.iter().flatten().copied().collect();
    let (_, var) = mean_var(&all);
    (var / ess_mean(chains)).sqrt()
}

/// Monte Carlo standard error of the standard deviation: with `d = (x - mean)^2`,
/// `sqrt(Var(d) / ESS_mean(d) / E[d] / 4)`.
pub fn mcse_sd(chains: &[Vec<f64>]) -> f64 {
    if !valid(chains, 1) {
        return f64::NAN;
    }
    let all: Vec<f64> = chains.iter().flatten().copied().collect();
    let mu = all.iter().sum::<f64>() / all.len() as f64;
    let sq: Vec<Vec<f64>> = chains
        .iter()
        .map(|c| c.iter().map(|x| (x - mu) * (x - mu)).collect())
        .collect();
    let flat: Vec<f64> = sq.iter().flatten().copied().collect();
    let n = flat.len() as f64;
    let evar = flat.iter().sum::<f64>() / n;
    let varvar = (flat.iter().map(|d| d * d).sum::<f64>() / n - evar * evar) / ess_mean(&sq);
    (varvar / evar / 4.0).sqrt()
}

/// At least `min_chains` chains of one length >= 4, no NaN.
fn valid(chains: &[Vec<f64>], min_chains: usize) -> bool {
    let Some(first) = chains.first() else {
        return false;
    };
    chains.len() >= min_chains
        && first.len() >= 4
        && chains
            .iter()
            .all(|c| c.len() == first.len() && !c.iter().any(|v| v.is_nan()))
}

/// Each chain's first and last `N / 2` draws as two chains.
fn split_chains(chains: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let n = chains[0].len();
    let half = n / 2;
    chains
        .iter()
        .flat_map(|c| [c[..half].to_vec(), c[n - half..].to_vec()])
        .collect()
}

/// Rank normalisation: `Phi^-1((r - 3/8) / (S + 1/4))` of every draw's average rank `r`.
fn z_scale(chains: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let all: Vec<f64> = chains.iter().flatten().copied().collect();
    let s = all.len() as f64;
    let ranks = average_ranks(&all);
    let mut z = ranks
        .into_iter()
        .map(|r| normal_quantile((r - 0.375) / (s + 0.25)));
    chains
        .iter()
        .map(|c| z.by_ref().take(c.len()).collect())
        .collect()
}

/// 1-based ranks, ties given their average rank (SciPy's `rankdata(method="average")`).
fn average_ranks(x: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..x.len()).collect();
    order.sort_by(|&a, &b| x[a].total_cmp(&x[b]));
    let mut ranks = vec![0.0; x.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && x[order[j + 1]] == x[order[i]] {
            j += 1;
        }
        // Positions i..=j (0-based) share the ranks i + 1 ..= j + 1.
        let r = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            ranks[k] = r;
        }
        i = j + 1;
    }
    ranks
}

/// Split R-hat `sqrt((B / W + n - 1) / n)` of chains of `n` draws.
fn rhat(chains: &[Vec<f64>]) -> f64 {
    let n = chains[0].len() as f64;
    let (means, vars): (Vec<f64>, Vec<f64>) = chains.iter().map(|c| mean_var(c)).unzip();
    let between = n * mean_var(&means).1;
    let within = vars.iter().sum::<f64>() / vars.len() as f64;
    ((between / within + n - 1.0) / n).sqrt()
}

/// ESS of chains of equal length: `S / tau` over Geyer's initial positive and monotone
/// sequences of the combined autocorrelation, `tau >= 1 / log10(S)`.
fn ess(chains: &[Vec<f64>]) -> f64 {
    let m = chains.len();
    let n = chains[0].len();
    let size = (m * n) as f64;
    let (lo, hi) = chains
        .iter()
        .flatten()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
            (l.min(x), h.max(x))
        });
    // Constant draws: every draw counts (NumPy's float resolution, 1e-15).
    if hi - lo < 1e-15 {
        return size;
    }
    let acov: Vec<Vec<f64>> = chains.iter().map(|c| autocovariance(c)).collect();
    let mean_acov = |t: usize| acov.iter().map(|a| a[t]).sum::<f64>() / m as f64;
    let nf = n as f64;
    let within = mean_acov(0) * nf / (nf - 1.0);
    let mut var_plus = within * (nf - 1.0) / nf;
    if m > 1 {
        let means: Vec<f64> = chains.iter().map(|c| mean_var(c).0).collect();
        var_plus += mean_var(&means).1;
    }
    let rho = |t: usize| 1.0 - (within - mean_acov(t)) / var_plus;
    let mut rho_t = vec![0.0; n];
    let (mut even, mut odd) = (1.0, rho(1));
    rho_t[0] = even;
    rho_t[1] = odd;
    // Geyer's initial positive sequence.
    let mut t = 1;
    while t + 3 < n && even + odd > 0.0 {
        even = rho(t + 1);
        odd = rho(t + 2);
        if even + odd >= 0.0 {
            rho_t[t + 1] = even;
            rho_t[t + 2] = odd;
        }
        t += 2;
    }
    // The last pair reached is t - 2 (ArviZ's `max_t`, -1 when no pair was added).
    let max_t = t as i64 - 2;
    let next = (max_t + 1) as usize;
    if even > 0.0 {
        rho_t[next] = even;
    }
    // Geyer's initial monotone sequence.
    let mut t = 1;
    while (t as i64) <= max_t - 2 {
        if rho_t[t + 1] + rho_t[t + 2] > rho_t[t - 1] + rho_t[t] {
            rho_t[t + 1] = (rho_t[t - 1] + rho_t[t]) / 2.0;
            rho_t[t + 2] = rho_t[t + 1];
        }
        t += 2;
    }
    let tau = -1.0 + 2.0 * rho_t[..next].iter().sum::<f64>() + rho_t.get(next).unwrap_or(&0.0);
    if rho_t.iter().any(|r| r.is_nan()) {
        return f64::NAN;
    }
    size / tau.max(1.0 / size.log10())
}

/// Mean and variance (denominator `n - 1`).
fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mu = x.iter().sum::<f64>() / n;
    (
        mu,
        x.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / (n - 1.0),
    )
}

/// NumPy's median: the middle value, or `(a + b) / 2` of the two middle values.
fn median(mut x: Vec<f64>) -> f64 {
    x.sort_by(f64::total_cmp);
    let n = x.len();
    if n % 2 == 1 {
        x[n / 2]
    } else {
        (x[n / 2 - 1] + x[n / 2]) / 2.0
    }
}

/// The `p` quantile as ArviZ takes it (SciPy's `mquantiles` with `alphap = betap = 1`, NumPy's
/// linear rule), in its arithmetic: `aleph = S p + 1 - p`, `k = floor(clip(aleph, 1, S - 1))`,
/// `gamma = clip(aleph - k, 0, 1)`, `q = (1 - gamma) x_(k) + gamma x_(k+1)` (1-based order
/// statistics). The arithmetic matters: with tied draws a last-bit difference in `q` flips
/// indicators `x <= q`.
fn quantile(mut x: Vec<f64>, p: f64) -> f64 {
    x.sort_by(f64::total_cmp);
    let n = x.len() as f64;
    let aleph = n * p + (1.0 - p);
    let k = aleph.clamp(1.0, (n - 1.0).max(1.0)).floor();
    let gamma = (aleph - k).clamp(0.0, 1.0);
    let k = k as usize;
    let upper = x[k.min(x.len() - 1)];
    (1.0 - gamma) * x[k - 1] + gamma * upper
}

/// `Phi^-1(p)`, the standard normal quantile, to about 1e-15 relative: a rational start
/// (Abramowitz and Stegun 26.2.23, error below 4.5e-4) refined by Halley steps on
/// `Phi(z) = erfc(-z / sqrt 2) / 2`, in the lower tail for accuracy (`Phi^-1(p) =
/// -Phi^-1(1 - p)`).
pub fn normal_quantile(p: f64) -> f64 {
    if p.is_nan() || !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    if p > 0.5 {
        return -normal_quantile(1.0 - p);
    }
    let t = (-2.0 * p.ln()).sqrt();
    let mut z = -(t
        - (2.515517 + 0.802853 * t + 0.010328 * t * t)
            / (1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t));
    for _ in 0..3 {
        let e = 0.5 * libm::erfc(-z / std::f64::consts::SQRT_2) - p;
        let u = e * (2.0 * std::f64::consts::PI).sqrt() * (z * z / 2.0).exp();
        z -= u / (1.0 + z * u / 2.0);
    }
    z
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_normal_quantile_inverts_the_cdf_in_both_tails() {
        // Above the median `p` itself carries the error: rounding `p = Phi(z)` to f64 moves
        // the quantile by up to `eps / phi(z)` (2e-14 at z = 3), hence the looser bound there.
        for (z, tol) in [
            (-8.0, 1e-12),
            (-5.0, 1e-12),
            (-2.5, 1e-12),
            (-1.0, 1e-12),
            (-0.1, 1e-12),
            (0.0, 1e-12),
            (0.3, 1e-12),
            (1.7, 1e-12),
            (3.0, 1e-12),
        ] {
            let p = 0.5 * libm::erfc(-z / std::f64::consts::SQRT_2);
            let back = normal_quantile(p);
            assert!(
                (back - z).abs() <= tol * f64::max(z.abs(), 1.0),
                "{z}: {back}"
            );
        }
        // Known values: the 97.5% point and the 1e-10 tail.
        assert!((normal_quantile(0.975) - 1.959_963_984_540_054).abs() < 1e-14);
        assert!((normal_quantile(1e-10) + 6.361_340_902_404_056).abs() < 1e-12);
    }

    #[test]
    fn an_undefined_value_goes_through_json_as_null() {
        let c = Convergence::of(&[vec![1.0, 3.0, 2.0, 5.0, 4.0, 4.5]]);
        assert!(c.rhat.is_nan(), "one chain");
        let text = serde_json::to_string(&c).unwrap();
        assert!(text.contains("\"rhat\":null"), "{text}");
        let back: Convergence = serde_json::from_str(&text).unwrap();
        assert!(back.rhat.is_nan());
        assert_eq!(back.ess_bulk, c.ess_bulk);
    }

    #[test]
    fn ties_share_their_average_rank() {
        assert_eq!(
            average_ranks(&[3.0, 1.0, 3.0, 2.0, 3.0]),
            vec![4.0, 1.0, 4.0, 2.0, 4.0]
        );
    }

    #[test]
    fn undefined_inputs_are_nan() {
        let short = vec![vec![1.0, 2.0, 3.0]; 2];
        assert!(rank_rhat(&short).is_nan());
        assert!(
            rank_rhat(&[vec![1.0, 2.0, 3.0, 4.0, 5.0]]).is_nan(),
            "one chain"
        );
        assert!(ess_bulk(&[vec![1.0, 2.0, 3.0, 4.0], vec![1.0; 5]]).is_nan());
        assert!(mcse_mean(&[vec![1.0, f64::NAN, 3.0, 4.0]]).is_nan());
        // Constant draws: every draw counts.
        assert_eq!(ess_mean(&[vec![2.0; 10], vec![2.0; 10]]), 20.0);
    }
}
