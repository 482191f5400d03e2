//! The trace observer records every target chain's kept draws, resumes exactly, and its
//! diagnostics describe the chains: on `N(0, 1)` the MCSEs cover the exact error of the mean
//! and of the standard deviation.

use std::path::PathBuf;

use sgmcmc_engine::observers::Trace;
use sgmcmc_engine::{Checkpoint, Checkpoints, Kept, Observer, Repeat, Run};
use sgmcmc_samplers::diagnostics::Convergence;
use sgmcmc_samplers::ensemble::{HostEnsemble, HostPoints};
use sgmcmc_samplers::registry::{AnySampler, BuildContext, SamplerSettings};
use sgmcmc_testfunctions::{NoiseModel, by_name};

/// `chains` (at most 3) chains of sampler `name` on `U(x) = x^2 / 2 + ln(2 pi) / 2` with exact
/// gradients, lr 0.1.
fn sampler(name: &str, chains: usize, steps: u64) -> AnySampler<HostEnsemble> {
    let target = by_name("normal")
        .unwrap()
        .with_noise(NoiseModel::EXACT)
        .unwrap();
    let starts = [vec![-1.0], vec![0.0], vec![1.0]];
    let ens = HostEnsemble::new(target, &starts[..chains], 3).unwrap();
    SamplerSettings {
        lr: 0.1,
        ..SamplerSettings::named(name)
    }
    .spec(&BuildContext::steps(steps).chains(chains))
    .unwrap()
    .build(ens, 3)
    .unwrap()
}

/// CSGLD with 2 chains on the same target: 40 bins of 0.25 from 0.9, lr 0.05.
fn csgld(steps: u64) -> AnySampler<HostEnsemble> {
    let mut s = SamplerSettings {
        lr: 0.05,
        ..SamplerSettings::named("csgld")
    };
    s.contour.u_min = Some(0.9);
    s.contour.du = 0.25;
    s.contour.bins = 40;
    let target = by_name("normal")
        .unwrap()
        .with_noise(NoiseModel::EXACT)
        .unwrap();
    let ens = HostEnsemble::new(target, &[vec![-1.0], vec![1.0]], 4).unwrap();
    s.spec(&BuildContext::steps(steps).chains(2))
        .unwrap()
        .build(ens, 4)
        .unwrap()
}

fn position(kept: &Kept<HostPoints>, c: usize) -> Result<Vec<f64>, String> {
    Ok(vec![kept.points.chain(kept.index(c))[0]])
}

type Position = fn(&Kept<HostPoints>, usize) -> Result<Vec<f64>, String>;

/// The trace of the position over `steps` steps of `s`, every 10th after the first 1000.
fn thinned_trace(s: &mut AnySampler<HostEnsemble>, steps: u64) -> Trace<Position> {
    let mut trace = Trace::new(&["x"], position as Position);
    Run::steps(steps)
        .burn_in(1000)
        .thin(10)
        .observe(&mut trace)
        .run(s, &mut Repeat(()))
        .unwrap();
    trace
}

