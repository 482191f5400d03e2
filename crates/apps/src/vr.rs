//! `sgmcmc vr-resgld`: variance-reduced replica exchange on the thesis' data posterior
//! (sec. 3.5.1, Fig. 3.2): VR-reSGLD against reSGLD and SGLD, and the variance of the plain and
//! control-variate energy estimators for several snapshot periods `m`.
//!
//! The likelihood is symmetric under `beta -> 20 - beta`, so the posterior has modes near -5
//! and 25 separated by a barrier of about 3.8 nats per data point: no chain crosses it, at any
//! of the temperatures used. The rung-0 chain visits both modes only through swaps, which needs
//! the two replicas in different basins: the low replica starts at 30 (as the thesis' SGLD run)
//! and the high one at -10. The exact rung-0 mode masses are then those of the pair law with one
//! replica per basin ([`exact_low_mode_mass`]).
//!
//! Every run is the library's [`VarianceReduced`] sampler: one minibatch `B` (n indices with
//! replacement) per step for both chains, snapshots every `m` steps (VR-reSGLD) or plain
//! minibatch energies (reSGLD), and `sigma2_hat` refreshed every 100 steps on average from 10
//! fresh minibatches on which both chains' swap energies are paired. Until the first refresh
//! `sigma2_hat = 0` (naive swaps).

use std::time::Instant;

use serde::{Deserialize, Serialize};
use sgmcmc_engine::observers::AfterStep;
use sgmcmc_engine::{FnBatches, Progress, Run};
use sgmcmc_samplers::control::{Ladder, Smoothing, SwapScheme};
use sgmcmc_samplers::density::data_mixture::MixtureData;
use sgmcmc_samplers::diagnostics::{Convergence, ess};
use sgmcmc_samplers::ensemble::HostEnsemble;
use sgmcmc_samplers::kernel::Kernel;
use sgmcmc_samplers::rng::ChainRng;
use sgmcmc_samplers::sampler::{
    self, ControlSettings, ReplicaConfig, Sampler, StepReport, SwapRule, VarianceReduced, VrRefresh,
};
use sgmcmc_testfunctions::data_mixture::exact_low_mode_mass;

use crate::error::AppError;

/// Settings of one run of the study, the sampler's [`sampler::VrConfig`] among them (the
/// study's base settings in its `config.toml`: the study sets `period` and `correction` per
/// row).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VrStudyConfig {
    /// Data points `N`.
    pub n_data: usize,
    /// Minibatch size `n`.
    pub batch: usize,
    /// Learning rate of both chains.
    pub lr: f64,
    /// Temperatures `(tau_1, tau_2)`.
    pub temperatures: (f64, f64),
    /// Correction factor `F`.
    pub correction: f64,
    /// Snapshot period `m`; `None`: plain reSGLD.
    pub period: Option<u64>,
    /// Steps.
    pub iters: u64,
    /// Seed (data use seed 1983 whatever this is).
    pub seed: u64,
}

impl VrStudyConfig {
    /// The thesis' setting: N = 1e5, tau (10, 1000), lr 1e-7, m = 40, F = 1 (n = 1000, not
    /// stated in the thesis, from the authors' C code).
    pub fn thesis() -> Self {
        Self {
            n_data: 100_000,
            batch: 1000,
            lr: 1e-7,
            temperatures: (10.0, 1000.0),
            correction: 1.0,
            period: Some(40),
            iters: 20_000,
            seed: 1,
        }
    }
}

