//! The 25-mode target at equal gradient budget (thesis E.4.2): ICSGLD x P5 (5 chains x 8e4
//! steps) against SGLD x P5, cycSGLD x T5 and CSGLD x T5 (one chain x 4e5 steps), scored by the
//! L1 error of the 25 importance-weighted mode masses against quadrature.
//!
//! The thesis scores by a KL divergence over 20 repeats; the mode-mass L1 over seeds is a
//! cheaper proxy. Its seed-to-seed sd is 0.035-0.08 depending on the method, and every
//! comparison below is asserted with a margin of 4.5 standard errors of the difference of
//! means (sd / sqrt(seeds) from the seeds themselves).
//!
//! What this budget resolves (20 seeds per method, measured once): ICSGLD 0.212 +- 0.012,
//! SGLD 0.274 +- 0.013, CSGLD 0.256 +- 0.008, cycSGLD 0.381 +- 0.018. At 64 seeds (ICSGLD,
//! SGLD, CSGLD; 12 for cycSGLD) the test resolves the thesis' claim (section 6.4.2: ICSGLD
//! "yields the most accurate approximation"; CSGLD "performs worse than ICSGLD") against every
//! baseline: ICSGLD 0.207 +- 0.006, SGLD 0.269 +- 0.006 (7.3 se behind), CSGLD 0.255 +- 0.005
//! (6.1 se), cycSGLD 0.407 +- 0.021 (9 se); about 30 s here. Two departures from the thesis'
//! ordering of the baselines, not asserted: cycSGLD x T5 scores worse than SGLD x P5 here (the
//! thesis has SGLD x P5 worst), and reSGLD x P5 (rung-0 samples, taus 1..5) is far better than
//! all four (mean L1 about 0.09); it is not run here.

use sgmcmc::apps::toy::{preset, run_toy};
use sgmcmc::testfunctions::{by_name, quadrature};

/// Standard errors of a difference of means required between two methods.
const Z: f64 = 4.5;
/// Seeds of ICSGLD, SGLD and CSGLD.
const ORDER_SEEDS: u64 = 64;

/// Per-seed L1 errors of the weighted and of the raw (unweighted) mode masses.
fn l1_errors(name: &str, seeds: u64, exact: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let l1 = |m: &[f64]| -> f64 { m.iter().zip(exact).map(|(a, b)| (a - b).abs()).sum() };
    (1..=seeds)
        .map(|seed| {
            let mut cfg = preset(name).unwrap();
            cfg.seed = seed;
            let modes = run_toy(&cfg, false).unwrap().modes.unwrap();
            (l1(&modes.point_masses()), l1(&modes.raw_masses()))
        })
        .unzip()
}

/// Mean and standard error of independent values.
fn mean_se(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, (var / n).sqrt())
}

#[test]
fn icsgld_beats_its_raw_samples_and_every_baseline_at_equal_budget() {
    let target = by_name("twenty-five-mode").unwrap();
    let exact = quadrature::mode_masses(target.potential(), 1.0, 1000).unwrap();
    let (ic, ic_raw) = l1_errors("twenty-five-mode-icsgld", ORDER_SEEDS, &exact);
    let (ic_mean, ic_se) = mean_se(&ic);
    // The plausible wrong answer: ICSGLD's samples without their weights (the flattened law),
    // paired seed by seed with the weighted estimate of the same run.
    let gain: Vec<f64> = ic_raw.iter().zip(&ic).map(|(r, w)| r - w).collect();
    let (gain_mean, gain_se) = mean_se(&gain);
    let cyc = mean_se(&l1_errors("twenty-five-mode-cycsgld", 12, &exact).0);
    let others = [
        (
            "SGLD x P5",
            mean_se(&l1_errors("twenty-five-mode-sgld", ORDER_SEEDS, &exact).0),
        ),
        (
            "CSGLD x T5",
            mean_se(&l1_errors("twenty-five-mode-csgld", ORDER_SEEDS, &exact).0),
        ),
    ];
    println!(
        "mean mode-mass L1: ICSGLD x P5 {ic_mean:.3} +- {ic_se:.3} (its raw samples {:.3} \
         higher +- {gain_se:.3}), cycSGLD x T5 {:.3} +- {:.3}, {others:.3?}",
        gain_mean, cyc.0, cyc.1
    );
    assert!(
        gain_mean > Z * gain_se,
        "weights gain {gain_mean} +- {gain_se}"
    );
    let se = |other: f64| (ic_se * ic_se + other * other).sqrt();
    assert!(
        cyc.0 - ic_mean > Z * se(cyc.1),
        "ICSGLD {ic_mean} vs cycSGLD {cyc:?}"
    );
    for (name, (l1, l1_se)) in others {
        assert!(
            l1 - ic_mean > Z * se(l1_se),
            "ICSGLD {ic_mean} not resolved better than {name} {l1} +- {l1_se}"
        );
    }
}
