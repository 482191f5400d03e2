//! The rungs of a replica-exchange ladder and the index process over them (thesis ch. 2-4).
//!
//! Rung `r` (0-based; the papers' `r + 1`) has a temperature `tau_r` and a learning rate `lr_r`;
//! samples come from rung 0. A swap exchanges which parameter set (replica, "chain") sits on
//! which rung: cheaper than exchanging positions, and it keeps every replica's identity, so the
//! index process (the rung of each replica over time) and round trips can be traced.

use serde::{Deserialize, Serialize};

use crate::error::{SamplerError, check, positive, temperature};

/// Temperatures and learning rates of the rungs, lowest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ladder {
    /// `tau_0 .. tau_(P-1)`.
    pub temperatures: Vec<f64>,
    /// `lr_0 .. lr_(P-1)`.
    pub lrs: Vec<f64>,
}

impl Ladder {
    /// A tempered ladder for Metropolis swaps: `P >= 2`, temperatures positive, at most
    /// [`MAX_TEMPERATURE`](crate::error::MAX_TEMPERATURE) and strictly increasing, learning
    /// rates finite, positive and non-decreasing. Errors name the first value that breaks a
    /// rule.
    pub fn tempered(temperatures: Vec<f64>, lrs: Vec<f64>) -> Result<Self, SamplerError> {
        let l = Self { temperatures, lrs };
        l.check_common()?;
        for &t in &l.temperatures {
            temperature("temperatures", t)?;
            check(t > 0.0, "temperatures", t, "must be > 0")?;
        }
        ordered(
            &l.temperatures,
            "temperatures",
            |a, b| a < b,
            "must increase strictly along the ladder",
        )?;
        ordered(
            &l.lrs,
            "lrs",
            |a, b| a <= b,
            "must not decrease along the ladder",
        )?;
        Ok(l)
    }

    /// A learning-rate ladder for deterministic swaps (DEO*-SGD, thesis Algorithm 4): learning
    /// rates strictly increasing; rung 0 runs at `tau_0 >= 0` (SGLD exploitation, or 0 for SGD),
    /// every other rung at temperature 0 (SGD exploration).
    pub fn learning_rates(lrs: Vec<f64>, tau_0: f64) -> Result<Self, SamplerError> {
        let mut temperatures = vec![0.0; lrs.len()];
        if let Some(t) = temperatures.first_mut() {
            *t = tau_0;
        }
        let l = Self { temperatures, lrs };
        l.check_common()?;
        temperature("temperature", tau_0)?;
        ordered(
            &l.lrs,
            "lrs",
            |a, b| a < b,
            "must increase strictly along the ladder",
        )?;
        Ok(l)
    }

    /// `P` values from `lo` to `hi` in geometric progression.
    pub fn geometric(lo: f64, hi: f64, p: usize) -> Vec<f64> {
        if p < 2 {
            return vec![lo; p];
        }
        let r = (hi / lo).powf(1.0 / (p - 1) as f64);
        (0..p).map(|i| lo * r.powi(i as i32)).collect()
    }

    /// Number of rungs `P`.
    pub fn len(&self) -> usize {
        self.lrs.len()
    }

    /// Whether the ladder is empty (never, once validated).
    pub fn is_empty(&self) -> bool {
        self.lrs.is_empty()
    }

    fn check_common(&self) -> Result<(), SamplerError> {
        let p = self.lrs.len();
        check(p >= 2, "chains", p as f64, "replica exchange needs P >= 2")?;
        check(
            self.temperatures.len() == p,
            "temperatures",
            self.temperatures.len() as f64,
            "needs one temperature per learning rate",
        )?;
        self.lrs.iter().try_for_each(|&l| positive("lrs", l))
    }
}

/// Checks `in_order(v[i], v[i + 1])` along `v`; the error names the first value out of order.
fn ordered(
    v: &[f64],
    name: &'static str,
    in_order: impl Fn(f64, f64) -> bool,
    reason: &'static str,
) -> Result<(), SamplerError> {
    match v.windows(2).find(|w| !in_order(w[0], w[1])) {
        Some(w) => check(false, name, w[1], reason),
        None => Ok(()),
    }
}

