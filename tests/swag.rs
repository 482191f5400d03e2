//! SWAG's moments on a quadratic loss, against the exact stationary law of the SGD iterates it
//! is fitted to.
//!
//! SGD with step `eta` on `U(theta) = sum_i a_i theta_i^2 / 2` with gradient noise `sigma xi`,
//! `theta <- (1 - eta a_i) theta - eta sigma xi`, is an AR(1) chain per coordinate with the
//! stationary law `N(0, v_i)`, `v_i = eta sigma^2 / (a_i (2 - eta a_i))`. SWAG fitted to
//! every 10th iterate (T = 20,000 after 2,000 steps of burn-in) must recover mean 0 and
//! `Sigma_diag = v`; its draws must have the mean and the variance
//! `(Sigma_diag + (D D^T)_ii / (K - 1)) / 2` of Maddox et al.'s Algorithm 1.
//!
//! Tolerances are 4.5 standard errors. For the fit, the thinned iterates have lag-one
//! correlation `rho_i = (1 - eta a_i)^10` (0.60, 0.11, 0.001), so the variance estimate has
//! standard error `v sqrt(2 (1 + rho^2) / (T (1 - rho^2)))` (1.5% of `v` at the slowest
//! coordinate) and the mean `sqrt(v (1 + rho) / (T (1 - rho)))`. For the draws (20,000
//! independent Gaussians), `var sqrt(2 / 20000)` and `sqrt(var / 20000)`.

use burn::module::{Module, Param};
use burn::tensor::{Device, Tensor};
use sgmcmc::samplers::rng::ChainRng;
use sgmcmc::samplers::swag::{CycleSwag, Swag};

const A: [f64; 3] = [1.0, 4.0, 10.0];
const ETA: f64 = 0.05;
const SIGMA: f64 = 1.0;
const T: usize = 20_000;

fn exact_variance(a: f64) -> f64 {
    ETA * SIGMA * SIGMA / (a * (2.0 - ETA * a))
}

fn fit() -> Swag {
    let mut rng = ChainRng::new(7, 0);
    let mut theta = [0.0f64; 3];
    let mut swag = Swag::new(3, 20).unwrap();
    for step in 0..2_000 + 10 * T {
        for (x, a) in theta.iter_mut().zip(A) {
            *x -= ETA * (a * *x + SIGMA * rng.normal());
        }
        if step >= 2_000 && (step - 2_000) % 10 == 9 {
            let f: Vec<f32> = theta.iter().map(|&x| x as f32).collect();
            swag.add(&f).unwrap();
        }
    }
    swag
}

#[test]
fn swag_fit_recovers_the_exact_stationary_moments_of_sgd() {
    let swag = fit();
    assert_eq!(swag.count(), T as u64);
    let diag = swag.diag_variance();
    for (i, a) in A.into_iter().enumerate() {
        let v = exact_variance(a);
        let rho = (1.0 - ETA * a).powi(10);
        let se_var = v * (2.0 * (1.0 + rho * rho) / (T as f64 * (1.0 - rho * rho))).sqrt();
        let se_mean = (v * (1.0 + rho) / (T as f64 * (1.0 - rho))).sqrt();
        println!(
            "a = {a}: Sigma_diag {:.6} vs exact {v:.6} (se {se_var:.2e}), mean {:.5} (se {se_mean:.1e})",
            diag[i],
            swag.mean()[i]
        );
        assert!((diag[i] - v).abs() < 4.5 * se_var, "coordinate {i}");
        assert!(swag.mean()[i].abs() < 4.5 * se_mean, "coordinate {i}");
    }
}

#[test]
fn swag_draws_have_the_covariance_of_algorithm_one() {
    let swag = fit();
    let want = swag.sample_variance();
    let mut rng = ChainRng::new(11, 0);
    let n = 20_000;
    let (mut sum, mut sq) = ([0.0f64; 3], [0.0f64; 3]);
    for _ in 0..n {
        let d = swag.sample(&mut rng).unwrap();
        for i in 0..3 {
            let x = f64::from(d[i]) - swag.mean()[i];
            sum[i] += x;
            sq[i] += x * x;
        }
    }
    for i in 0..3 {
        let mean = sum[i] / n as f64;
        let var = sq[i] / n as f64 - mean * mean;
        println!(
            "coordinate {i}: draw variance {var:.6} vs (Sigma_diag + D D^T/(K-1))/2 {:.6}",
            want[i]
        );
        assert!((var - want[i]).abs() < 4.5 * want[i] * (2.0 / n as f64).sqrt());
        assert!(mean.abs() < 4.5 * (want[i] / n as f64).sqrt());
    }
}

