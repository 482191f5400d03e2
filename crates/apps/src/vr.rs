//! `sgmcmc vr-resgld`: variance-reduced replica exchange on the thesis' data posterior
//! (sec. 3.5.1, Fig. 3.2): VR-reSGLD against reSGLD and SGLD, and the variance of the plain and
//! control-variate energy estimators for several snapshot periods `m`.
//!
//! The likelihood is symmetric under `beta -> 20 - beta`, so the posterior has modes near -5
//! and 25 separated by a barrier of about 3.8 nats per data point: no chain crosses it, at any
//! of the temperatures used. The rung-0 chain visits both modes only through swaps, which needs
//! the two replicas in different basins: the low replica starts at 30 (as the thesis' SGLD run)
//! and the high one at -10. The exact rung-0 mode masses are then those of the pair law with one
//! replica per basin, `Z_1(A) Z_2(B) / (Z_1(A) Z_2(B) + Z_1(B) Z_2(A))`, `Z_t(A) = ∫_A e^(-L/t)`,
//! computed by quadrature around each mode.
//!
//! One step: draw a minibatch `B` (n indices with replacement); refresh the snapshots of both
//! chains every `m` steps (`L^` is a full-data pass); the swap test uses
//! `L~ = L(B|x) + c (L(B|x^) - L^)` (VR) or `L(B|x)` (plain); every 100 steps on average (at a
//! random phase of the snapshot period) `sigma2_hat` is refreshed from 10 fresh minibatches of
//! the same estimator the swaps use, and the sample variances of both estimators are recorded.
//! Until the first refresh `sigma2_hat = 0` (naive swaps).

use std::time::Instant;

use serde::Serialize;
use sgmcmc_samplers::control::{ControlVariate, Ladder, Smoothing, SwapScheme};
use sgmcmc_samplers::density::data_mixture::MixtureData;
use sgmcmc_samplers::diagnostics::ess;
use sgmcmc_samplers::ensemble::HostEnsemble;
use sgmcmc_samplers::kernel::Kernel;
use sgmcmc_samplers::rng::ChainRng;
use sgmcmc_samplers::sampler::{ReplicaConfig, ReplicaExchange, Sampler, SwapRule};

use crate::error::AppError;