/// Which replica sits on which rung, and the round trips completed.
///
/// A replica completes a round trip each time it goes from rung 0 to rung `P - 1` and back to
/// rung 0 (the textbook definition); a replica starting elsewhere must reach rung 0 first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexProcess {
    rung_of: Vec<usize>,
    replica_at: Vec<usize>,
    /// Per replica: 0 = no end visited yet, 1 = last visited rung 0, 2 = reached `P - 1` after 0.
    leg: Vec<u8>,
    round_trips: Vec<u64>,
}

impl IndexProcess {
    /// Replica `i` on rung `i`.
    pub fn new(p: usize) -> Self {
        let mut s = Self {
            rung_of: (0..p).collect(),
            replica_at: (0..p).collect(),
            leg: vec![0; p],
            round_trips: vec![0; p],
        };
        s.visit(0);
        s.visit(p - 1);
        s
    }

    /// The rung of every replica.
    pub fn rungs(&self) -> &[usize] {
        &self.rung_of
    }

    /// The replica on rung `r`.
    pub fn replica_at(&self, r: usize) -> usize {
        self.replica_at[r]
    }

    /// Exchanges the replicas on rungs `r` and `r + 1`.
    pub fn swap(&mut self, r: usize) {
        let (a, b) = (self.replica_at[r], self.replica_at[r + 1]);
        self.replica_at.swap(r, r + 1);
        self.rung_of[a] = r + 1;
        self.rung_of[b] = r;
        self.visit(r);
        self.visit(r + 1);
    }

    /// Round trips completed by each replica.
    pub fn round_trips(&self) -> &[u64] {
        &self.round_trips
    }

    /// Round trips completed by all replicas.
    pub fn total_round_trips(&self) -> u64 {
        self.round_trips.iter().sum()
    }

    fn visit(&mut self, rung: usize) {
        let top = self.rung_of.len() - 1;
        let i = self.replica_at[rung];
        if rung == 0 {
            if self.leg[i] == 2 {
                self.round_trips[i] += 1;
            }
            self.leg[i] = 1;
        } else if rung == top && self.leg[i] == 1 {
            self.leg[i] = 2;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ladders_validate() {
        assert!(Ladder::tempered(vec![1.0, 10.0], vec![0.1, 0.1]).is_ok());
        for (t, l) in [
            (vec![1.0], vec![0.1]),
            (vec![1.0, 1.0], vec![0.1, 0.1]),
            (vec![10.0, 1.0], vec![0.1, 0.1]),
            (vec![1.0, f64::NAN], vec![0.1, 0.1]),
            (vec![1.0, 10.0], vec![0.2, 0.1]),
            (vec![1.0, 10.0], vec![0.1]),
        ] {
            assert!(
                Ladder::tempered(t.clone(), l.clone()).is_err(),
                "{t:?} {l:?}"
            );
        }
        assert!(Ladder::learning_rates(vec![0.003, 0.6], 1.0).is_ok());
        assert!(Ladder::learning_rates(vec![0.6, 0.003], 1.0).is_err());
        let g = Ladder::geometric(0.003, 0.6, 16);
        assert!((g[0] - 0.003).abs() < 1e-15 && (g[15] - 0.6).abs() < 1e-12);
    }

    #[test]
    fn round_trips_follow_the_textbook_rule() {
        let mut ix = IndexProcess::new(3);
        // Replica 0 climbs 0 -> 1 -> 2 and back 2 -> 1 -> 0: one round trip.
        ix.swap(0);
        ix.swap(1);
        assert_eq!(ix.rungs()[0], 2);
        ix.swap(1);
        ix.swap(0);
        assert_eq!(ix.rungs()[0], 0);
        assert_eq!(ix.round_trips(), &[1, 0, 0]);
        // Replica 2 started on top: reaching 0 is not a trip; up and back again is.
        let mut ix = IndexProcess::new(2);
        ix.swap(0);
        assert_eq!(ix.round_trips(), &[0, 0]);
        ix.swap(0);
        assert_eq!(ix.round_trips(), &[1, 0]);
        ix.swap(0);
        assert_eq!(ix.round_trips(), &[1, 1]);
    }
}
