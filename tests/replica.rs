//! Replica exchange (thesis ch. 2 and 4): corrected swaps on the reSGLD toys, exactness of the
//! swap with exact energies, DEO* against DEO on the 25-mode target, Lemma 5's round-trip time,
//! and bad settings.

use sgmcmc::apps::toy::{ToyConfig, preset, run_toy};
use sgmcmc::samplers::control::swap::{expected_round_trip, optimal_window};
use sgmcmc::samplers::control::{IndexProcess, Ladder, Smoothing, SwapSchedule, SwapScheme};
use sgmcmc::samplers::ensemble::HostEnsemble;
use sgmcmc::samplers::kernel::Kernel;
use sgmcmc::samplers::rng::ChainRng;
use sgmcmc::samplers::sampler::{ReplicaConfig, ReplicaExchange, SwapRule};
use sgmcmc::testfunctions::{Noise, by_name};

/// Weighted mode masses of the rung-0 samples of a toy run, and the run's swap rate.
fn masses(cfg: &ToyConfig) -> (Vec<f64>, f64) {
    let out = run_toy(cfg, false).unwrap();
    let rate = out.replica.as_ref().map_or(0.0, |r| r.swap_rates[0]);
    (out.modes.unwrap().point_masses(), rate)
}

/// Mean over seeds 1..=n of the first mode's mass, and its standard error.
fn first_mode(name: &str, n: u64, edit: impl Fn(&mut ToyConfig)) -> (f64, f64) {
    let v: Vec<f64> = (1..=n)
        .map(|seed| {
            let mut cfg = preset(name).unwrap();
            cfg.seed = seed;
            edit(&mut cfg);
            masses(&cfg).0[0]
        })
        .collect();
    let m = v.iter().sum::<f64>() / n as f64;
    let sd = (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
    (m, sd / (n as f64).sqrt())
}

#[test]
fn corrected_swaps_recover_the_mode_masses_and_naive_swaps_do_not() {
    // Exact mass of the left mode: 0.4. Over 8 seeds of 1e5 steps the seed-to-seed sd is about
    // 0.02 (standard error 0.007): corrected means must lie within 4 standard errors of 0.4, naive
    // ones measurably above (the naive swap overweights the hot chain's flatter law).
    for t in ["resgld-1", "resgld-2"] {
        let (c, c_se) = first_mode(t, 8, |_| {});
        let (n, n_se) = first_mode(&format!("{t}-naive"), 8, |_| {});
        println!("{t}: corrected {c:.3} +- {c_se:.3}, naive {n:.3} +- {n_se:.3} (exact 0.4)");
        assert!(
            (c - 0.4).abs() < 4.0 * c_se.max(0.005),
            "{t} corrected {c} +- {c_se}"
        );
        assert!(n - 0.4 > 4.0 * n_se.max(0.005), "{t} naive {n} +- {n_se}");
    }
    // SGLD alone at tau = 1 stays in the mode it starts near.
    let (m, _) = masses(&preset("resgld-1-sgld").unwrap());
    assert!(m[0] < 0.02 || m[0] > 0.98, "SGLD mode masses {m:?}");
}

#[test]
fn swap_rates_grow_with_the_correction_factor() {
    let paper = [
        ("resgld-3-f2", 0.004),
        ("resgld-3-f4", 0.071),
        ("resgld-3-naive", 0.46),
    ];
    let mut last = masses(&preset("resgld-3").unwrap()).1;
    println!("F = 1: swap rate {last:.4}");
    for (name, reported) in paper {
        let rate = masses(&preset(name).unwrap()).1;
        println!("{name}: swap rate {rate:.4} (paper {reported})");
        assert!(rate > last, "{name}: {rate} <= {last}");
        last = rate;
    }
}

#[test]
fn exact_energies_and_f_1_sample_the_tempered_pair_exactly() {
    // Two chains at tau (1, 10) on 0.4 N(-3, 0.7^2) + 0.6 N(2, 0.5^2) without any noise: the
    // swap is the exact Metropolis exchange, so rung 0 samples pi. lr 0.005 keeps the
    // discretisation bias of the mode masses below 0.005; 8 seeds x 4e5 steps give a standard
    // error of about 0.004 on the left mode's mass.
    let (m, se) = first_mode("resgld-1", 8, |c| {
        c.energy_noise = Some(Noise::NONE);
        c.sampler.lr = 0.005;
        c.iters = 400_000;
    });
    println!("exact energies: left mode {m:.4} +- {se:.4} (exact 0.4)");
    assert!((m - 0.4).abs() < 4.0 * se.max(0.003), "{m} +- {se}");
}

#[test]
fn deo_star_round_trips_beat_deo() {
    let run = |name: &str| run_toy(&preset(name).unwrap(), false).unwrap();
    let star = run("deo-sgd-25-mode");
    let deo = run("deo-sgd-25-mode-w1");
    let (rs, rd) = (star.replica.clone().unwrap(), deo.replica.clone().unwrap());
    println!(
        "round trips per 1000 steps: W* = {} -> {:.1}, W = 1 -> {:.1} (paper ~45 vs ~18)",
        rs.window, rs.round_trips_per_1000, rd.round_trips_per_1000
    );
    assert_eq!(rs.window, 8);
    assert!(rs.round_trips_per_1000 >= 2.0 * rd.round_trips_per_1000);
    // Test pass rates over the second half converge to S = 0.4 (W*); the buffer settles.
    let trace = &star.replica_trace;
    let (mid, last) = (&trace[trace.len() / 2], &trace[trace.len() - 1]);
    let p = 16;
    let passes = 1 + 2 * p + 1 + (p - 1);
    for r in 0..p - 1 {
        let rate = (last[passes + r] - mid[passes + r]) / (last[0] - mid[0]);
        assert!((rate - 0.4).abs() < 0.05, "pair {r}: pass rate {rate}");
    }
    let c_col = 1 + 2 * p;
    let quarter = &trace[3 * trace.len() / 4];
    assert!(
        (last[c_col] - quarter[c_col]).abs() < 0.15,
        "buffer still moving"
    );
    // Rung-0 samples are closer to the exact mode masses with W*.
    let exact =
        sgmcmc::testfunctions::quadrature::mode_masses(star.target.potential(), 1.0, 1000).unwrap();
    let l1 = |o: &sgmcmc::apps::toy::ToyOutcome| -> f64 {
        let m = o.modes.as_ref().unwrap().point_masses();
        m.iter().zip(&exact).map(|(a, b)| (a - b).abs()).sum()
    };
    println!("mode-mass L1: W* {:.3}, W = 1 {:.3}", l1(&star), l1(&deo));
    assert!(l1(&star) < l1(&deo));
}

#[test]
fn round_trip_times_match_lemma_5() {
    // A synthetic ladder: every scheduled attempt is rejected with probability r, independent
    // of everything. Over K steps the P replicas complete R round trips, so the mean round-trip
    // time is P K / R. The relative Monte Carlo error of R (a few thousand trips) is about
    // 1/sqrt(R) < 3%; the bound is 10%.
    let mut rng = ChainRng::new(11, 0);
    for (p, w, r) in [(4usize, 1u64, 0.3), (8, 1, 0.5), (8, 3, 0.5), (16, 8, 0.6)] {
        let mut sched = SwapSchedule::new(SwapScheme::Window(w), p).unwrap();
        let mut ix = IndexProcess::new(p);
        let mut pairs = Vec::new();
        let steps = 400_000u64;
        for k in 0..steps {
            sched.pairs(k, &mut rng, &mut pairs);
            for &pair in &pairs {
                if rng.uniform() >= r {
                    ix.swap(pair);
                    sched.close(pair);
                }
            }
        }
        let simulated = (p as f64) * steps as f64 / ix.total_round_trips() as f64;
        let theory = expected_round_trip(w, &vec![r; p - 1]);
        println!("P {p} W {w} r {r}: E[T] simulated {simulated:.1}, Lemma 5 {theory:.1}");
        assert!(
            (simulated / theory - 1.0).abs() < 0.1,
            "{simulated} vs {theory}"
        );
    }
}

#[test]
fn bad_settings_are_clear_errors() {
    let target = by_name("mixture-resgld-1").unwrap();
    let metropolis = |f: f64| SwapRule::Metropolis {
        correction: f,
        initial_variance: 1.0,
        smoothing: Smoothing::RunningMean,
        cooling: 0,
    };
    let cfg = |temps: Vec<f64>, scheme, rule| ReplicaConfig {
        kernel: Kernel::Sgld,
        ladder: Ladder {
            lrs: vec![0.01; temps.len()],
            temperatures: temps,
        },
        scheme,
        rule,
        refresh: None,
        lr_scale: None,
    };
    let deterministic = |s: f64| SwapRule::Deterministic {
        buffer: 1.0,
        target_rate: s,
        adapt: None,
    };
    let cases = [
        (
            cfg(vec![10.0, 1.0], SwapScheme::Adjacent, metropolis(1.0)),
            "temperatures",
        ),
        (
            cfg(vec![1.0], SwapScheme::Adjacent, metropolis(1.0)),
            "P >= 2",
        ),
        (
            cfg(vec![1.0, 10.0], SwapScheme::Adjacent, metropolis(0.5)),
            "F must be",
        ),
        (
            cfg(vec![1.0, 10.0], SwapScheme::Adjacent, metropolis(f64::NAN)),
            "F must be",
        ),
        (
            cfg(vec![1.0, 10.0], SwapScheme::Window(0), metropolis(1.0)),
            "window",
        ),
        (
            cfg(
                vec![1.0, 10.0],
                SwapScheme::Optimal { target_rate: 1.5 },
                metropolis(1.0),
            ),
            "target_rate",
        ),
    ];
    for (c, expect) in cases {
        let n = c.ladder.len().max(1);
        let ens = HostEnsemble::new(target.clone(), &vec![vec![0.0]; n], 1).unwrap();
        let err = ReplicaExchange::new(c, ens, 1)
            .err()
            .expect("must fail")
            .to_string();
        assert!(err.contains(expect), "{err} (expected {expect})");
    }
    let mut c = cfg(vec![1.0, 0.0], SwapScheme::Adjacent, deterministic(0.0));
    c.ladder.lrs = vec![0.01, 0.1];
    let ens = HostEnsemble::new(target, &[vec![0.0], vec![0.0]], 1).unwrap();
    let err = ReplicaExchange::new(c, ens, 1).err().unwrap().to_string();
    assert!(err.contains("target_rate"), "{err}");
    assert!(optimal_window(16, 0.0).is_err());
}