/// cycSWAG as thesis E.4.4 runs it: momentum SGD (mu 0.9) under cosine cycles whose lr is held
/// in the last 15% of each cycle, SWAG fitted to the held iterates. On `U = x^2 / 2` with
/// gradient noise of sd 1 the fitted variance is the stationary variance of momentum SGD at
/// the held lr `eta = lr_0 (cos(0.85 pi) + 1) / 2 = 0.02725` (lr_0 0.5),
/// `eta s^2 (1 + mu) / ((1 - mu) (2 (1 + mu) - eta)) = 0.13723` (the discrete Lyapunov
/// equation). 200 chains, 2 cycles of 10,000 steps, each chain's fit over the 1,500 held steps
/// of the second cycle (one SWAG coordinate per chain). Tolerance: 4.5 standard errors of the
/// mean over chains, measured from their spread (0.0013 in a NumPy transcription, which gave
/// 0.1381). Without the hold, collecting from 0.7 of the cycle as the images command did,
/// the fit came from lrs falling from 0.21 lr_0 to 0: 0.183 there, over 30 standard errors
/// away, which the test also shows.
#[test]
fn cycswag_fits_the_stationary_variance_of_momentum_sgd_at_the_held_lr() {
    use sgmcmc::samplers::control::Phase;
    use sgmcmc::samplers::ensemble::HostEnsemble;
    use sgmcmc::samplers::registry::{BuildContext, SamplerSettings};
    use sgmcmc::samplers::sampler::Sampler;
    use sgmcmc::testfunctions::{NoiseModel, by_name};

    let fitted = |hold: f64, threshold: f64| -> (f64, f64) {
        let chains = 200;
        let target = by_name("normal")
            .unwrap()
            .with_noise(NoiseModel::gradient(1.0))
            .unwrap();
        let ens = HostEnsemble::new(target, &vec![vec![0.0]; chains], 3).unwrap();
        let mut settings = SamplerSettings {
            lr: 0.5,
            momentum: 0.9,
            ..SamplerSettings::named("cycmsgd")
        };
        settings.cyclical.cycles = 2;
        settings.cyclical.sampling_threshold = threshold;
        settings.cyclical.hold = hold;
        let steps = 20_000;
        let mut s = settings
            .spec(&BuildContext::steps(steps).chains(chains))
            .unwrap()
            .build(ens, 3)
            .unwrap();
        let mut swag = Swag::new(chains, 2).unwrap();
        for k in 0..steps {
            let report = s.step(&()).unwrap();
            if k >= steps / 2 && report.phase == Some(Phase::Sampling) {
                let x: Vec<f32> = s.ensemble().positions().iter().map(|&x| x as f32).collect();
                swag.add(&x).unwrap();
            }
        }
        let v = swag.diag_variance();
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        (mean, sd / n.sqrt())
    };
    let eta = 0.5 * ((0.85 * std::f64::consts::PI).cos() + 1.0) / 2.0;
    let exact = eta * (1.0 + 0.9) / ((1.0 - 0.9) * (2.0 * (1.0 + 0.9) - eta));
    let (held, se) = fitted(0.85, 0.85);
    let (falling, se_falling) = fitted(1.0, 0.7);
    println!(
        "SWAG variance: held lr {held:.4} (se {se:.4}) vs stationary {exact:.4}; \
         no hold from 0.7: {falling:.4} (se {se_falling:.4})"
    );
    assert!((held - exact).abs() < 4.5 * se, "{held} vs {exact}");
    assert!((falling - exact).abs() > 20.0 * se_falling, "{falling}");
}

