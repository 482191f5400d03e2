//! Swap schemes and swap tests of replica exchange (thesis ch. 2 and 4).
//!
//! Schemes decide which adjacent pairs `(r, r + 1)` (0-based rungs; "pair r") may swap at step
//! `k`:
//!
//! * ADJ: every pair, in order, every step;
//! * SEO: the pairs of one random parity (even or odd), every step;
//! * DEO: the pairs of parity `k mod 2`;
//! * DEO_W: the pairs of parity `floor(k / W) mod 2`; their gates open when `k mod W = 0` and
//!   close after a swap (at most one swap per pair per window; thesis Algorithm 4);
//! * DEO*: DEO_W with `W* = ceil((ln P + ln ln P) / -ln(1 - S))` (thesis eq. 4.6), W = 1 for
//!   P <= 3.
//!
//! Parity follows the papers' 1-based pair numbers: pair `r` (0-based) is the papers' `r + 1`,
//! so "even" pairs are `r = 1, 3, ..`.
//!
//! Swap tests: the corrected Metropolis rule (thesis Algorithm 1, eq. 2.12)
//! `S = exp(d (U~_r - U~_(r+1) - d sigma2 / F))`, `d = 1 / tau_r - 1 / tau_(r+1)`, with
//! `F = inf` the naive rule; and the deterministic rule with correction buffer `C > 0`
//! (eq. 4.8) `A_r = 1{U~_(r+1) + C < U~_r}`.

use serde::{Deserialize, Serialize};

use crate::error::{SamplerError, check};
use crate::rng::ChainRng;

/// Which pairs may swap when.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SwapScheme {
    /// Every pair, in order, every step (ADJ).
    Adjacent,
    /// A random parity every step (SEO).
    StochasticEvenOdd,
    /// Parity `k mod 2` (DEO).
    DeterministicEvenOdd,
    /// Generalised windows of `W` steps (DEO_W).
    Window(u64),
    /// DEO_W with the optimal window `W*` for a target swap rate (DEO*).
    Optimal {
        /// Target swap rate `S` in (0, 1).
        target_rate: f64,
    },
}

/// The optimal window `W* = ceil((ln P + ln ln P) / -ln(1 - S))`, 1 for `P <= 3`.
pub fn optimal_window(p: usize, target_rate: f64) -> Result<u64, SamplerError> {
    check(
        target_rate > 0.0 && target_rate < 1.0,
        "target_rate",
        target_rate,
        "must lie in (0, 1)",
    )?;
    if p <= 3 {
        return Ok(1);
    }
    let lp = (p as f64).ln();
    Ok(((lp + lp.ln()) / -(1.0 - target_rate).ln()).ceil().max(1.0) as u64)
}

/// Expected round-trip time of DEO_W with rejection rate `r_p` on pair `p` (thesis Lemma 5):
/// `E[T] = 2 W P + 2 W P sum_p r_p^W / (1 - r_p^W)`.
pub fn expected_round_trip(window: u64, rejection: &[f64]) -> f64 {
    let w = window as f64;
    let p = (rejection.len() + 1) as f64;
    let s: f64 = rejection
        .iter()
        .map(|r| r.powf(w) / (1.0 - r.powf(w)))
        .sum();
    2.0 * w * p + 2.0 * w * p * s
}

/// The state of a scheme: its window and the gates of the pairs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SwapSchedule {
    scheme: SwapScheme,
    window: u64,
    open: Vec<bool>,
}

impl SwapSchedule {
    /// The schedule of `scheme` on `p` rungs.
    pub fn new(scheme: SwapScheme, p: usize) -> Result<Self, SamplerError> {
        let window = match scheme {
            SwapScheme::Window(w) => {
                check(w >= 1, "window", w as f64, "must be >= 1")?;
                w
            }
            SwapScheme::Optimal { target_rate } => optimal_window(p, target_rate)?,
            _ => 1,
        };
        Ok(Self {
            scheme,
            window,
            open: vec![true; p.saturating_sub(1)],
        })
    }

    /// The window `W` (1 for ADJ, SEO and DEO).
    pub fn window(&self) -> u64 {
        self.window
    }

    /// Writes into `pairs` the pairs that may swap at step `k`, in order.
    pub fn pairs(&mut self, k: u64, rng: &mut ChainRng, pairs: &mut Vec<usize>) {
        pairs.clear();
        let n = self.open.len();
        let parity = match self.scheme {
            SwapScheme::Adjacent => {
                pairs.extend(0..n);
                return;
            }
            SwapScheme::StochasticEvenOdd => u64::from(rng.uniform() < 0.5),
            _ => (k / self.window) % 2,
        };
        if k.is_multiple_of(self.window) {
            self.open.fill(true);
        }
        // Pair r is the papers' r + 1: parity of r + 1.
        pairs.extend((0..n).filter(|&r| (r as u64 + 1) % 2 == parity && self.open[r]));
    }

