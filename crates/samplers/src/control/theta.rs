//! The self-adapting parameter `theta` of the dynamic importance samplers: its three random
//! fields, the gradient multiplier and the importance weights.
//!
//! * `Power` (CSGLD paper eq. 9): `theta_i += omega theta[J]^zeta (1{i = J} - theta_i)`,
//!   fixed point `theta*_i = pi_i`, the mass of bin `i` under `pi`.
//! * `Interacting` (thesis eq. 6.8, ICSGLD): `theta_i += omega / P sum_p theta[J_p]
//!   (1{i = J_p} - theta_i)`, fixed point `theta*_i ∝ pi_i^(1 / zeta)`.
//! * `Cumulative` (thesis eq. 7.5, AWSGLD): `theta_i += omega theta[J] (1{i >= J} - theta_i)`,
//!   `theta` increasing with `theta[m-1] = 1`, fixed point `theta*_i^zeta = P(U <= u_i)`: the
//!   powered `theta` is the energy CDF (the thesis' importance weights `theta[J]^zeta`).
//!
//! With `P` chains the field is averaged over the chains' bins `J_p` (all fields); only the bin
//! indices travel between chains (thesis eq. E.4-E.5). Updates are simultaneous from the old
//! `theta`, cost `O(m + P)`, and keep every entry strictly positive (and the sum at 1, or the last
//! entry at 1) for `omega < 1`.
//!
//! Gradient multiplier (CSGLD eq. 8, thesis eq. 5.6/7.4, 0-based):
//! `psi = 1 + zeta tau / du (ln theta[J] - ln theta[max(J - 1, 0)])`; the supplement's
//! alternative scheme (D.1) uses `ln theta[min(J + 1, m - 1)] - ln theta[J]`. `psi` may be
//! negative (a "bouncy" move that climbs the energy): that is the escape mechanism.
//! Importance weight of a sample in bin `J`: `theta[J]^zeta`.

use serde::{Deserialize, Serialize};

use crate::error::{SamplerError, check, non_negative};

/// Which stochastic-approximation field drives `theta`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RandomField {
    /// CSGLD, eq. 9 of the CSGLD paper.
    Power,
    /// ICSGLD, thesis eq. 6.8.
    Interacting,
    /// AWSGLD, thesis eq. 7.5.
    Cumulative,
}

/// How the multiplier differences `ln theta`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MultiplierScheme {
    /// `ln theta[J] - ln theta[max(J - 1, 0)]` (eq. 8 of the CSGLD paper).
    #[default]
    Backward,
    /// `ln theta[min(J + 1, m - 1)] - ln theta[J]` (supplement D.1).
    Forward,
}

/// Which flattening an importance weight undoes.
///
/// The sampler's stationary law is `pi(x) / Psi_theta(U(x))^zeta` with `Psi_theta` the
/// piecewise log-linear interpolation of `theta` across each bin (CSGLD paper eq. 5): the
/// multiplier is exactly `1 + zeta tau d ln Psi / du`, so `Psi^zeta` is the weight that undoes the
/// flattening the dynamics actually apply. `Bin` is the papers' estimator (eq. 10 of the CSGLD
/// paper, `theta[J]^zeta`, `Psi` at one edge of the bin); its error inside a bin is
/// `zeta |ln theta[J] - ln theta[J-1]|` at most, which is small only for fine partitions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WeightRule {
    /// `theta[J]^zeta` (the papers and the reference code).
    #[default]
    Bin,
    /// `Psi_theta(U)^zeta`, interpolated inside the bin as the multiplier is.
    Interpolated,
    /// `theta[J]` without the power and without any tempering factor, 0 in the top bin: the
    /// reference DNN code's "approximation of importance weights ... since zeta can be too
    /// large" (ICSGLD and AWSGLD repositories, `sgmcmc.py`). Biased (it does not undo the
    /// flattening), but it keeps many models in an average where `theta[J]^zeta` leaves one.
    Reference,
}

