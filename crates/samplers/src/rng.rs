//! Per-chain random streams.
//!
//! Every chain owns a [`ChainRng`] derived from `(seed, chain index)`, and every random number a
//! chain uses (injected target noise, Langevin noise, momentum refreshes) comes from it in a fixed
//! order. Noise is generated on the host and uploaded, not drawn from burn's device RNG: burn's
//! CPU backends share one process-global generator, so two samplers (or two tests) in one process
//! would perturb each other. With host streams a run is bit-reproducible per backend whatever else
//! runs in the process, and the tensor path and the `f64` path see the *same* noise, which the
//! tests use to check one against the other.

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal, StudentT};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A chain's random stream (xoshiro256++). Serialisable, for checkpoints.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ChainRng(Xoshiro256PlusPlus);

impl ChainRng {
    /// Stream `stream` of run seed `seed`. Streams of one seed are independent (distinct
    /// SplitMix64-expanded states).
    pub fn new(seed: u64, stream: u64) -> Self {
        let mixed = splitmix64(seed ^ splitmix64(stream.wrapping_add(0x9E37_79B9_7F4A_7C15)));
        Self(Xoshiro256PlusPlus::seed_from_u64(mixed))
    }

    /// `n` independent streams `0..n` of `seed`.
    pub fn streams(seed: u64, n: usize) -> Vec<Self> {
        (0..n as u64).map(|s| Self::new(seed, s)).collect()
    }

    /// A standard normal draw.
    #[inline]
    pub fn normal(&mut self) -> f64 {
        StandardNormal.sample(&mut self.0)
    }

    /// A standard normal draw in `f32`.
    #[inline]
    pub fn normal_f32(&mut self) -> f32 {
        StandardNormal.sample(&mut self.0)
    }

    /// Fills `out` with standard normal `f32` draws.
    pub fn fill_normal_f32(&mut self, out: &mut [f32]) {
        for v in out {
            *v = StandardNormal.sample(&mut self.0);
        }
    }

    /// A Student-t draw with `nu` degrees of freedom (`nu > 0`, checked by the caller).
    pub fn student_t(&mut self, nu: f64) -> f64 {
        StudentT::new(nu)
            .map(|d| d.sample(&mut self.0))
            .unwrap_or(f64::NAN)
    }

    /// A uniform draw in `[0, 1)`.
    #[inline]
    pub fn uniform(&mut self) -> f64 {
        self.0.random::<f64>()
    }

    /// A uniform integer in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        self.0.random_range(0..n)
    }
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: Vec<f64> = (0..4).map(|_| ChainRng::new(7, 0).normal()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let mut s0 = ChainRng::new(7, 0);
        let mut s1 = ChainRng::new(7, 1);
        assert_ne!(s0.normal(), s1.normal());
    }

    #[test]
    fn normal_moments() {
        // 1e5 draws: the standard error of the mean is 1/sqrt(1e5) = 0.0032, of the variance
        // sqrt(2/1e5) = 0.0045; 5 standard errors.
        let mut r = ChainRng::new(1, 2);
        let n = 100_000;
        let xs: Vec<f64> = (0..n).map(|_| r.normal()).collect();
        let m = xs.iter().sum::<f64>() / n as f64;
        let v = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n as f64;
        assert!(m.abs() < 5.0 * 0.0032, "mean {m}");
        assert!((v - 1.0).abs() < 5.0 * 0.0045, "var {v}");
    }
}
