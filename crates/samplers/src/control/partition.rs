//! The energy partition of the dynamic importance samplers (CSGLD paper sec. 3; thesis eq. 7.3).

use serde::{Deserialize, Serialize};

use crate::error::{SamplerError, check, positive};

/// `m` bins of width `du` starting at `u_min`: bin `i` (0-based) holds
/// `u_min + i du < u <= u_min + (i + 1) du`; energies below fall in bin 0, above in bin `m - 1`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EnergyPartition {
    /// Lower edge `u_min` of bin 0 (which also takes every energy below it).
    pub u_min: f64,
    /// Bin width `du`.
    pub du: f64,
    /// Number of bins `m >= 2`.
    pub m: usize,
}

impl EnergyPartition {
    /// A checked partition.
    pub fn new(u_min: f64, du: f64, m: usize) -> Result<Self, SamplerError> {
        let p = Self { u_min, du, m };
        p.validate()?;
        Ok(p)
    }

    /// The most bins a partition may have, 2^24 (the papers use 100 to 1000; each bin holds a
    /// few `f64` per chain, and more than this is a typo that would exhaust memory).
    pub const MAX_BINS: usize = 1 << 24;

    /// Checks `2 <= m <= 2^24`, `du > 0` finite, `u_min` finite.
    pub fn validate(&self) -> Result<(), SamplerError> {
        check(
            self.m >= 2,
            "m",
            self.m as f64,
            "the partition needs m >= 2 bins",
        )?;
        check(
            self.m <= Self::MAX_BINS,
            "bins",
            self.m as f64,
            "must be at most 2^24 = 16777216",
        )?;
        positive("du", self.du)?;
        check(
            self.u_min.is_finite(),
            "u_min",
            self.u_min,
            "must be finite",
        )
    }

    /// The bin `J(u)` of energy `u` (NaN energies are caught before, as divergence).
    #[inline]
    pub fn bin(&self, u: f64) -> usize {
        let i = ((u - self.u_min) / self.du).ceil() - 1.0;
        if i <= 0.0 {
            0
        } else {
            (i as usize).min(self.m - 1)
        }
    }

    /// `(u - lower edge of bin j) / du`, with bin 0's lower edge at `u_min` (in `[0, 1]` inside
    /// the inner bins; outside it in the outer bins).
    #[inline]
    pub fn offset(&self, j: usize, u: f64) -> f64 {
        (u - self.u_min) / self.du - j as f64
    }

    /// Upper edge of bin `i`.
    pub fn upper(&self, i: usize) -> f64 {
        if i + 1 >= self.m {
            f64::INFINITY
        } else {
            self.u_min + (i + 1) as f64 * self.du
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_follow_the_half_open_convention() {
        let p = EnergyPartition::new(0.0, 1.0, 5).unwrap();
        assert_eq!(p.bin(-10.0), 0);
        assert_eq!(p.bin(0.0), 0);
        assert_eq!(p.bin(0.5), 0);
        assert_eq!(p.bin(1.0), 0); // u_min + du belongs to bin 0
        assert_eq!(p.bin(1.0001), 1);
        assert_eq!(p.bin(4.0), 3);
        assert_eq!(p.bin(4.5), 4);
        assert_eq!(p.bin(1e9), 4);
        assert_eq!(p.upper(0), 1.0);
        assert_eq!(p.upper(4), f64::INFINITY);
    }

    #[test]
    fn invalid_partitions_are_rejected() {
        assert!(EnergyPartition::new(0.0, 1.0, 1).is_err());
        assert!(EnergyPartition::new(0.0, 0.0, 10).is_err());
        assert!(EnergyPartition::new(0.0, -1.0, 10).is_err());
        assert!(EnergyPartition::new(f64::NAN, 1.0, 10).is_err());
    }
}
