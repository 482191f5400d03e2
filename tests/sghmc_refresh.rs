//! SGHMC's momentum refresh draws from the discrete chain's stationary velocity law given the
//! position, so a chain refreshed every few steps samples the same law as one never refreshed.
//!
//! N(0, 1) with exact gradients, lr 0.01, mu 0.9, tau 1: the discrete chain's exact stationary
//! law (Lyapunov equation) has Var x = 1.0026, Var v = 1.0554 lr and Cov(x, v) = 0.00528 =
//! lr / (1 + mu) Var x, so `v | x ~ N(lr / (1 + mu) x, 2 lr / (1 + mu))`. 2000 host chains, 2000
//! burn-in steps, then 40 collections 100 steps apart: 80,000 nearly independent draws,
//! standard error of the variance sqrt(2 / 80000) = 0.005; tolerance 5 standard errors plus
//! 0.005. Measured with a refresh every 5 steps: 0.864 drawing `N(0, 2 lr / (1 + mu))` (the
//! variance right, the half-step lag ignored), 1.0011 with the lag.

use sgmcmc::samplers::ensemble::HostEnsemble;
use sgmcmc::samplers::registry::{BuildContext, SamplerSettings};
use sgmcmc::samplers::sampler::Sampler;
use sgmcmc::testfunctions::{NoiseModel, by_name};

fn variance(resample_every: u64) -> f64 {
    let target = by_name("normal")
        .unwrap()
        .with_noise(NoiseModel::EXACT)
        .unwrap();
    let chains = 2000;
    let ens = HostEnsemble::new(target, &vec![vec![0.0]; chains], 3).unwrap();
    let s = SamplerSettings {
        lr: 0.01,
        momentum: 0.9,
        resample_every,
        ..SamplerSettings::named("sghmc")
    };
    let mut s = s
        .spec(&BuildContext::steps(6000).chains(chains))
        .unwrap()
        .build(ens, 3)
        .unwrap();
    for _ in 0..2000 {
        s.step(&()).unwrap();
    }
    let mut xs = Vec::new();
    for _ in 0..40 {
        for _ in 0..100 {
            s.step(&()).unwrap();
        }
        xs.extend_from_slice(s.ensemble().positions());
    }
    let m = xs.iter().sum::<f64>() / xs.len() as f64;
    xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64
}

#[test]
fn refreshed_momenta_leave_the_stationary_law_unchanged() {
    for every in [0, 5, 20] {
        let v = variance(every);
        println!("resample every {every}: Var x {v:.4} (exact 1.0026)");
        assert!((v - 1.0026).abs() < 0.03, "every {every}: {v}");
    }
}
