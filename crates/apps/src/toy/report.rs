//! Summaries and run-directory outputs of a toy run.

use std::path::Path;

use serde::Serialize;
use sgmcmc_samplers::control::RandomField;
use sgmcmc_samplers::diagnostics::{
    Convergence, Coupling, ess, kish_ess, split_rhat, weighted_ess, weighted_k_hat,
};
use sgmcmc_samplers::sampler::ReplicaSummary;
use sgmcmc_testfunctions::exact_masses::{self, ExactMethod};
use sgmcmc_testfunctions::quadrature;

use super::{ToyConfig, ToyOutcome};
use crate::error::AppError;
use crate::output;
use crate::output::RunHeader;

/// `summary.json` of a toy run (the CLI contract's fields first).
#[derive(Clone, Debug, Serialize)]
pub struct ToySummary {
    /// Sampler, target, seed, device, wall time and steps/s (each step moves every chain).
    #[serde(flatten)]
    pub header: RunHeader,
    /// Chain-steps per second (`steps_per_second * chains`).
    pub chain_steps_per_second: f64,
    /// Number of chains.
    pub chains: usize,
    /// Iterations per chain.
    pub iters: u64,
    /// Collected samples per chain.
    pub samples_per_chain: usize,
    /// Sample mean.
    pub mean: Vec<f64>,
    /// Exact mean by quadrature (1-D and 2-D targets).
    pub exact_mean: Option<Vec<f64>>,
    /// Mode labels.
    pub mode_labels: Option<Vec<String>>,
    /// Fraction of samples in each mode.
    pub mode_masses: Option<Vec<f64>>,
    /// Monte Carlo standard error of each mode mass (`sd / sqrt(ESS)` of the weighted
    /// estimator; chains counted as `chain_coupling` says).
    pub mode_mass_se: Option<Vec<f64>>,
    /// Unweighted fraction of samples per mode (contour samplers visit a flattened law).
    pub raw_mode_masses: Option<Vec<f64>>,
    /// Exact mode masses at the run's temperature (quadrature, or Monte Carlo above 2-D).
    pub exact_mode_masses: Option<Vec<f64>>,
    /// Standard error of each exact mode mass when it comes from Monte Carlo.
    pub exact_mode_mass_se: Option<Vec<f64>>,
    /// How the exact values were computed (`quadrature` with its grid, or `monte_carlo` with
    /// its draws).
    pub exact_method: Option<ExactMethod>,
    /// `sum_i |mode_masses_i - exact_i|`.
    pub mode_mass_l1: Option<f64>,
    /// Split R-hat of the first coordinate across chains, of the raw samples (for contour
    /// samplers: the flattened law they visit).
    pub rhat_x0: f64,
    /// Effective sample size of the raw (unweighted) first coordinate: the autocorrelation ESS
    /// of the samples the chains visit, before importance weights, with the chains counted as
    /// `chain_coupling` says.
    pub ess_x0: f64,
    /// Effective sample size of the importance-weighted estimates: `ess_x0 * kish_ess / n` over
    /// the `n` kept samples, the autocorrelation ESS times Kish's efficiency of the weights
    /// (equal to `ess_x0` for unweighted samplers). It treats the weights as independent of the
    /// values, which errs on the safe side when they correlate through the energy: on the 1-D
    /// mixture (`mixture-csgld-quick`) it implies a standard error of the weighted mean of 0.27
    /// against 0.155 across seeds, where the direct `var_w / se^2` of
    /// `sgmcmc_samplers::diagnostics::weighted_ess` implies 0.17.
    pub weighted_ess_x0: f64,
    /// Kish's effective number of the kept samples' importance weights, `(sum w)^2 / sum w^2`
    /// (the number of samples for unweighted samplers).
    pub kish_ess: f64,
    /// The rank-normalised diagnostics of the first coordinate's raw samples (Vehtari et al.
    /// 2021, as ArviZ computes them): `max(bulk, folded)` R-hat, bulk and tail ESS, MCSE of the
    /// mean and of the standard deviation. For contour samplers they describe the flattened law
    /// the chains visit. R-hat needs two chains: null with one, as ArviZ's NaN.
    pub convergence_x0: Convergence,
    /// Pareto `k-hat` of the kept samples' importance weights (PSIS, Vehtari et al. 2024;
    /// `r_eff = 1`), for samplers whose weights vary: below 0.5 the weighted averages converge
    /// at the usual rate, above 0.7 they rest on a few samples. `None` for unweighted samplers.
    pub pareto_k_hat: Option<f64>,
    /// How the chains count in `ess_x0`, `weighted_ess_x0` and `mode_mass_se`: `independent`,
    /// or `shared` for the chains of a contour sampler, which share `theta` (ICSGLD) and count
    /// as one dependent system, their errors from the trace of the chain-averaged estimate.
    pub chain_coupling: Coupling,
    /// Final theta of a contour sampler.
    pub theta: Option<Vec<f64>>,
    /// What theta estimates, read off it: the bin masses (`power`: theta; `interacting`:
    /// theta^zeta normalised) or the energy CDF (`cumulative`: theta^zeta).
    pub theta_estimate: Option<Vec<f64>>,
    /// The exact value of `theta_estimate` (bin masses, or their running sums).
    pub theta_exact: Option<Vec<f64>>,
    /// Standard error of each `theta_exact` entry when it comes from Monte Carlo.
    pub theta_exact_se: Option<Vec<f64>>,
    /// `max_i |theta_estimate_i - theta_exact_i|`.
    pub theta_max_error: Option<f64>,
    /// Moves with a negative gradient multiplier (contour samplers).
    pub bouncy_moves: u64,
    /// Swap statistics (replica exchange).
    pub replica: Option<ReplicaSummary>,
}

