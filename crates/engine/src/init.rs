//! Chains initialised from the run's seed.
//!
//! burn's parameter initialisers draw from the device's generator, which is shared by the whole
//! process, and they draw lazily, on a parameter's first use. [`seeded`] seeds the device and
//! draws every parameter under the process-wide lock the samplers' device noise also takes
//! ([`with_device_seed`]), so a network's initial weights are a function of the seed alone,
//! whatever other runs share the process.

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::{Device, Tensor};
use sgmcmc_samplers::rng::with_device_seed;

/// `init()` (a module's initialisation) right after seeding `device` with `seed`, with every
/// parameter drawn before the lock is released.
pub fn seeded<T: Module>(device: &Device, seed: u64, init: impl FnOnce() -> T) -> T {
    with_device_seed(device, seed, || {
        let module = init();
        module.visit(&mut Materialize);
        module
    })
}

/// The seed of chain `p` of a run seeded with `seed`: `seed + p * 0x9E3779B97F4A7C15`
/// (wrapping; chain 0 has the run's seed itself).
pub fn chain_seed(seed: u64, p: usize) -> u64 {
    seed.wrapping_add((p as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// `n` chains, chain `p` initialised by `init` under [`seeded`] with [`chain_seed`]`(seed, p)`.
pub fn chains<T: Module>(device: &Device, seed: u64, n: usize, init: impl Fn() -> T) -> Vec<T> {
    chains_in(device, seed, 0..n, init)
}

/// Chains `range` of a run (a rank's block, [`sgmcmc_samplers::comm`]), each initialised as
/// [`chains`] initialises it: chain `p` has the same weights wherever it runs.
pub fn chains_in<T: Module>(
    device: &Device,
    seed: u64,
    range: std::ops::Range<usize>,
    init: impl Fn() -> T,
) -> Vec<T> {
    range
        .map(|p| seeded(device, chain_seed(seed, p), &init))
        .collect()
}

/// Draws every lazily initialised parameter of a module.
struct Materialize;

impl ModuleVisitor for Materialize {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let _ = param.val();
    }
}

#[cfg(test)]
mod tests {
    use burn::nn::{Linear, LinearConfig};
    use burn::tensor::TensorData;

    use super::*;

    fn out(m: &Linear, device: &Device) -> Vec<f32> {
        let x = Tensor::<2>::from_data(TensorData::new(vec![0.3f32, -1.2, 0.7], [1, 3]), device);
        m.forward(x).into_data().try_into_vec::<f32>().unwrap()
    }

    #[test]
    fn seeded_weights_do_not_depend_on_a_later_seed() {
        // Run A seeds and initialises; run B seeds with another seed before A first uses its
        // network (what two threads can do). A's weights must be those of its seed.
        let device = Device::flex();
        let cfg = LinearConfig::new(3, 2);
        let alone = out(&seeded(&device, 11, || cfg.init(&device)), &device);
        let a = seeded(&device, 11, || cfg.init(&device));
        let b = seeded(&device, 12, || cfg.init(&device));
        assert_eq!(out(&a, &device), alone);
        assert_ne!(out(&b, &device), alone);
        let c = chains(&device, 11, 2, || cfg.init(&device));
        assert_ne!(out(&c[0], &device), out(&c[1], &device));
    }
}