/// cycSWAG over two chains and two cycles (the second cut short by the run's end): the iterates
/// of each cycle's sampling phase join each chain's fit, and each cycle's end draws from each fit
/// on its own stream (the same draws as from fits made by hand), then the fits restart.
#[test]
fn cycles_fit_their_sampling_iterates_and_draw_from_each_chain() {
    #[derive(Module, Debug)]
    struct Point {
        x: Param<Tensor<1>>,
    }
    let device = Device::flex().autodiff();
    let at = |v: [f32; 2]| Point {
        x: Param::from_tensor(Tensor::from_floats(v, &device).require_grad()),
    };
    let swag = CycleSwag {
        rank: 2,
        every: 2,
        cycle: 6,
        samples: 3,
        seed: 7,
    };
    let fresh = || [Swag::new(2, 2).unwrap(), Swag::new(2, 2).unwrap()];
    let (mut fits, mut by_hand) = (Vec::new(), fresh());
    // Steps 1-3 of each cycle explore, 4-6 sample (iterates at 4 and 6); the run ends at 10,
    // after the second cycle's one iterate (step 10).
    for done in 1..=10u64 {
        let v = done as f32;
        let chains = [at([v, -v]), at([2.0 * v, 0.5])];
        let sampling = (done - 1) % 6 >= 3;
        let last = done == 10;
        let drawn = swag
            .after_step(&mut fits, done, (sampling, last), &chains)
            .unwrap();
        if sampling && done.is_multiple_of(2) {
            by_hand[0].add(&[v, -v]).unwrap();
            by_hand[1].add(&[2.0 * v, 0.5]).unwrap();
        }
        if !(done == 6 || last) {
            assert!(drawn.is_empty(), "draws at step {done}");
            continue;
        }
        // Three draws per chain from its own fit on the stream of (cycle, chain), then the
        // fits restart.
        let cycle = (done - 1) / 6;
        assert!(fits.is_empty());
        let mut want = Vec::new();
        for (p, fit) in by_hand.iter().enumerate() {
            assert_eq!(fit.count(), 2 - cycle);
            let mut rng = ChainRng::new(7 ^ 0x5A6A_6000, cycle * 64 + p as u64);
            want.extend((0..3).map(|_| (p, cycle, fit.sample(&mut rng).unwrap())));
        }
        let got: Vec<_> = drawn
            .into_iter()
            .map(|d| (d.chain, d.cycle, d.theta))
            .collect();
        assert_eq!(got, want);
        by_hand = fresh();
    }
    // A schedule of zero steps is refused, not divided by.
    for bad in [
        CycleSwag { cycle: 0, ..swag },
        CycleSwag { every: 0, ..swag },
    ] {
        assert!(
            bad.after_step(&mut fits, 1, (true, true), &[at([0.0, 0.0])])
                .is_err()
        );
    }
    assert!(
        swag.after_step(&mut fits, 0, (true, true), &[at([0.0, 0.0])])
            .is_err()
    );
}

/// `CycleSwag::reads` picks every step at which `after_step` acts (an iterate for the fits, a
/// cycle's end, the run's end, a schedule it refuses) and no other: at a step it leaves out,
/// `after_step` returns nothing and leaves the fits as they were, so a caller that reads the
/// networks at the picked steps alone gets the fits and draws of one that reads them at all.
#[test]
fn reads_picks_the_steps_after_step_acts_on() {
    #[derive(Module, Debug)]
    struct Point {
        x: Param<Tensor<1>>,
    }
    let device = Device::flex().autodiff();
    let at = |v: f32| {
        [Point {
            x: Param::from_tensor(Tensor::from_floats([v, v * v], &device).require_grad()),
        }]
    };
    // (cycle, steps, steps that read): iterates every 2 steps in a cycle's second half. With
    // cycles of 6 the ends are iterates; with cycles of 5 they are not (steps 5 and 9 draw
    // without adding an iterate), and the run ends mid-cycle.
    for (cycle, steps, want) in [(6, 10, vec![4, 6, 10]), (5, 9, vec![4, 5, 8, 9])] {
        let swag = CycleSwag {
            rank: 2,
            every: 2,
            cycle,
            samples: 2,
            seed: 3,
        };
        let (mut all, mut picked, mut read) = (Vec::new(), Vec::new(), Vec::new());
        for done in 1..=steps {
            let flags = ((done - 1) % cycle >= cycle / 2, done == steps);
            let chains = at(done as f32);
            let before = all.clone();
            let drawn = swag.after_step(&mut all, done, flags, &chains).unwrap();
            if swag.reads(done, flags) {
                read.push(done);
                let again = swag.after_step(&mut picked, done, flags, &chains).unwrap();
                assert_eq!(again, drawn, "cycle {cycle}, step {done}");
            } else {
                assert!(
                    drawn.is_empty() && all == before,
                    "cycle {cycle}, step {done}"
                );
            }
            assert_eq!(picked, all, "cycle {cycle}, step {done}");
        }
        assert_eq!(read, want, "cycle {cycle}");
    }
    // A schedule `after_step` refuses is read, so the caller meets the refusal.
    let swag = CycleSwag {
        rank: 2,
        every: 2,
        cycle: 5,
        samples: 2,
        seed: 3,
    };
    for (bad, done) in [
        (CycleSwag { every: 0, ..swag }, 1),
        (CycleSwag { cycle: 0, ..swag }, 1),
        (swag, 0),
    ] {
        assert!(bad.reads(done, (false, false)));
        assert!(
            bad.after_step(&mut Vec::new(), done, (false, false), &at(0.0))
                .is_err()
        );
    }
}