/// Builds the summary of an outcome.
pub fn summarize(cfg: &ToyConfig, out: &ToyOutcome) -> Result<ToySummary, AppError> {
    let potential = out.target.potential();
    let method = ExactMethod::for_potential(potential, cfg.target.exact_draws());
    let exact_mean = match method {
        Some(ExactMethod::Quadrature { grid }) => {
            Some(quadrature::mean(potential, cfg.target_temperature(), grid)?)
        }
        _ => None,
    };
    // Weighted estimates target pi at the reweighting temperature.
    let tau = cfg.target_temperature();
    let (mode_masses, mode_mass_se, exact, l1, labels) =
        match (&out.modes, potential.modes(), method) {
            (Some(traces), Some(map), Some(method)) => {
                let (m, se) = traces.masses();
                let exact = exact_masses::mode_masses(potential, tau, method)?;
                let l1 = m
                    .iter()
                    .zip(&exact.masses)
                    .map(|(a, b)| (a - b).abs())
                    .sum();
                (Some(m), Some(se), Some(exact), Some(l1), Some(map.labels()))
            }
            _ => (None, None, None, None, None),
        };
    let (exact_mode_masses, exact_mode_mass_se) = match exact {
        Some(e) => (Some(e.masses), e.se),
        None => (None, None),
    };
    let contour = out.theta.is_some();
    let raw_mode_masses = out
        .modes
        .as_ref()
        .filter(|_| contour)
        .map(|t| t.raw_masses());
    let (theta_estimate, theta_exact, theta_exact_se) = match theta_check(cfg, out, method)? {
        Some((e, x, se)) => (Some(e), Some(x), se),
        None => (None, None, None),
    };
    let theta_max_error = theta_estimate
        .as_ref()
        .zip(theta_exact.as_ref())
        .map(|(e, x)| {
            e.iter()
                .zip(x)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max)
        });
    let steps_per_second = cfg.iters as f64 / out.wall_seconds.max(1e-12);
    let weights = out.weights.chains.concat();
    let (kish, kept) = (kish_ess(&weights), weights.len());
    let raw_ess = match out.coupling {
        Coupling::Independent => ess(&out.x0.chains),
        Coupling::Shared => {
            let ones: Vec<Vec<f64>> = out.x0.chains.iter().map(|c| vec![1.0; c.len()]).collect();
            weighted_ess(&out.x0.chains, &ones, Coupling::Shared)
        }
    };
    Ok(ToySummary {
        header: RunHeader {
            sampler: cfg.sampler.name.clone(),
            target: cfg.target.to_string(),
            seed: cfg.seed,
            device: cfg.device.to_string(),
            wall_seconds: out.wall_seconds,
            steps_per_second,
        },
        chain_steps_per_second: steps_per_second * cfg.chains as f64,
        chains: cfg.chains,
        iters: cfg.iters,
        samples_per_chain: out.x0.chains.first().map_or(0, Vec::len),
        mean: out.mean.mean(),
        exact_mean,
        mode_labels: labels,
        mode_masses,
        mode_mass_se,
        raw_mode_masses,
        exact_mode_masses,
        exact_mode_mass_se,
        exact_method: method,
        mode_mass_l1: l1,
        rhat_x0: split_rhat(&out.x0.chains),
        ess_x0: raw_ess,
        weighted_ess_x0: raw_ess * kish / kept.max(1) as f64,
        kish_ess: kish,
        convergence_x0: Convergence::of(&out.x0.chains),
        pareto_k_hat: weighted_k_hat(&weights.iter().map(|w| w.ln()).collect::<Vec<_>>(), 1.0),
        chain_coupling: out.coupling,
        theta: out.theta.clone(),
        theta_estimate,
        theta_exact,
        theta_exact_se,
        theta_max_error,
        bouncy_moves: out.bouncy_moves,
        replica: out.replica.clone(),
    })
}

