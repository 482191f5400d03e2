//! The toy summary's effective sample sizes: the weighted estimates of a contour sampler have
//! fewer effective samples than the raw samples they average (Kish's factor), and the chains of
//! ICSGLD, which share theta, are counted as one system.

use sgmcmc::apps::toy::report::summarize;
use sgmcmc::apps::toy::{preset, run_toy};
use sgmcmc::samplers::diagnostics::{Coupling, ess, weighted_ess};

#[test]
fn contour_summaries_report_the_weighted_ess_below_the_raw_one() {
    // CSGLD (one chain, 1e6 steps on the 1-D mixture) and ICSGLD x P5 (8e4 steps on the
    // 25-mode target). The importance weights span orders of magnitude: Kish's efficiency is
    // 0.37 and 0.78 (measured), so the weighted ESS is that fraction of the raw one (measured
    // 326 of 884, 71 of 90). ICSGLD's five chains count as one system: the ESS of their
    // chain-averaged trace (the unit test of `weighted_ess` shows what that changes: four
    // copies of one chain count once, not four times). SGLD's samples carry weight 1 and its
    // two ESS agree.
    for (name, coupling) in [
        ("mixture-csgld-quick", Coupling::Independent),
        ("twenty-five-mode-icsgld", Coupling::Shared),
    ] {
        let cfg = preset(name).unwrap();
        let out = run_toy(&cfg, false).unwrap();
        let s = summarize(&cfg, &out).unwrap();
        let n = (s.samples_per_chain * s.chains) as f64;
        println!(
            "{name}: ESS raw {:.0}, weighted {:.0}, Kish {:.0} of {n} samples",
            s.ess_x0, s.weighted_ess_x0, s.kish_ess
        );
        assert_eq!(s.chain_coupling, coupling, "{name}");
        assert!(s.kish_ess < 0.9 * n, "{name}: weights nearly equal");
        assert!(
            (s.weighted_ess_x0 - s.ess_x0 * s.kish_ess / n).abs() < 1e-9 * s.ess_x0,
            "{name}"
        );
        assert!(
            s.weighted_ess_x0 < 0.9 * s.ess_x0,
            "{name}: weighted ESS {} vs raw {}",
            s.weighted_ess_x0,
            s.ess_x0
        );
        let ones: Vec<Vec<f64>> = out.x0.chains.iter().map(|c| vec![1.0; c.len()]).collect();
        let raw = match coupling {
            Coupling::Independent => ess(&out.x0.chains),
            Coupling::Shared => weighted_ess(&out.x0.chains, &ones, Coupling::Shared),
        };
        assert_eq!(s.ess_x0, raw, "{name}");
    }
    let cfg = preset("twenty-five-mode-sgld").unwrap();
    let s = summarize(&cfg, &run_toy(&cfg, false).unwrap()).unwrap();
    let n = (s.samples_per_chain * s.chains) as f64;
    assert_eq!(s.chain_coupling, Coupling::Independent);
    assert_eq!(s.kish_ess, n);
    assert_eq!(s.weighted_ess_x0, s.ess_x0);
}
