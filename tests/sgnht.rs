//! SGNHT (the kernel added through the registry) against its stationary law on N(0, 1): with
//! exact gradients it samples the target like SGHMC; with gradient noise of unknown size its
//! thermostat raises the friction and keeps the law, where SGHMC without a noise estimate heats
//! up by the predicted factor.
//!
//! Setting: `U = x^2 / 2`, tau 1, lr 0.0025 (`h = 0.05`), SGHMC friction `1 - mu = 0.1`, SGNHT
//! rest friction `a = 0.1`, 1000 host chains, 5000 burn-in steps, then 80 collections 500 steps
//! apart (friction 0.1 per step and frequency `sqrt(lr) = 0.05` per step make the position
//! critically damped, decorrelating within about 40 steps, so collections are independent).
//! The variance estimate over 80,000 draws has standard error `sqrt(2 / 80000) = 0.005`; the
//! tolerance is 5 standard errors plus 0.005 for the discretisation bias (the exact discrete
//! SGHMC variance, from the Lyapunov equation of the linear chain, is 1.0007 here), 0.03 in
//! all: the uncorrected thermostat's 0.95 fails it.
//!
//! With gradient noise of sd 4 every step adds `lr^2 16` to the velocity variance: SGHMC's
//! stationary variance becomes `1 + lr 16 / (2 (1 - mu) tau) = 1.2` (1.2008 from the discrete
//! Lyapunov equation; 40 standard errors away from 1), while SGNHT's friction settles at
//! `a + lr 16 / 2 = 0.12` and its variance stays 1. Measured before the thermostat used the
//! discrete chain's kinetic target `2 lr tau / (2 - xi)`: 0.958 with exact gradients (6
//! standard errors low); after, seeds 11-13 gave 1.006, 1.007, 1.002 (exact) and 0.974, 0.990,
//! 1.014 (noisy) against SGHMC's 1.170, 1.189, 1.214.

use sgmcmc::samplers::density::toy::{NoiseModel, by_name};
use sgmcmc::samplers::ensemble::HostEnsemble;
use sgmcmc::samplers::registry::{BuildContext, SamplerSettings};
use sgmcmc::samplers::sampler::Sampler;

fn variance(sampler: &str, gradient_sd: f64, seed: u64) -> f64 {
    let noise = if gradient_sd > 0.0 {
        NoiseModel::gradient(gradient_sd)
    } else {
        NoiseModel::EXACT
    };
    let target = by_name("normal").unwrap().with_noise(noise).unwrap();
    let chains = 1000;
    let ens = HostEnsemble::new(target, &vec![vec![0.0]; chains], seed).unwrap();
    let settings = SamplerSettings {
        lr: 0.0025,
        momentum: 0.9,
        friction: 0.1,
        ..SamplerSettings::named(sampler)
    };
    let mut s = settings
        .spec(&BuildContext::steps(15_000).chains(chains))
        .unwrap()
        .build(ens, seed)
        .unwrap();
    for _ in 0..5000 {
        s.step(&()).unwrap();
    }
    let mut xs = Vec::new();
    for _ in 0..80 {
        for _ in 0..500 {
            s.step(&()).unwrap();
        }
        xs.extend_from_slice(s.ensemble().positions());
    }
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)
}

#[test]
fn sgnht_keeps_the_gaussian_law_with_and_without_gradient_noise() {
    let tol = 5.0 * 0.005 + 0.005;
    let exact = variance("sgnht", 0.0, 12);
    println!("SGNHT, exact gradients: var {exact:.4} (target 1)");
    assert!((exact - 1.0).abs() < tol, "{exact}");
    let noisy = variance("sgnht", 4.0, 12);
    let hot = variance("sghmc", 4.0, 12);
    println!(
        "gradient noise sd 4: SGNHT var {noisy:.4} (target 1), SGHMC var {hot:.4} (predicted 1.2)"
    );
    assert!((noisy - 1.0).abs() < tol, "{noisy}");
    assert!((hot - 1.2).abs() < tol, "{hot}");
}