    /// Closes the gate of pair `r` until the next window (after a swap; DEO_W and DEO*).
    pub fn close(&mut self, r: usize) {
        if matches!(
            self.scheme,
            SwapScheme::Window(_) | SwapScheme::Optimal { .. }
        ) {
            self.open[r] = false;
        }
    }
}

/// `ln S` of the corrected Metropolis swap between rungs at temperatures `tau_lo < tau_hi` with
/// energies `u_lo`, `u_hi`, energy variance estimate `sigma2` and correction factor `F >= 1`
/// (`F = inf`: the naive rule).
#[inline]
pub fn log_swap_rate(tau_lo: f64, tau_hi: f64, u_lo: f64, u_hi: f64, sigma2: f64, f: f64) -> f64 {
    let d = 1.0 / tau_lo - 1.0 / tau_hi;
    d * (u_lo - u_hi - d * sigma2 / f)
}

/// Per-pair swap statistics.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SwapStats {
    /// Swap attempts per pair.
    pub attempts: Vec<u64>,
    /// Accepted swaps per pair.
    pub accepts: Vec<u64>,
    /// Swap tests per pair, whether the schedule allowed the swap or not (the deterministic
    /// rule tests every pair every step; the Metropolis rule only scheduled pairs).
    pub tests: Vec<u64>,
    /// Tests that passed (`A_r = 1`): their rate is what the buffer adaptation drives to `S`.
    pub passes: Vec<u64>,
}

impl SwapStats {
    /// Zeroed statistics for `pairs` pairs.
    pub fn new(pairs: usize) -> Self {
        Self {
            attempts: vec![0; pairs],
            accepts: vec![0; pairs],
            tests: vec![0; pairs],
            passes: vec![0; pairs],
        }
    }

    /// Acceptance rate of each pair (`NaN` where nothing was attempted).
    pub fn rates(&self) -> Vec<f64> {
        self.attempts
            .iter()
            .zip(&self.accepts)
            .map(|(a, s)| *s as f64 / *a as f64)
            .collect()
    }

    /// Pass rate of the swap test of each pair (`NaN` where nothing was tested).
    pub fn pass_rates(&self) -> Vec<f64> {
        self.tests
            .iter()
            .zip(&self.passes)
            .map(|(a, s)| *s as f64 / *a as f64)
            .collect()
    }

    /// Accepted swaps over all pairs.
    pub fn total_accepts(&self) -> u64 {
        self.accepts.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optimal_windows_match_the_paper() {
        assert_eq!(optimal_window(16, 0.4).unwrap(), 8);
        assert_eq!(optimal_window(10, 5e-3).unwrap(), 626);
        for p in 2..=3 {
            assert_eq!(optimal_window(p, 0.4).unwrap(), 1);
        }
        for s in [0.0, 1.0, -0.1, f64::NAN] {
            assert!(optimal_window(16, s).is_err());
        }
        assert!(SwapSchedule::new(SwapScheme::Window(0), 4).is_err());
    }

    #[test]
    fn deo_alternates_parity_and_windows_gate_swaps() {
        let mut rng = ChainRng::new(1, 0);
        let mut pairs = Vec::new();
        let mut deo = SwapSchedule::new(SwapScheme::DeterministicEvenOdd, 5).unwrap();
        deo.pairs(0, &mut rng, &mut pairs);
        assert_eq!(pairs, vec![1, 3]); // papers' pairs 2 and 4 at even k
        deo.pairs(1, &mut rng, &mut pairs);
        assert_eq!(pairs, vec![0, 2]);
        let mut w = SwapSchedule::new(SwapScheme::Window(3), 5).unwrap();
        w.pairs(0, &mut rng, &mut pairs);
        assert_eq!(pairs, vec![1, 3]);
        w.close(1);
        w.pairs(1, &mut rng, &mut pairs);
        assert_eq!(pairs, vec![3]);
        w.pairs(3, &mut rng, &mut pairs);
        assert_eq!(pairs, vec![0, 2]);
        let mut adj = SwapSchedule::new(SwapScheme::Adjacent, 4).unwrap();
        adj.pairs(7, &mut rng, &mut pairs);
        assert_eq!(pairs, vec![0, 1, 2]);
    }

    #[test]
    fn corrected_rate_is_the_naive_rate_minus_the_variance_term() {
        let naive = log_swap_rate(1.0, 10.0, 5.0, 3.0, 4.0, f64::INFINITY);
        assert!((naive - 0.9 * 2.0).abs() < 1e-12);
        let corrected = log_swap_rate(1.0, 10.0, 5.0, 3.0, 4.0, 1.0);
        assert!((corrected - (naive - 0.81 * 4.0)).abs() < 1e-12);
    }
}
