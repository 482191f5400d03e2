//! Under replica exchange a velocity stays with its rung (issue: reSGHMC and DEO with momentum
//! sampled the wrong law on rung 0 when each replica carried its momentum to the new rung).
//!
//! Target N(0, 1) with exact energies and gradients, so the corrected Metropolis swap of
//! reSGHMC (F = 1, sigma^2 = 0) is the exact exchange. SGHMC at lr 0.01, mu 0.9, tau 1 has the
//! exact discrete stationary law (Lyapunov equation of the linear chain) Var x = 1.0026 and
//! Var v = 1.0554 lr. With the hot rung's momentum travelling (tau 10) rung 0's variance was
//! 1.39.
//!
//! Monte Carlo error: 8 seeds x 2000 rung-0 samples 100 steps apart (the underdamped chain
//! decorrelates within ~20 steps): the variance estimate's standard error is
//! sqrt(2 / 16000) = 0.011; tolerance 5 standard errors plus 0.005 of discretisation slack.
//! Velocities are read every 20 steps (friction 0.1 per step decorrelates them in ~10):
//! 8 x 10000 draws, standard error 1.0554 sqrt(2 / 80000) = 0.0053, tolerance 0.032.
//!
//! Measured (rung-0 Var x, Var v / lr; 2 rungs / 3 rungs under DEO): momenta travelling with
//! the replicas 1.388, 3.575; momenta kept on the rung 0.990, 1.083 / 0.933, 1.093 (the
//! velocity, half a step behind the position it moved, no longer matches the swapped-in
//! position: a bias that does not vanish as lr -> 0 when swaps are tried every step); kept on
//! the rung and shifted by `lr / (1 + mu) (grad U(x_new) - grad U(x_old))` 1.004, 1.053 /
//! 1.004, 1.054.
//!
//! The variances alone let the unshifted 2-rung swap pass (0.990, 1.083 are inside their
//! tolerances), so the test also checks the lag itself: on rung 0 the regression slope
//! `Cov(x, v) / Var x` must be `lr / (1 + mu) = 0.005263` within 4.5 standard errors (the spread
//! of the 8 seeds' slopes over sqrt(8), from the run under test: 3.8e-4 and 3.1e-4 shifted).
//! Measured: shifted 0.005330 / 0.005196 (2 / 3 rungs), unshifted 0.003465 / 0.003072 (se
//! 1.3e-4 for 2 rungs: 14 standard errors off); and one swap computed by hand carries each
//! rung's `v - c g` to 1e-15 (`a_swap_carries_each_rungs_velocity_residual_exactly`).
//!
//! DEO*-SGD (`deo-msgd`) is not exact on rung 0 by design: its deterministic swaps bring
//! positions from zero-temperature momentum-SGD rungs. What the fix changes there is the
//! velocity: rung 0's no longer comes from those rungs, whose velocities decay to 0 at the
//! minimum (rung-0 Var v / lr 0.593 before, 0.904 after, against SGHMC's stationary 1.055; the
//! rest of the gap is the swapped-in positions').

mod common;

use sgmcmc::samplers::checkpoint::EnsembleState;
use sgmcmc::samplers::ensemble::HostEnsemble;
use sgmcmc::samplers::registry::{AnySampler, BuildContext, SamplerSettings};
use sgmcmc::samplers::sampler::Sampler;
use sgmcmc::testfunctions::{NoiseModel, by_name};

const LR: f64 = 0.01;
/// The velocity's lag behind the position, `E[v | x] = lr / (1 + mu) x` on N(0, 1).
const LAG: f64 = LR / 1.9;