/// Initial `theta`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThetaInit {
    /// `1 / m` everywhere (`Power`, `Interacting`).
    Uniform,
    /// `(m, m - 1, .., 1) / sum` (reference CSGLD code).
    Decreasing,
    /// `(1, 2, .., m) / m` (`Cumulative`).
    Increasing,
    /// All ones (`Cumulative`: multiplier 1 until theta adapts).
    Constant,
    /// A histogram of bins (e.g. from an SGLD pilot run) plus `floor`, normalised (reference
    /// ICSGLD); cumulated for `Cumulative`.
    Histogram {
        /// Counts per bin.
        counts: Vec<f64>,
        /// Added to every count (> 0 keeps empty bins positive).
        floor: f64,
    },
    /// Explicit values.
    Given(Vec<f64>),
}

/// `theta` with its field and the multiplier/weight formulas.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContourTheta {
    theta: Vec<f64>,
    field: RandomField,
    zeta: f64,
    scheme: MultiplierScheme,
    clip: Option<(f64, f64)>,
}

fn bad_init(reason: &'static str, len: usize) -> SamplerError {
    SamplerError::InvalidHyperParameter {
        name: "theta_init",
        value: format!("{len} values"),
        reason,
    }
}

impl ContourTheta {
    /// `theta` of `m` bins for `field` with tuning parameter `zeta >= 0`, initialised by `init`;
    /// `clip` optionally bounds the multiplier to `[lo, hi]`.
    pub fn new(
        m: usize,
        field: RandomField,
        zeta: f64,
        init: &ThetaInit,
        scheme: MultiplierScheme,
        clip: Option<(f64, f64)>,
    ) -> Result<Self, SamplerError> {
        check(m >= 2, "m", m as f64, "the partition needs m >= 2 bins")?;
        non_negative("zeta", zeta)?;
        if let Some((lo, hi)) = clip {
            check(lo < hi, "multiplier_clip", lo, "needs lo < hi")?;
        }
        let cumulative = field == RandomField::Cumulative;
        let raw: Vec<f64> = match init {
            ThetaInit::Uniform => vec![1.0; m],
            ThetaInit::Decreasing => (0..m).map(|i| (m - i) as f64).collect(),
            ThetaInit::Increasing => (1..=m).map(|i| i as f64).collect(),
            ThetaInit::Constant => vec![1.0; m],
            ThetaInit::Histogram { counts, floor } => {
                if counts.len() != m {
                    return Err(bad_init("histogram length must equal m", counts.len()));
                }
                let h: Vec<f64> = counts.iter().map(|c| c + floor).collect();
                if cumulative {
                    h.iter()
                        .scan(0.0, |s, v| {
                            *s += v;
                            Some(*s)
                        })
                        .collect()
                } else {
                    h
                }
            }
            ThetaInit::Given(v) => v.clone(),
        };
        if raw.len() != m {
            return Err(bad_init("theta must have m entries", raw.len()));
        }
        if raw.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
            return Err(bad_init("theta entries must be finite and > 0", raw.len()));
        }
        let theta = if cumulative {
            let last = raw[m - 1];
            let t: Vec<f64> = raw.iter().map(|v| v / last).collect();
            if t.windows(2).any(|w| w[1] < w[0]) {
                return Err(bad_init("a cumulative theta must be non-decreasing", m));
            }
            t
        } else {
            let s: f64 = raw.iter().sum();
            raw.iter().map(|v| v / s).collect()
        };
        Ok(Self {
            theta,
            field,
            zeta,
            scheme,
            clip,
        })
    }

    /// The current `theta`.
    pub fn theta(&self) -> &[f64] {
        &self.theta
    }

    /// The field.
    pub fn field(&self) -> RandomField {
        self.field
    }

    /// `zeta`.
    pub fn zeta(&self) -> f64 {
        self.zeta
    }

    /// The entries `(hi, lo)` whose log-ratio the multiplier of bin `j` uses.
    #[inline]
    fn pair(&self, j: usize) -> (usize, usize) {
        match self.scheme {
            MultiplierScheme::Backward => (j, j.saturating_sub(1)),
            MultiplierScheme::Forward => ((j + 1).min(self.theta.len() - 1), j),
        }
    }

    /// The gradient multiplier `psi` of a chain in bin `j` at temperature `tau` (bin width `du`).
    #[inline]
    pub fn multiplier(&self, j: usize, tau: f64, du: f64) -> f64 {
        let (hi, lo) = self.pair(j);
        let psi = 1.0 + self.zeta * tau / du * (self.theta[hi].ln() - self.theta[lo].ln());
        match self.clip {
            Some((a, b)) => psi.clamp(a, b),
            None => psi,
        }
    }

    /// Importance weight `theta[j]^zeta` of a sample in bin `j`.
    #[inline]
    pub fn weight(&self, j: usize) -> f64 {
        self.theta[j].powf(self.zeta)
    }

    /// `ln theta[j]^zeta`, for weights that underflow (large `zeta`).
    pub fn log_weight(&self, j: usize) -> f64 {
        self.zeta * self.theta[j].ln()
    }

    /// `ln Psi_theta(u)^zeta` for an energy in bin `j` at `offset = (u - lower edge) / du`
    /// (CSGLD paper eq. 5; continuous in `u`, extrapolated beyond the outer edges exactly as the
    /// constant multiplier of the outer bins integrates). Assumes an unclipped multiplier.
    #[inline]
    pub fn log_flattening(&self, j: usize, offset: f64) -> f64 {
        let (hi, lo) = self.pair(j);
        let (a, b) = (self.theta[lo].ln(), self.theta[hi].ln());
        self.zeta * (a + offset * (b - a))
    }

    /// A bound on the relative change of any entry of `theta` per unit `omega` at the current
    /// `theta`: `max_j theta[j]^(zeta - 1)` (power), 1 (interacting), `1 / min_j theta[j]`
    /// (cumulative). With the power field it can be tiny: a uniform `theta` over 1000 bins at
    /// `zeta = 10` gives `1e-27`, and `theta` cannot move.
    pub fn field_scale(&self) -> f64 {
        let (lo, hi) = self
            .theta
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(lo, hi), &t| {
                (lo.min(t), hi.max(t))
            });
        match self.field {
            RandomField::Power => hi.powf(self.zeta - 1.0).max(lo.powf(self.zeta - 1.0)),
            RandomField::Interacting => 1.0,
            RandomField::Cumulative => 1.0 / lo,
        }
    }

    /// Whether the multiplier is clipped.
    pub fn clipped(&self) -> bool {
        self.clip.is_some()
    }

    /// One stochastic-approximation update with step `omega in (0, 1)` from the bins of all
    /// chains (simultaneous for all `i`, from the old `theta`).
    pub fn update(&mut self, omega: f64, bins: &[usize]) {
        if bins.is_empty() {
            return;
        }
        let m = self.theta.len();
        let p = bins.len() as f64;
        // Per-chain coefficient c_p from the old theta, accumulated per bin.
        let mut add = vec![0.0; m];
        let mut total = 0.0;
        for &j in bins {
            let c = match self.field {
                RandomField::Power => self.theta[j].powf(self.zeta),
                RandomField::Interacting | RandomField::Cumulative => self.theta[j],
            } / p;
            add[j] += c;
            total += c;
        }
        if self.field == RandomField::Cumulative {
            // 1{i >= J_p}: prefix sums of the per-bin coefficients.
            for i in 1..m {
                add[i] += add[i - 1];
            }
        }
        let shrink = 1.0 - omega * total;
        for (t, a) in self.theta.iter_mut().zip(&add) {
            *t = (*t * shrink + omega * a).max(f64::MIN_POSITIVE);
        }
        // Remove rounding drift: the exact update keeps the sum (or the last entry) at 1.
        let norm = match self.field {
            RandomField::Cumulative => self.theta[m - 1],
            _ => self.theta.iter().sum(),
        };
        for t in &mut self.theta {
            *t /= norm;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::ChainRng;

    fn theta(field: RandomField, init: ThetaInit) -> ContourTheta {
        ContourTheta::new(7, field, 0.75, &init, MultiplierScheme::Backward, None).unwrap()
    }

    #[test]
    fn the_power_field_stalls_at_a_large_zeta_from_a_uniform_theta() {
        // Uniform theta over 1000 bins: the power field's coefficient is (1e-3)^zeta, 1e-30 at
        // zeta = 10 (a relative rate of 1e-27), and 10,000 updates of omega = 0.01 leave every
        // entry where it was; the interacting field's is 1e-3 at any zeta (relative rate 1), and
        // the same updates move theta.
        let make = |field| {
            ContourTheta::new(
                1000,
                field,
                10.0,
                &ThetaInit::Uniform,
                MultiplierScheme::Backward,
                None,
            )
            .unwrap()
        };
        let mut power = make(RandomField::Power);
        let mut inter = make(RandomField::Interacting);
        assert!((power.field_scale() / 1e-27 - 1.0).abs() < 1e-9);
        assert_eq!(inter.field_scale(), 1.0);
        let start = power.theta().to_vec();
        for k in 0..10_000 {
            power.update(0.01, &[5 + k % 3]);
            inter.update(0.01, &[5 + k % 3]);
        }
        // Unchanged but for the rounding of the renormalisation.
        let drift = power
            .theta()
            .iter()
            .zip(&start)
            .map(|(a, b)| (a / b - 1.0).abs())
            .fold(0.0, f64::max);
        assert!(drift < 1e-12, "theta moved by {drift}");
        assert!((power.multiplier(6, 1.0, 100.0) - 1.0).abs() < 1e-12);
        assert!(inter.theta()[5] > 0.1, "{}", inter.theta()[5]);
        assert!(inter.multiplier(6, 1.0, 100.0) != 1.0);
    }

    #[test]
    fn invariants_hold_under_any_sequence_of_bins() {
        // Property test: random bin sequences (1-16 chains, adversarial runs of one bin) with
        // omega up to 0.5 keep theta a positive probability vector (power, interacting) or
        // positive, non-decreasing with last entry 1 (cumulative).
        let mut rng = ChainRng::new(3, 0);
        for field in [
            RandomField::Power,
            RandomField::Interacting,
            RandomField::Cumulative,
        ] {
            for case in 0..200 {
                let init = if field == RandomField::Cumulative {
                    ThetaInit::Increasing
                } else {
                    ThetaInit::Decreasing
                };
                let mut t = theta(field, init);
                let chains = 1 + rng.below(16);
                for k in 1..400u64 {
                    let sticky = case % 3 == 0;
                    let bins: Vec<usize> = (0..chains)
                        .map(|_| if sticky { 6 } else { rng.below(7) })
                        .collect();
                    let omega = (0.5 * rng.uniform()).min(10.0 / (k as f64 + 10.0));
                    t.update(omega, &bins);
                    let th = t.theta();
                    assert!(
                        th.iter().all(|v| *v > 0.0 && v.is_finite()),
                        "{field:?}: {th:?}"
                    );
                    match field {
                        RandomField::Cumulative => {
                            assert!((th[6] - 1.0).abs() < 1e-12);
                            assert!(
                                th.windows(2).all(|w| w[0] <= w[1] * (1.0 + 1e-12)),
                                "{th:?}"
                            );
                        }
                        _ => assert!((th.iter().sum::<f64>() - 1.0).abs() < 1e-12),
                    }
                }
            }
        }
    }

    #[test]
    fn update_matches_the_formulas() {
        let mut t = theta(RandomField::Power, ThetaInit::Decreasing);
        let old = t.theta().to_vec();
        t.update(0.1, &[2]);
        let c = old[2].powf(0.75);
        for (i, o) in old.iter().enumerate() {
            let expect = o + 0.1 * c * (f64::from(u8::from(i == 2)) - o);
            assert!((t.theta()[i] - expect).abs() < 1e-15);
        }
        let mut t = theta(RandomField::Interacting, ThetaInit::Uniform);
        let old = t.theta().to_vec();
        t.update(0.2, &[1, 4]);
        #[allow(clippy::needless_range_loop)]
        for i in 0..7 {
            let h: f64 = [1usize, 4]
                .iter()
                .map(|&j| old[j] * (f64::from(u8::from(i == j)) - old[i]))
                .sum::<f64>()
                / 2.0;
            assert!((t.theta()[i] - (old[i] + 0.2 * h)).abs() < 1e-15);
        }
        let mut t = theta(RandomField::Cumulative, ThetaInit::Increasing);
        let old = t.theta().to_vec();
        t.update(0.3, &[3]);
        for (i, o) in old.iter().enumerate() {
            let expect = o + 0.3 * old[3] * (f64::from(u8::from(i >= 3)) - o);
            assert!((t.theta()[i] - expect).abs() < 1e-15);
        }
    }

    #[test]
    fn multiplier_and_weight_formulas() {
        let t = ContourTheta::new(
            3,
            RandomField::Power,
            2.0,
            &ThetaInit::Given(vec![0.5, 0.3, 0.2]),
            MultiplierScheme::Backward,
            None,
        )
        .unwrap();
        let expect = 1.0 + 2.0 * 1.5 / 0.5 * (0.3f64.ln() - 0.5f64.ln());
        assert!((t.multiplier(1, 1.5, 0.5) - expect).abs() < 1e-12);
        assert_eq!(t.multiplier(0, 1.5, 0.5), 1.0);
        assert!(t.multiplier(1, 1.5, 0.5) < 0.0, "a bouncy move");
        assert!((t.weight(2) - 0.04).abs() < 1e-15);
        let f = ContourTheta {
            scheme: MultiplierScheme::Forward,
            ..t.clone()
        };
        let expect = 1.0 + 2.0 / 0.5 * (0.2f64.ln() - 0.3f64.ln());
        assert!((f.multiplier(1, 1.0, 0.5) - expect).abs() < 1e-12);
        assert_eq!(f.multiplier(2, 1.0, 0.5), 1.0);
        let c = ContourTheta {
            clip: Some((0.0, 10.0)),
            ..t
        };
        assert_eq!(c.multiplier(1, 1.5, 0.5), 0.0);
    }

    #[test]
    fn bad_initialisations_are_rejected() {
        let new = |init: ThetaInit, field| {
            ContourTheta::new(3, field, 1.0, &init, MultiplierScheme::Backward, None)
        };
        assert!(new(ThetaInit::Given(vec![0.5, 0.5]), RandomField::Power).is_err());
        assert!(new(ThetaInit::Given(vec![0.5, 0.0, 0.5]), RandomField::Power).is_err());
        assert!(new(ThetaInit::Given(vec![0.5, -0.1, 0.6]), RandomField::Power).is_err());
        assert!(
            new(
                ThetaInit::Given(vec![0.5, f64::NAN, 0.5]),
                RandomField::Power
            )
            .is_err()
        );
        assert!(
            new(
                ThetaInit::Given(vec![0.9, 0.5, 1.0]),
                RandomField::Cumulative
            )
            .is_err()
        );
        assert!(
            ContourTheta::new(
                1,
                RandomField::Power,
                1.0,
                &ThetaInit::Uniform,
                MultiplierScheme::Backward,
                None
            )
            .is_err()
        );
        assert!(
            ContourTheta::new(
                3,
                RandomField::Power,
                -1.0,
                &ThetaInit::Uniform,
                MultiplierScheme::Backward,
                None
            )
            .is_err()
        );
        assert!(
            ContourTheta::new(
                3,
                RandomField::Power,
                f64::NAN,
                &ThetaInit::Uniform,
                MultiplierScheme::Backward,
                None
            )
            .is_err()
        );
    }
}
