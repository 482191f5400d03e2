//! Per-chain random streams.
//!
//! Every chain owns a [`ChainRng`] derived from `(seed, chain index)`, and every random number a
//! chain uses (injected target noise, Langevin noise, momentum refreshes) comes from it in a fixed
//! order. On the CPU backends noise is generated on the host and uploaded, not drawn from burn's
//! device RNG: burn's CPU backends share one process-global generator, so two samplers (or two
//! tests) in one process would perturb each other. With host streams a run is bit-reproducible
//! per backend whatever else runs in the process, and the tensor path and the `f64` path see the
//! *same* noise, which the tests use to check one against the other. On an accelerator the
//! Langevin noise is drawn on the device, each draw seeded from the chain's stream under
//! [`with_device_seed`] (`ensemble::NoiseSource`).

use std::sync::Mutex;

use burn::tensor::Device;
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

    /// The next 64 random bits (the seed of a device draw, [`with_device_seed`]).
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0.random::<u64>()
    }

    /// A uniform integer in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        self.0.random_range(0..n)
    }
}

/// One seed from two: `mix(acc ^ mix(next))`, order-sensitive, so the seed of a multi-chain
/// device draw depends on every chain's bits and on their order.
pub fn combine(acc: u64, next: u64) -> u64 {
    mix(acc ^ splitmix64(next))
}

/// Serialises every use of burn's device generator by this workspace (parameter
/// initialisation, device noise): burn's generators are process-global (one per CPU backend,
/// one for all cubecl devices), and a seed is only worth something if nothing draws between
/// it and the draws it is for.
static DEVICE_RNG: Mutex<()> = Mutex::new(());

/// `f()` right after seeding `device`'s generator with `seed`, under the process-wide lock of
/// `DEVICE_RNG`: the draws `f` makes are a function of `seed` alone, whatever else in this
/// workspace draws on another thread. (A draw from burn's generator outside this lock, by other
/// code on another thread, can still land between the seed and `f`'s draws.)
pub fn with_device_seed<R>(device: &Device, seed: u64, f: impl FnOnce() -> R) -> R {
    let _guard = DEVICE_RNG.lock().unwrap_or_else(|e| e.into_inner());
    device.seed(seed);
    f()
}

/// The SplitMix64 output function (Steele, Lea & Flood 2014): a bijective 64-bit mixer.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One SplitMix64 step from state `z`: advance by the golden-ratio increment, then mix.
fn splitmix64(z: u64) -> u64 {
    mix(z.wrapping_add(0x9E37_79B9_7F4A_7C15))
}

/// A deterministic permutation of `0..n` for `(seed, epoch)`: the minibatch order of an epoch,
/// a pure function so a resumed run replays it without storing generator state.
///
/// Fisher-Yates on a SplitMix64 stream whose state starts at `mix(seed + mix(epoch))`
/// (wrapping add): position `i = n-1, ..., 1` swaps with `j = floor(u (i+1) / 2^64)` for the
/// next 64-bit output `u`, whose bias from uniform is below `(i+1) / 2^64`. This stream is part
/// of the runs' contract (checkpoints replay it): it must not change.
pub fn epoch_order(n: usize, seed: u64, epoch: u64) -> Vec<usize> {
    let mut state = mix(seed.wrapping_add(mix(epoch)));
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let u = splitmix64(state);
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        order.swap(i, ((u128::from(u) * (i + 1) as u128) >> 64) as usize);
    }
    order
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
    fn epoch_order_is_a_pure_uniform_permutation() {
        let n = 10;
        let a = epoch_order(n, 42, 3);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..n).collect::<Vec<_>>());
        assert_eq!(a, epoch_order(n, 42, 3));
        assert_ne!(a, epoch_order(n, 42, 4));
        assert_ne!(a, epoch_order(n, 43, 3));
        assert!(epoch_order(0, 1, 1).is_empty());
        assert_eq!(epoch_order(1, 1, 1), vec![0]);
        // Each of the 5 positions of element 0 over 20,000 epochs: 4,000 expected, sd
        // sqrt(20000 * 0.2 * 0.8) = 57; 5 sd.
        let mut hits = [0u32; 5];
        for e in 0..20_000 {
            let o = epoch_order(5, 7, e);
            hits[o.iter().position(|&v| v == 0).unwrap()] += 1;
        }
        assert!(
            hits.iter()
                .all(|h| (f64::from(*h) - 4000.0).abs() < 5.0 * 57.0),
            "{hits:?}"
        );
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