/// `(estimate, exact, standard error of exact)` vectors.
type ThetaCheck = Option<(Vec<f64>, Vec<f64>, Option<Vec<f64>>)>;

/// The estimate theta makes of the energy-bin masses (or CDF) and its exact value, for
/// contour runs on targets with exact masses.
fn theta_check(
    cfg: &ToyConfig,
    out: &ToyOutcome,
    method: Option<ExactMethod>,
) -> Result<ThetaCheck, AppError> {
    let (Some(theta), Some(c), Some(method)) = (&out.theta, &out.contour, method) else {
        return Ok(None);
    };
    let potential = out.target.potential();
    let exact =
        exact_masses::energy_bin_masses(potential, cfg.sampler.temperature, method, &c.partition)?;
    let masses = exact.masses;
    let powered: Vec<f64> = theta.iter().map(|t| t.powf(c.zeta)).collect();
    Ok(Some(match c.field {
        RandomField::Power => (theta.clone(), masses, exact.se),
        RandomField::Interacting => {
            let s: f64 = powered.iter().sum();
            (powered.iter().map(|v| v / s).collect(), masses, exact.se)
        }
        RandomField::Cumulative => {
            let cdf = masses
                .iter()
                .scan(0.0, |acc, v| {
                    *acc += v;
                    Some(*acc)
                })
                .collect();
            (powered, cdf, exact.cdf_se)
        }
    }))
}

/// Every file [`write_outputs`] can write (what `--force` replaces).
pub const FILES: &[&str] = &[
    "config.toml",
    "metrics.csv",
    "samples.csv",
    "summary.json",
    "samples.png",
    "energy.png",
    "theta_trace.csv",
    "theta.png",
    "replica_trace.csv",
    "index_process.png",
    "ladder.png",
    // A checkpoint of an earlier run (one process, or a distributed run's manifest and parts):
    // left beside a new run's results, `--resume` would continue the old run in their place.
    "checkpoint.cbor",
    "checkpoint.rank-*",
];