fn sampler(name: &str, chains: usize, seed: u64) -> AnySampler<HostEnsemble> {
    let target = by_name("normal")
        .unwrap()
        .with_noise(NoiseModel::EXACT)
        .unwrap();
    let ens = HostEnsemble::new(target, &vec![vec![0.5]; chains], seed).unwrap();
    let mut s = SamplerSettings {
        lr: LR,
        momentum: 0.9,
        ..SamplerSettings::named(name)
    };
    s.replica.temperatures = if chains == 3 {
        vec![1.0, 3.0, 10.0]
    } else {
        vec![1.0, 10.0]
    };
    if name == "resghmc" && chains == 3 {
        s.replica.scheme = Some(sgmcmc::samplers::control::SwapScheme::DeterministicEvenOdd);
    }
    s.replica.variance_period = 0;
    s.replica.lrs = if name.starts_with("deo") {
        vec![LR, 2.0 * LR, 4.0 * LR]
    } else {
        Vec::new()
    };
    s.spec(&BuildContext::steps(205_000).chains(chains))
        .unwrap()
        .build(ens, seed)
        .unwrap()
}

/// Position and velocity of the chain on rung 0.
fn rung0(s: &AnySampler<HostEnsemble>) -> (f64, f64) {
    let c = s.report().rungs.iter().position(|r| *r == 0).unwrap();
    let x = s.ensemble().chain(c)[0];
    let EnsembleState::Host { state, .. } = s.state().unwrap().ensemble else {
        unreachable!()
    };
    // Slot 0 is the velocity, laid out like the positions.
    (x, state[c])
}

fn variance(v: &[f64]) -> f64 {
    let m = v.iter().sum::<f64>() / v.len() as f64;
    v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64
}

/// The regression slope `Cov(x, v) / Var(x)` of paired draws.
fn slope(pairs: &[(f64, f64)]) -> f64 {
    let n = pairs.len() as f64;
    let (mx, mv) = pairs
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, v)| (a + x / n, b + v / n));
    let cov = pairs.iter().map(|(x, v)| (x - mx) * (v - mv)).sum::<f64>();
    let var = pairs.iter().map(|(x, _)| (x - mx).powi(2)).sum::<f64>();
    cov / var
}

/// The rung-0 law over 8 seeds: Var x of positions every 100 steps, Var v / lr of velocities
/// every 20, the regression slope of v on x of the pairs every 20 with its standard error
/// (the spread of the 8 seeds' slopes over sqrt(8)), and the swap rate.
fn rung0_law(name: &str, chains: usize) -> (f64, f64, (f64, f64), f64) {
    let (mut xs, mut vs, mut pairs, mut swaps) = (Vec::new(), Vec::new(), Vec::new(), 0.0);
    let mut seed_slopes = Vec::new();
    for seed in 1..=8 {
        let from = pairs.len();
        let mut s = sampler(name, chains, seed);
        for _ in 0..5000 {
            s.step(&()).unwrap();
        }
        for k in 0..200_000 {
            s.step(&()).unwrap();
            if k % 20 == 0 {
                let (x, v) = rung0(&s);
                vs.push(v);
                pairs.push((x, v));
                if k % 100 == 0 {
                    xs.push(x);
                }
            }
        }
        seed_slopes.push(slope(&pairs[from..]));
        let r = s.as_replica().unwrap();
        swaps += r.stats().total_accepts() as f64 / 205_000.0 / 8.0;
    }
    let se = (variance(&seed_slopes) / 8.0).sqrt();
    (
        variance(&xs),
        variance(&vs) / LR,
        (slope(&pairs), se),
        swaps,
    )
}

#[test]
fn resghmc_leaves_rung_0_with_the_exact_sghmc_law() {
    // The adjacent pair (tau 1, 10) and three rungs (1, 3, 10) under the DEO scheme.
    for chains in [2, 3] {
        let (var_x, var_v, (lag, se), swaps) = rung0_law("resghmc", chains);
        println!(
            "reSGHMC x {chains}: rung-0 Var x {var_x:.4} (exact 1.0026), Var v / lr {var_v:.4}, \
             Cov(x, v) / Var x {lag:.6} (se {se:.1e}; lr / (1 + mu) = {LAG:.6}), {swaps:.3} \
             swaps/step"
        );
        assert!(swaps > 0.1, "the rungs must swap often: {swaps}");
        assert!((var_x - 1.0026).abs() < 0.06, "{chains} rungs: {var_x}");
        assert!((var_v - 1.0554).abs() < 0.032, "{chains} rungs: {var_v}");
        assert!(
            (lag - LAG).abs() < 4.5 * se,
            "{chains} rungs: {lag} (se {se})"
        );
    }
}

