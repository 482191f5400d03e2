//! Exact masses by Monte Carlo where quadrature cannot go (more than two dimensions): draws
//! from a law close to `pi_tau(x) ∝ exp(-U(x) / tau)`, reweighted to it.
//!
//! With draws `x_i ~ q` and weights `w_i ∝ pi_tau(x_i) / q(x_i)`, the mass of a region `A` is
//! estimated by the self-normalised importance-sampling average
//! `p^_A = sum_i w_i 1_A(x_i) / sum_i w_i`, whose delta-method standard error is
//! `se_A = sqrt(sum_i w_i^2 (1_A(x_i) - p^_A)^2) / sum_i w_i`. When `q = pi_tau` the weights are
//! equal and this is plain Monte Carlo: `se_A = sqrt(p^_A (1 - p^_A) / n)`. For regions that
//! are unions of labelled parts, `sum_i w_i^2 (1_A - p)^2 = (1 - 2p) sum_(i in A) w_i^2 +
//! p^2 sum_i w_i^2` needs only per-part sums, which gives the errors of running sums too.

use crate::Potential;
use sgmcmc_samplers::error::TargetError;
use sgmcmc_samplers::rng::ChainRng;

/// Monte Carlo masses of `k` regions.
#[derive(Clone, Debug, PartialEq)]
pub struct McMasses {
    /// Estimated mass of each region.
    pub masses: Vec<f64>,
    /// Standard error of each mass.
    pub se: Vec<f64>,
    /// Standard error of each running sum `masses_0 + .. + masses_j` (a CDF over the labels).
    pub cdf_se: Vec<f64>,
}

/// Masses of the regions `label(x) in 0..k` under `pi_tau`, from `n` draws of stream `seed`.
pub fn masses(
    potential: &dyn Potential,
    tau: f64,
    n: usize,
    seed: u64,
    k: usize,
    mut label: impl FnMut(&[f64]) -> usize,
) -> Result<McMasses, TargetError> {
    let draws = potential.exact_draws().ok_or_else(|| {
        TargetError::Shape("this target cannot draw exact samples for Monte Carlo".into())
    })?;
    if !(tau.is_finite() && tau > 0.0) {
        return Err(TargetError::InvalidParameter {
            name: "temperature",
            value: tau.to_string(),
            reason: "must be finite and > 0",
        });
    }
    if n < 2 {
        return Err(TargetError::InvalidParameter {
            name: "draws",
            value: n.to_string(),
            reason: "Monte Carlo needs at least 2 draws",
        });
    }
    let mut rng = ChainRng::new(seed, 0);
    let mut x = vec![0.0; potential.dim()];
    // Running sums of w, w^2, and of both per region, with w = exp(lw - max lw so far): when
    // the maximum grows, everything accumulated is rescaled so no weight overflows.
    let (mut max, mut s, mut s2) = (f64::NEG_INFINITY, 0.0, 0.0);
    let (mut sk, mut s2k) = (vec![0.0; k], vec![0.0; k]);
    for _ in 0..n {
        let lw = draws.draw(tau, &mut rng, &mut x);
        if lw.is_nan() || lw == f64::INFINITY {
            return Err(TargetError::Shape(format!(
                "a Monte Carlo draw at {x:?} has log-weight {lw}"
            )));
        }
        if lw == f64::NEG_INFINITY {
            continue;
        }
        if lw > max {
            let f = (max - lw).exp();
            s *= f;
            s2 *= f * f;
            sk.iter_mut().for_each(|v| *v *= f);
            s2k.iter_mut().for_each(|v| *v *= f * f);
            max = lw;
        }
        let w = (lw - max).exp();
        let r = label(&x);
        s += w;
        s2 += w * w;
        sk[r] += w;
        s2k[r] += w * w;
    }
    if s == 0.0 {
        return Err(TargetError::Shape(
            "every Monte Carlo draw has weight 0".into(),
        ));
    }
    let masses: Vec<f64> = sk.iter().map(|v| v / s).collect();
    // se of a union A with mass p: sqrt((1 - 2p) sum_A w^2 + p^2 sum w^2) / sum w.
    let se_of = |p: f64, a: f64| (((1.0 - 2.0 * p) * a + p * p * s2).max(0.0)).sqrt() / s;
    let se = masses
        .iter()
        .zip(&s2k)
        .map(|(&p, &a)| se_of(p, a))
        .collect();
    let (mut p, mut a) = (0.0, 0.0);
    let cdf_se = masses
        .iter()
        .zip(&s2k)
        .map(|(pk, ak)| {
            p += pk;
            a += ak;
            se_of(p, a)
        })
        .collect();
    Ok(McMasses { masses, se, cdf_se })
}