/// What a run measured.
#[derive(Clone, Debug, Serialize)]
pub struct VrOutcome {
    /// Rung-0 beta every 10 steps.
    pub trace: Vec<f64>,
    /// Accepted swaps.
    pub swaps: u64,
    /// Mean variance of one chain's plain minibatch energy `L(B | x)`.
    pub plain_variance: f64,
    /// Mean variance of one chain's swap energy (control variate for VR, else plain).
    pub vr_variance: f64,
    /// Mean of half the variance of the plain energies' paired difference on shared batches.
    pub plain_pair_variance: f64,
    /// Mean of half the variance of the swap energies' paired difference: the `sigma2_hat`
    /// the correction uses.
    pub used_pair_variance: f64,
    /// Fraction of rung-0 samples in the mode near -5.
    pub low_mode_mass: f64,
    /// Its Monte Carlo standard error, `sqrt(p (1 - p) / ESS)` of the indicator trace.
    pub low_mode_se: f64,
    /// Wall time.
    pub wall_seconds: f64,
}

/// The data the runs share (seeded independently of the run seed).
pub fn data(n: usize) -> Result<MixtureData, AppError> {
    Ok(MixtureData::thesis(n, 1983)?)
}

/// The study's sampler: VR-reSGLD over two host chains of the mixture.
pub type VrSampler = VarianceReduced<HostEnsemble<MixtureData>>;

/// Mean steps between variance refreshes and minibatches per refresh.
const REFRESH: VrRefresh = VrRefresh {
    every: 100,
    draws: 10,
};

/// The sampler of one run.
pub fn sampler(cfg: &VrStudyConfig, data: &MixtureData) -> Result<VrSampler, AppError> {
    let (t1, t2) = cfg.temperatures;
    let replica = ReplicaConfig {
        kernel: Kernel::Sgld,
        ladder: Ladder::tempered(vec![t1, t2], vec![cfg.lr, cfg.lr])?,
        scheme: SwapScheme::Adjacent,
        rule: SwapRule::Metropolis {
            correction: cfg.correction,
            initial_variance: 0.0,
            smoothing: Smoothing::RunningMean,
            cooling: 0,
        },
        refresh: None,
        lr_scale: None,
    };
    let settings = sampler::VrConfig {
        replica,
        control: cfg.period.map(|period| ControlSettings {
            period,
            coefficient: -1.0,
            adapt: None,
        }),
        refresh: Some(REFRESH),
    };
    let ens = HostEnsemble::new(data.clone(), &[vec![30.0], vec![-10.0]], cfg.seed)?;
    let (draw_data, n, seed) = (data.clone(), cfg.batch, cfg.seed);
    let batches = Box::new(move |k: u64, j: usize| {
        draw_data.minibatch(n, &mut ChainRng::new(seed ^ 0x5EED_F00D, k * 64 + j as u64))
    });
    Ok(VarianceReduced::new(settings, ens, batches, cfg.seed)?)
}

/// Runs VR-reSGLD (or reSGLD without a period) on `data`.
pub fn run(cfg: &VrStudyConfig, data: &MixtureData) -> Result<VrOutcome, AppError> {
    let mut vr = sampler(cfg, data)?;
    let mut rng = ChainRng::new(cfg.seed, 7);
    let (mut trace, mut indicator) = (Vec::new(), Vec::with_capacity(cfg.iters as usize));
    let mut batches = FnBatches(|_| Ok(data.minibatch(cfg.batch, &mut rng)));
    let mut watch = AfterStep(|at: &Progress, vr: &VrSampler, report: &StepReport| {
        let c0 = report.rungs.iter().position(|r| *r == 0).unwrap_or(0);
        // The chain now on rung 0, after its move (one step of lr 1e-7 moves it far less than a
        // mode's width, so its mode is that of the pre-move sample).
        let beta = vr.ensemble().chain(c0)[0];
        if at.step >= cfg.iters / 10 {
            indicator.push(f64::from(u8::from(beta < 10.0)));
        }
        if at.step.is_multiple_of(10) {
            trace.push(beta);
        }
        Ok(())
    });
    let start = Instant::now();
    Run::steps(cfg.iters)
        .observe(&mut watch)
        .run(&mut vr, &mut batches)?;
    let mass = indicator.iter().sum::<f64>() / indicator.len().max(1) as f64;
    let n_eff = ess(std::slice::from_ref(&indicator)).max(1.0);
    let [plain, used, plain_pair, used_pair] = vr.reduction_stats().means();
    Ok(VrOutcome {
        low_mode_se: (mass * (1.0 - mass) / n_eff).sqrt(),
        trace,
        swaps: vr.replica().stats().total_accepts(),
        plain_variance: plain,
        vr_variance: used,
        plain_pair_variance: plain_pair,
        used_pair_variance: used_pair,
        low_mode_mass: mass,
        wall_seconds: start.elapsed().as_secs_f64(),
    })
}