/// Writes `config.toml`, `metrics.csv`, `samples.csv`, `summary.json`, `samples.png`,
/// `energy.png`, for contour samplers `theta_trace.csv` and `theta.png`, and for replica
/// exchange `replica_trace.csv`, `index_process.png` and `ladder.png` into `dir`.
pub fn write_outputs(
    dir: &Path,
    cfg: &ToyConfig,
    out: &ToyOutcome,
    summary: &ToySummary,
) -> Result<(), AppError> {
    output::run_dir(dir)?;
    output::write_toml(&dir.join("config.toml"), cfg)?;
    output::write_csv(
        &dir.join("metrics.csv"),
        &[
            "step",
            "lr",
            "temperature",
            "energy_mean",
            "energy_min",
            "energy_max",
            "multiplier_min",
            "multiplier_max",
            "bouncy_moves",
        ],
        &out.metrics,
    )?;
    if let Some(first) = out.theta_trace.first() {
        let header: Vec<String> = std::iter::once("step".to_string())
            .chain((1..first.len()).map(|i| format!("theta_{}", i - 1)))
            .collect();
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        output::write_csv(&dir.join("theta_trace.csv"), &header, &out.theta_trace)?;
    }
    let d = out.target.dim();
    let header: Vec<String> = (0..d).map(|i| format!("x{i}")).collect();
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    output::write_csv(&dir.join("samples.csv"), &header, &out.plot_samples)?;
    let title = format!(
        "{} on {} ({} chains x {} iters)",
        cfg.sampler.name, cfg.target, cfg.chains, cfg.iters
    );
    if d <= 2 {
        sgmcmc_plot::samples_over_density(
            &dir.join("samples.png"),
            out.target.potential(),
            cfg.sampler.temperature,
            &out.plot_samples,
            &title,
        )?;
    }
    sgmcmc_plot::lines(
        &dir.join("energy.png"),
        &format!("energy trace: {title}"),
        "step",
        "mean stochastic energy",
        &[("energy", out.metrics.iter().map(|r| (r[0], r[3])).collect())],
    )?;
    if let (Some(e), Some(x)) = (&summary.theta_estimate, &summary.theta_exact) {
        let last = x
            .iter()
            .rposition(|v| *v > 1e-4 && *v < 1.0 - 1e-4)
            .unwrap_or(x.len() - 1);
        let upto = (last + 2).min(x.len());
        let series = |v: &[f64]| (0..upto).map(|i| (i as f64, v[i])).collect::<Vec<_>>();
        sgmcmc_plot::lines(
            &dir.join("theta.png"),
            &format!("theta vs exact: {title}"),
            "energy bin",
            "bin mass (or energy CDF)",
            &[("estimate from theta", series(e)), ("exact", series(x))],
        )?;
    }
    if let Some(first) = out.replica_trace.first() {
        write_replica_trace(dir, first.len(), cfg.chains, &out.replica_trace, &title)?;
    }
    output::write_json(&dir.join("summary.json"), summary)
}

/// `replica_trace.csv`, the index process (rung of each replica over time, thesis Fig. 4.6)
/// and the learning-rate ladder over time (Fig. 4.4).
fn write_replica_trace(
    dir: &Path,
    width: usize,
    p: usize,
    rows: &[Vec<f64>],
    title: &str,
) -> Result<(), AppError> {
    let mut header = vec!["step".to_string()];
    header.extend((0..p).map(|i| format!("rung_of_replica_{i}")));
    header.extend((0..p).map(|r| format!("lr_{r}")));
    header.push("buffer".into());
    header.extend((0..p - 1).map(|r| format!("accepts_{r}")));
    header.extend((0..p - 1).map(|r| format!("passes_{r}")));
    header.push("round_trips".into());
    if header.len() != width {
        return Err(AppError::Run(format!(
            "replica trace has {width} columns, expected {}",
            header.len()
        )));
    }
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    output::write_csv(&dir.join("replica_trace.csv"), &h, rows)?;
    let series = |col: usize, name: String| (name, rows.iter().map(|r| (r[0], r[col])).collect());
    let shown = p.min(4);
    let index: Vec<(String, Vec<(f64, f64)>)> = (0..shown)
        .map(|i| series(1 + i, format!("replica {i}")))
        .collect();
    let index: Vec<(&str, Vec<(f64, f64)>)> =
        index.iter().map(|(n, v)| (n.as_str(), v.clone())).collect();
    sgmcmc_plot::lines(
        &dir.join("index_process.png"),
        &format!("index process: {title}"),
        "step",
        "rung",
        &index,
    )?;
    let lrs: Vec<(String, Vec<(f64, f64)>)> = (0..p)
        .map(|r| series(1 + p + r, format!("lr {r}")))
        .collect();
    let lrs: Vec<(&str, Vec<(f64, f64)>)> =
        lrs.iter().map(|(n, v)| (n.as_str(), v.clone())).collect();
    sgmcmc_plot::lines(
        &dir.join("ladder.png"),
        &format!("learning-rate ladder: {title}"),
        "step",
        "learning rate",
        &lrs,
    )?;
    Ok(())
}