#[test]
fn a_trace_holds_every_chains_draws_and_its_mcse_covers_the_exact_error() {
    let steps = 40_000;
    let mut s = sampler("sgld", 3, steps);
    let mut trace = Trace::new(&["x"], position);
    Run::steps(steps)
        .burn_in(1000)
        .thin(5)
        .observe(&mut trace)
        .run(&mut s, &mut Repeat(()))
        .unwrap();
    let summary = trace.summary();
    assert_eq!((summary.chains, summary.draws), (3, 7800));
    assert!(trace.steps().iter().all(|c| c[0] == 1000 && c[1] == 1005));
    // The energy is that of the traced point.
    let c0 = (2.0 * std::f64::consts::PI).ln() / 2.0;
    let (x, u) = (trace.draws("x").unwrap(), trace.draws("energy").unwrap());
    for (xc, uc) in x.iter().zip(&u) {
        for (x, u) in xc.iter().zip(uc) {
            assert!((u - (x * x / 2.0 + c0)).abs() < 1e-12);
        }
    }
    assert_eq!(summary.quantities["x"], Convergence::of(&x));
    assert_eq!(summary.pareto_k_hat, None, "SGLD's weights are all 1");
    // SGLD's exact stationary law at lr h on N(0, 1): x' = (1 - h) x + sqrt(2h) xi, so N(0,
    // 2h / (1 - (1 - h)^2)) = N(0, 1.0526). The errors of the chains' mean and standard
    // deviation lie within 4 of their MCSEs (a 4-sigma bound: fixed seeds, 6e-5 of failing
    // by chance with another seed).
    let d = summary.quantities["x"];
    let all: Vec<f64> = x.concat();
    let n = all.len() as f64;
    let mean = all.iter().sum::<f64>() / n;
    let sd = (all.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let exact_sd = (0.2_f64 / (1.0 - 0.81)).sqrt();
    assert!(mean.abs() < 4.0 * d.mcse_mean, "{mean} vs {}", d.mcse_mean);
    assert!(
        (sd - exact_sd).abs() < 4.0 * d.mcse_sd,
        "{sd} vs {}",
        d.mcse_sd
    );
    assert!(d.rhat < 1.01 && d.ess_bulk > 1000.0, "{d:?}");
    // A part joins another trace (as on rank 0 after a gather) to the same summary; a part of
    // another number of functionals is refused.
    let mut joined = Trace::new(&["x"], position);
    joined.join(trace.part()).unwrap();
    assert_eq!(joined.summary(), summary);
    let mut energies = Trace::energies();
    assert!(energies.join(trace.part()).is_err());
}

#[test]
fn a_contour_trace_reports_the_weights_k_hat_and_resumes_exactly() {
    let dir = std::env::temp_dir().join(format!("sgmcmc-engine-{}-trace", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path: PathBuf = dir.join("checkpoint.cbor");
    let steps = 6000;
    let contour = || csgld(steps);
    let run = |stop: Option<u64>, resume: Option<Checkpoint>| {
        let mut s = contour();
        let mut trace = Trace::new(&["x"], position);
        let mut r = Run::steps(steps)
            .burn_in(100)
            .thin(3)
            .observe(&mut trace)
            .checkpoints(Checkpoints::new(path.clone(), 0));
        if let Some(n) = stop {
            r = r.stop_after(n);
        }
        if let Some(c) = resume {
            r = r.resume(c);
        }
        r.run(&mut s, &mut Repeat(())).unwrap();
        (trace.summary(), trace.draws("log_weight").unwrap())
    };
    let (whole, weights) = run(None, None);
    assert!(weights.iter().flatten().any(|w| *w != weights[0][0]));
    let k = whole.pareto_k_hat.expect("contour weights vary");
    assert!(k.is_finite(), "{k}");
    run(Some(2500), None);
    let (resumed, resumed_weights) = run(None, Some(Checkpoint::read(&path).unwrap()));
    assert_eq!(resumed, whole);
    assert_eq!(resumed_weights, weights);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn replica_exchange_traces_its_rung_0_as_one_chain_and_names_must_match_on_resume() {
    let trace = thinned_trace(&mut sampler("resgld", 2, 3000), 3000);
    let summary = trace.summary();
    // Whichever replica sits on rung 0 at a kept step gives that step's draw: one chain.
    assert_eq!((summary.chains, summary.draws), (1, 200));
    assert!(summary.quantities["x"].rhat.is_nan());
    // A checkpointed trace resumes only into a trace of the same functionals.
    let state = <Trace<_> as Observer<AnySampler<HostEnsemble>>>::save(&trace).unwrap();
    let mut other = Trace::new(&["y"], position);
    let err = <Trace<_> as Observer<AnySampler<HostEnsemble>>>::restore(&mut other, &state);
    assert!(err.unwrap_err().to_string().contains("functionals"));
}

/// The `(chain, draw)` values of an `<f8` / `<i8` Zarr array written by `write_zarr`, after
/// checking its metadata.
fn zarr_values(store: &std::path::Path, array: &str, dtype: &str, shape: [usize; 2]) -> Vec<f64> {
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(store.join(array).join(".zarray")).unwrap()).unwrap();
    assert_eq!(meta["dtype"], dtype, "{array}");
    assert_eq!(meta["shape"], serde_json::json!(shape), "{array}");
    assert_eq!(meta["chunks"], meta["shape"], "{array}");
    assert!(meta["compressor"].is_null() && meta["fill_value"].is_null());
    let dims: serde_json::Value =
        serde_json::from_slice(&std::fs::read(store.join(array).join(".zattrs")).unwrap()).unwrap();
    assert_eq!(
        dims["_ARRAY_DIMENSIONS"],
        serde_json::json!(["chain", "draw"])
    );
    let bytes = std::fs::read(store.join(array).join("0.0")).unwrap();
    bytes
        .chunks_exact(8)
        .map(|b| {
            let b: [u8; 8] = b.try_into().unwrap();
            if dtype == "<i8" {
                i64::from_le_bytes(b) as f64
            } else {
                f64::from_le_bytes(b)
            }
        })
        .collect()
}

#[test]
fn a_trace_written_as_zarr_holds_its_draws_in_arviz_groups() {
    let trace = thinned_trace(&mut csgld(2000), 2000);
    let dir = std::env::temp_dir().join(format!("sgmcmc-trace-zarr-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store = dir.join("trace.zarr");
    // Written twice: the second store replaces the first.
    trace.write_zarr(&store).unwrap();
    trace.write_zarr(&store).unwrap();
    let (c, d) = (2, 100);
    let flat = |q: &str| trace.draws(q).unwrap().concat();
    let x = zarr_values(&store, "posterior/x", "<f8", [c, d]);
    assert_eq!(x, flat("x"));
    let lp = zarr_values(&store, "sample_stats/lp", "<f8", [c, d]);
    let minus_u: Vec<f64> = flat("energy").iter().map(|u| -u).collect();
    assert_eq!(lp, minus_u);
    let w = zarr_values(&store, "sample_stats/log_weight", "<f8", [c, d]);
    assert_eq!(w, flat("log_weight"));
    assert!(w.windows(2).any(|p| p[0] != p[1]), "csgld's weights vary");
    let steps_of = zarr_values(&store, "sample_stats/step", "<i8", [c, d]);
    assert_eq!(steps_of[..2], [1000.0, 1010.0]);
    // Every metadata document, consolidated at the root as xarray reads it first.
    let consolidated: serde_json::Value =
        serde_json::from_slice(&std::fs::read(store.join(".zmetadata")).unwrap()).unwrap();
    let meta = &consolidated["metadata"];
    for key in [
        ".zgroup",
        "posterior/.zgroup",
        "posterior/chain/.zarray",
        "sample_stats/lp/.zattrs",
    ] {
        assert!(meta.get(key).is_some(), "{key}");
    }
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, vec![std::ffi::OsString::from("trace.zarr")]);
    // Names that cannot be variables, and an empty trace, are refused.
    let mut bad = Trace::new(&["chain"], position);
    let e = bad.write_zarr(&store).unwrap_err().to_string();
    assert!(e.contains("without draws"), "{e}");
    let mut s = sampler("sgld", 1, 20);
    Run::steps(20)
        .observe(&mut bad)
        .run(&mut s, &mut Repeat(()))
        .unwrap();
    let e = bad.write_zarr(&store).unwrap_err().to_string();
    assert!(e.contains("`chain`"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