/// Options of `sgmcmc vr-resgld`.
#[derive(Debug, clap::Args)]
pub struct VrArgs {
    /// Run directory.
    #[arg(long, default_value = "runs/vr-resgld")]
    pub out: std::path::PathBuf,
    /// Steps per run [default: 20000, or the config file's].
    #[arg(long)]
    pub iters: Option<u64>,
    /// Run seed [default: 1, or the config file's].
    #[arg(long)]
    pub seed: Option<u64>,
    /// N = 1e4 and minibatches of 100 instead of the thesis' N = 1e5 (seconds instead of a
    /// minute).
    #[arg(long)]
    pub quick: bool,
    /// Repeat the study from a `config.toml` a run wrote (`--iters`, `--seed` and `--out` may
    /// stand beside it).
    #[arg(long, conflicts_with = "quick")]
    pub config: Option<std::path::PathBuf>,
}

/// The files `sgmcmc vr-resgld` writes into `--out`.
pub const FILES: &[&str] = &[
    "config.toml",
    "summary.json",
    "variance.csv",
    "traces.csv",
    "traces.png",
];

/// The settings `a` asks for (the preset, a config file over it, the flags), checked before
/// the run folder is touched.
pub fn config_of(a: &VrArgs) -> Result<VrStudyConfig, AppError> {
    let preset = if a.quick {
        VrStudyConfig {
            n_data: 10_000,
            batch: 100,
            lr: 1e-6,
            ..VrStudyConfig::thesis()
        }
    } else {
        VrStudyConfig::thesis()
    };
    let mut base = sgmcmc_engine::settings::with_config(preset.clone(), a.config.as_deref())?;
    sgmcmc_engine::flags_over!(base, a; iters, seed);
    if (base.period, base.correction) != (preset.period, preset.correction) {
        return Err(AppError::Usage(
            "vr-resgld runs its own set of periods (m 10, 40, 200, none) and corrections (F 1, \
             100): `period` and `correction` in a config file are not read"
                .into(),
        ));
    }
    if !(base.lr.is_finite() && base.lr > 0.0) {
        return Err(AppError::Usage(format!(
            "lr must be finite and > 0, got {}",
            base.lr
        )));
    }
    if base.iters < 10 {
        return Err(AppError::Usage(format!(
            "--iters must be >= 10 (the first tenth is burn-in), got {}",
            base.iters
        )));
    }
    if base.n_data == 0 || base.batch == 0 {
        return Err(AppError::Usage(format!(
            "n_data and batch must be >= 1, got {} and {}",
            base.n_data, base.batch
        )));
    }
    Ok(base)
}