/// Settings of one run.
#[derive(Clone, Debug, Serialize)]
pub struct VrConfig {
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

impl VrConfig {
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
    /// Mean sample variance of the plain minibatch energy (per chain, per refresh).
    pub plain_variance: f64,
    /// Mean sample variance of the control-variate energy.
    pub vr_variance: f64,
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

/// Runs VR-reSGLD (or reSGLD without a period) on `data`.
pub fn run(cfg: &VrConfig, data: &MixtureData) -> Result<VrOutcome, AppError> {
    let (t1, t2) = cfg.temperatures;
    let rc = ReplicaConfig {
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
    };
    let ens = HostEnsemble::new(data.clone(), &[vec![30.0], vec![-10.0]], cfg.seed)?;
    let mut re = ReplicaExchange::new(rc, ens, cfg.seed)?;
    let mut cv = ControlVariate::new(2, cfg.period.unwrap_or(1), -1.0, None)?;
    let mut snap = [30.0, -10.0];
    let mut rng = ChainRng::new(cfg.seed, 7);
    let (mut plain_var, mut vr_var, mut refreshes) = (0.0, 0.0, 0.0f64);
    let (mut trace, mut low, mut kept) = (Vec::new(), 0.0, 0.0f64);
    let mut next_refresh = 50 + rng.below(100) as u64;
    let mut indicator = Vec::with_capacity(cfg.iters as usize);
    let start = Instant::now();
    let position = |re: &Replica, p: usize| re.ensemble().chain(p)[0];
    for k in 0..cfg.iters {
        if cfg.period.is_some() && cv.due(k) {
            for (p, s) in snap.iter_mut().enumerate() {
                *s = position(&re, p);
                cv.set(p, data.full_energy(*s));
            }
        }
        let energy = |re: &Replica, p: usize, b: &[usize]| -> (f64, f64) {
            let plain = data.batch_energy_grad(position(re, p), b).0;
            let vr = cv.energy(p, plain, data.batch_energy_grad(snap[p], b).0);
            (plain, vr)
        };
        // Every 100 steps on average, at a random phase of the snapshot period (a refresh right
        // at a snapshot would see x = x^ and a zero control-variate variance).
        if k == next_refresh {
            next_refresh = k + 50 + rng.below(100) as u64;
            let mut draws = vec![Vec::new(), Vec::new()];
            let mut plain_draws = [Vec::new(), Vec::new()];
            for _ in 0..10 {
                let b = data.minibatch(cfg.batch, &mut rng);
                for p in 0..2 {
                    let (plain, vr) = energy(&re, p, &b);
                    plain_draws[p].push(plain);
                    draws[p].push(if cfg.period.is_some() { vr } else { plain });
                }
            }
            for p in 0..2 {
                plain_var += variance(&plain_draws[p]);
                vr_var += variance(&draws[p]);
                refreshes += 1.0;
            }
            re.refresh_variance_from(&draws);
        }
        let b = data.minibatch(cfg.batch, &mut rng);
        let offsets: Vec<f64> = (0..2)
            .map(|p| match cfg.period {
                Some(_) => cv.offset(p, data.batch_energy_grad(snap[p], &b).0),
                None => 0.0,
            })
            .collect();
        let report = re.step_with_energy_offsets(&b, &offsets)?;
        let c0 = report.rungs.iter().position(|r| *r == 0).unwrap_or(0);
        // The chain now on rung 0, after its move (one step of lr 1e-7 moves it far less than a
        // mode's width, so its mode is that of the pre-move sample).
        let beta = position(&re, c0);
        if k >= cfg.iters / 10 {
            kept += 1.0;
            let hit = f64::from(u8::from(beta < 10.0));
            low += hit;
            indicator.push(hit);
        }
        if k % 10 == 0 {
            trace.push(beta);
        }
    }
    let mass = low / kept.max(1.0);
    let n_eff = ess(std::slice::from_ref(&indicator)).max(1.0);
    Ok(VrOutcome {
        low_mode_se: (mass * (1.0 - mass) / n_eff).sqrt(),
        trace,
        swaps: re.stats().total_accepts(),
        plain_variance: plain_var / refreshes.max(1.0),
        vr_variance: vr_var / refreshes.max(1.0),
        low_mode_mass: mass,
        wall_seconds: start.elapsed().as_secs_f64(),
    })
}

type Replica = ReplicaExchange<HostEnsemble<MixtureData>>;

fn variance(v: &[f64]) -> f64 {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)
}

/// Exact rung-0 mass of the mode near -5 for one replica per basin (see the module docs), and
/// the plain tau_1 posterior mass of that mode.
pub fn exact_low_mode_mass(data: &MixtureData, t1: f64, t2: f64) -> (f64, f64) {
    // Log-partition of each basin at temperature t: a fine grid of +-10 sd around its mode.
    let basin = |lo: f64, hi: f64, t: f64| -> f64 {
        // Golden-section search for the mode.
        let (mut a, mut b) = (lo, hi);
        let g = 0.5 * (5f64.sqrt() - 1.0);
        for _ in 0..60 {
            let (c, d) = (b - g * (b - a), a + g * (b - a));
            if data.full_energy(c) < data.full_energy(d) {
                b = d;
            } else {
                a = c;
            }
        }
        let mode = 0.5 * (a + b);
        let h = 1e-3;
        let u0 = data.full_energy(mode);
        let curv = (data.full_energy(mode + h) - 2.0 * u0 + data.full_energy(mode - h)) / (h * h);
        let sd = (t / curv.max(1e-12)).sqrt();
        let n = 400;
        let step = 20.0 * sd / n as f64;
        let z: f64 = (0..=n)
            .map(|i| {
                let x = mode - 10.0 * sd + i as f64 * step;
                (-(data.full_energy(x) - u0) / t).exp()
            })
            .sum::<f64>()
            * step;
        z.ln() - u0 / t
    };
    let (a1, b1) = (basin(-15.0, 10.0, t1), basin(10.0, 35.0, t1));
    let (a2, b2) = (basin(-15.0, 10.0, t2), basin(10.0, 35.0, t2));
    let pair = 1.0 / (1.0 + (b1 + a2 - a1 - b2).exp());
    let single = 1.0 / (1.0 + (b1 - a1).exp());
    (pair, single)
}

/// Options of `sgmcmc vr-resgld`.
#[derive(Debug, clap::Args)]
pub struct VrArgs {
    /// Run directory.
    #[arg(long, default_value = "runs/vr-resgld")]
    pub out: std::path::PathBuf,
    /// Steps per run.
    #[arg(long, default_value_t = 20_000)]
    pub iters: u64,
    /// Run seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// N = 1e4 and minibatches of 100 instead of the thesis' N = 1e5 (seconds instead of a
    /// minute).
    #[arg(long)]
    pub quick: bool,
}

/// Runs VR-reSGLD (m = 40, F = 1), reSGLD (F = 100) and the variance study for m in {10, 40,
/// 200}; prints a table, writes `summary.json`, `variance.csv`, `traces.csv` and `traces.png`.
pub fn run_cli(a: &VrArgs) -> Result<(), AppError> {
    if a.iters < 10 {
        return Err(AppError::Usage(format!(
            "--iters must be >= 10 (the first tenth is burn-in), got {}",
            a.iters
        )));
    }
    let base = VrConfig {
        iters: a.iters,
        seed: a.seed,
        ..if a.quick {
            VrConfig {
                n_data: 10_000,
                batch: 100,
                lr: 1e-6,
                ..VrConfig::thesis()
            }
        } else {
            VrConfig::thesis()
        }
    };
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
        "{:<22} {:>7} {:>14} {:>12} {:>9} {:>16}",
        "run", "swaps", "Var plain", "Var used", "ratio", "mass near -5"
    );
    for (label, period, f) in [
        ("VR-reSGLD m=10 F=1", Some(10), 1.0),
        ("VR-reSGLD m=40 F=1", Some(40), 1.0),
        ("VR-reSGLD m=200 F=1", Some(200), 1.0),
        ("reSGLD F=1", None, 1.0),
        ("reSGLD F=100", None, 100.0),
    ] {
        let cfg = VrConfig {
            period,
            correction: f,
            ..base.clone()
        };
        let o = run(&cfg, &d)?;
        println!(
            "{label:<22} {:>7} {:>14.0} {:>12.1} {:>9.0} {:>9.3} +- {:.3}",
            o.swaps,
            o.plain_variance,
            o.vr_variance,
            o.plain_variance / o.vr_variance,
            o.low_mode_mass,
            o.low_mode_se
        );
        rows.push(vec![
            period.map_or(0.0, |m| m as f64),
            f,
            o.swaps as f64,
            o.plain_variance,
            o.vr_variance,
            o.low_mode_mass,
            o.low_mode_se,
        ]);
        runs.push((label.to_string(), o));
    }
    crate::output::run_dir(&a.out)?;
    crate::output::write_csv(
        &a.out.join("variance.csv"),
        &[
            "period",
            "correction",
            "swaps",
            "var_plain",
            "var_used",
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
    crate::plot::lines(
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
                "var_used": o.vr_variance, "low_mode_mass": o.low_mode_mass,
                "low_mode_se": o.low_mode_se, "wall_seconds": o.wall_seconds,
            })).collect::<Vec<_>>(),
        }),
    )?;
    println!("wrote {}", a.out.display());
    Ok(())
}