#[test]
fn deo_msgd_keeps_its_velocity_on_rung_0() {
    let (_, var_v, _, swaps) = rung0_law("deo-msgd", 3);
    println!("DEO-mSGD: rung-0 Var v / lr {var_v:.4} (stationary 1.0554), {swaps:.3} swaps/step");
    assert!(swaps > 0.05, "the ladder must swap: {swaps}");
    // Before: 0.593 (velocities from the SGD rungs). The swapped-in positions' smaller
    // gradients leave it below the stationary value; it must not exceed it.
    assert!((0.85..1.06).contains(&var_v), "{var_v}");
}

/// One step of replica exchange, computed by hand to the last bit: momentum SGD (no noise) on
/// `U = x^2 / 2`, rungs at lr 0.01 and 0.02, replica 0 at `x = 2` on rung 0 and replica 1 at
/// `x = 0.5` on rung 1 with velocities 0.03 and -0.05. The swap is certain
/// (`(1 - 1/10) (2 - 0.125) > 0`), so each replica takes the other rung's velocity shifted to
/// its own position by that rung's lag `c_r = lr_r / (1 + mu)`: `v - c_r g` of each rung is
/// carried across the swap. Then each moves with its new rung's lr. An unshifted swap misses
/// by `mu c 1.5` (1.4e-2); the lag of the other rung misses by `mu 1.5 (0.02 - 0.01) / 1.9`
/// (7.1e-3).
#[test]
fn a_swap_carries_each_rungs_velocity_residual_exactly() {
    use sgmcmc::samplers::kernel::Kernel;
    use sgmcmc::samplers::sampler::ReplicaExchange;
    let mu = 0.9;
    let lrs = [0.01, 0.02];
    let target = by_name("normal")
        .unwrap()
        .with_noise(NoiseModel::EXACT)
        .unwrap();
    let ens = HostEnsemble::new(target, &[vec![2.0], vec![0.5]], 1).unwrap();
    let config = common::two_rungs(Kernel::Momentum { mu }, lrs);
    let mut s = ReplicaExchange::new(config, ens, 1).unwrap();
    // Velocities 0.03 and -0.05 to start from (a fresh host ensemble sizes its state at the
    // first move, so a swap on step 0 of a fresh run has no velocity to carry).
    let (va, vb) = (0.03, -0.05);
    let mut saved = s.state().unwrap();
    let EnsembleState::Host { state, slots, .. } = &mut saved.ensemble else {
        unreachable!()
    };
    (*state, *slots) = (vec![va, vb], 1);
    s.restore(saved).unwrap();
    s.step(&()).unwrap();
    assert_eq!(s.report().rungs, vec![1, 0], "the swap must be accepted");
    let (g0, g1) = (2.0f64, 0.5f64);
    let lag = |lr: f64| lr / (1.0 + mu);
    // Replica 0 now on rung 1, replica 1 on rung 0.
    let v0 = mu * (vb + lag(lrs[1]) * (g0 - g1)) - lrs[1] * g0;
    let v1 = mu * (va - lag(lrs[0]) * (g0 - g1)) - lrs[0] * g1;
    let EnsembleState::Host { state, .. } = s.state().unwrap().ensemble else {
        unreachable!()
    };
    let x = [s.ensemble().chain(0)[0], s.ensemble().chain(1)[0]];
    for (got, want) in [
        (state[0], v0),
        (state[1], v1),
        (x[0], 2.0 + v0),
        (x[1], 0.5 + v1),
    ] {
        assert!(
            (got - want).abs() <= 1e-15 * want.abs().max(1.0),
            "{got} vs {want}"
        );
    }
}