/// Runs VR-reSGLD (m = 40, F = 1), reSGLD (F = 100) and the variance study for m in {10, 40,
/// 200}; prints a table, writes `summary.json`, `variance.csv`, `traces.csv` and `traces.png`.
pub fn run_cli(a: &VrArgs, base: VrStudyConfig) -> Result<(), AppError> {
    let d = data(base.n_data)?;
    let (t1, t2) = base.temperatures;
    let (exact, single) = exact_low_mode_mass(&d, t1, t2);
    let mut rows = Vec::new();
    let mut runs = Vec::new();
    println!(
        "N {} n {} lr {} tau ({t1}, {t2}); exact rung-0 mass near -5: {exact:.3} (tau_1 alone {single:.3})",
        base.n_data, base.batch, base.lr
    );
    println!(
        "{:<22} {:>7} {:>12} {:>10} {:>12} {:>10} {:>7} {:>16}",
        "run", "swaps", "Var plain", "Var used", "sig2 plain", "sig2 used", "ratio", "mass near -5"
    );
    for (label, period, f) in [
        ("VR-reSGLD m=10 F=1", Some(10), 1.0),
        ("VR-reSGLD m=40 F=1", Some(40), 1.0),
        ("VR-reSGLD m=200 F=1", Some(200), 1.0),
        ("reSGLD F=1", None, 1.0),
        ("reSGLD F=100", None, 100.0),
    ] {
        let cfg = VrStudyConfig {
            period,
            correction: f,
            ..base.clone()
        };
        let o = run(&cfg, &d)?;
        println!(
            "{label:<22} {:>7} {:>12.0} {:>10.1} {:>12.1} {:>10.2} {:>7.0} {:>9.3} +- {:.3}",
            o.swaps,
            o.plain_variance,
            o.vr_variance,
            o.plain_pair_variance,
            o.used_pair_variance,
            o.plain_pair_variance / o.used_pair_variance,
            o.low_mode_mass,
            o.low_mode_se
        );
        rows.push(vec![
            period.map_or(0.0, |m| m as f64),
            f,
            o.swaps as f64,
            o.plain_variance,
            o.vr_variance,
            o.plain_pair_variance,
            o.used_pair_variance,
            o.low_mode_mass,
            o.low_mode_se,
        ]);
        runs.push((label.to_string(), o));
    }
    crate::output::run_dir(&a.out)?;
    crate::output::write_toml(&a.out.join("config.toml"), &base)?;
    crate::output::write_csv(
        &a.out.join("variance.csv"),
        &[
            "period",
            "correction",
            "swaps",
            "var_plain",
            "var_used",
            "sigma2_plain",
            "sigma2_used",
            "low_mode_mass",
            "low_mode_se",
        ],
        &rows,
    )?;
    let n = runs.iter().map(|r| r.1.trace.len()).min().unwrap_or(0);
    let traces: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            std::iter::once(10.0 * i as f64)
                .chain(runs.iter().map(|r| r.1.trace[i]))
                .collect()
        })
        .collect();
    let mut header = vec!["step".to_string()];
    header.extend(runs.iter().map(|r| r.0.clone()));
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    crate::output::write_csv(&a.out.join("traces.csv"), &h, &traces)?;
    let series: Vec<(&str, Vec<(f64, f64)>)> = runs
        .iter()
        .enumerate()
        .filter(|(i, _)| *i == 1 || *i == 4)
        .map(|(i, r)| {
            (
                r.0.as_str(),
                traces.iter().map(|row| (row[0], row[1 + i])).collect(),
            )
        })
        .collect();
    sgmcmc_plot::lines(
        &a.out.join("traces.png"),
        "rung-0 beta: VR-reSGLD (m = 40, F = 1) vs reSGLD (F = 100)",
        "step",
        "beta",
        &series,
    )?;
    crate::output::write_json(
        &a.out.join("summary.json"),
        &serde_json::json!({
            "config": base,
            "exact_low_mode_mass": exact,
            "runs": runs.iter().map(|(l, o)| serde_json::json!({
                "label": l, "swaps": o.swaps, "var_plain": o.plain_variance,
                "var_used": o.vr_variance, "sigma2_plain": o.plain_pair_variance,
                "sigma2_used": o.used_pair_variance, "low_mode_mass": o.low_mode_mass,
                "low_mode_se": o.low_mode_se, "wall_seconds": o.wall_seconds,
                // The rung-0 trace (one chain: R-hat is undefined, ESS and MCSE are not).
                "diagnostics": Convergence::of(std::slice::from_ref(&o.trace)),
            })).collect::<Vec<_>>(),
        }),
    )?;
    println!("wrote {}", a.out.display());
    Ok(())
}
