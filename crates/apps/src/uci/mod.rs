//! `sgmcmc uci`: the UCI regression benchmark of the CSGLD paper (sec. 4.2, Table 1).
//!
//! `sgmcmc uci --dataset energy --sampler csgld` runs the protocol of [`protocol`] on splits
//! `0..seeds` (seed `s` on split `s mod 20`), two runs at a time; `--table` runs the grid of
//! the four datasets and six samplers and prints RMSE and NLL (mean +- sd over seeds) beside the
//! paper's RMSE. `--noise learned` samples the noise precision with the weights under a Gamma
//! prior (`--noise-shape`, `--noise-rate`; default `Gamma(1, 0.01)`) and reports the test NLL of
//! the resulting mixture predictive; the default is the paper's fixed unit precision.
//! `--field` picks the contour samplers' `theta` update (the interacting field of the reference
//! DNN code by default; `power` is the paper's eq. 9; see
//! [`FieldChoice`]); each contour run reports what its `theta` and multiplier did
//! (`sgmcmc_samplers::diagnostics::ContourStats`). Datasets
//! are read from `DIR/uci/NAME` in the benchmark layout (any such folder
//! works; a path to a folder works too).

mod folder;
pub mod protocol;
mod report;
mod table;

use std::path::{Path, PathBuf};
use std::time::Instant;

use burn::tensor::Device;
use sgmcmc_data::UciDataset;
use sgmcmc_engine::experiment::regression::{RegressionNoise, RegressionRun, run_regressions_on};
use sgmcmc_engine::experiment::{Lead, run_job};
use sgmcmc_engine::{DeviceChoice, RunError};
use sgmcmc_samplers::control::RandomField;
use sgmcmc_samplers::registry::Family;

pub use self::folder::UciConfig;
use self::folder::{Prepared, check_run, prepare, recorded_data, seed_runs};
use self::protocol::uci_mlp;
pub use self::report::Cell;
use self::report::report_seeds;
use self::table::table;
use crate::error::AppError;
use crate::run_flags::{DataDir, DeviceFlag, JobFlags, OutputFlags};

/// The paper's `(tau, zeta)` per dataset (CSGLD paper sec. 4.2).
pub fn paper_settings(dataset: &str) -> (f64, f64) {
    match dataset {
        "energy" => (1.0, 1.0),
        "concrete" => (5.0, 1.0),
        "yacht" => (1.0, 2.5),
        "wine-quality-red" | "wine" => (5.0, 10.0),
        _ => (1.0, 1.0),
    }
}

/// Table 1 of the CSGLD paper: RMSE for (dataset, sampler).
pub fn paper_rmse(dataset: &str, sampler: &str) -> Option<f64> {
    let col = ["energy", "concrete", "yacht", "wine-quality-red"]
        .iter()
        .position(|d| *d == dataset)?;
    let row: [f64; 4] = match sampler {
        "sgd" => [1.13, 4.60, 0.81, 0.65],
        "sgld" => [1.08, 4.12, 0.72, 0.63],
        "csgld" => [1.02, 3.98, 0.69, 0.62],
        "msgd" => [0.95, 4.32, 0.73, 0.71],
        "sghmc" => [0.77, 4.25, 0.66, 0.67],
        "csghmc" => [0.76, 4.15, 0.72, 0.65],
        _ => return None,
    };
    Some(row[col])
}

/// Options of `sgmcmc uci`.
#[derive(Debug, clap::Args)]
pub struct UciArgs {
    /// Dataset folder name under `DATA_DIR/uci` (or a path to a folder in the benchmark layout).
    #[arg(long, default_value = "energy")]
    pub dataset: String,
    /// Sampler.
    #[arg(long, default_value = "sgld")]
    pub sampler: String,
    /// Runs (seed s uses split s mod the number of splits).
    #[arg(long, default_value_t = 10)]
    pub seeds: u64,
    /// Epochs (the paper: 5000).
    #[arg(long, default_value_t = 5000)]
    pub epochs: usize,
    /// Learning rate at full-data scale (default: the paper's 5e-6; `1e-3 / N` under the
    /// standardized protocol; 1e-3 per parameter for pSGLD, see `protocol::default_lr`).
    #[arg(long)]
    pub lr: Option<f64>,
    /// `paper`: the CSGLD paper's protocol (target in original units, unit noise precision,
    /// lr 5e-6), the default on its four data sets; `standardized`: a protocol for any target
    /// scale (standardized target, noise precision 100, lr 1e-3 / N), the default elsewhere.
    #[arg(long, value_enum)]
    pub protocol: Option<ProtocolChoice>,
    /// Temperature (default: the paper's per dataset).
    #[arg(long)]
    pub temperature: Option<f64>,
    /// Contour zeta (default: the paper's per dataset).
    #[arg(long)]
    pub zeta: Option<f64>,
    /// Contour samplers' stochastic-approximation field for `theta` (see [`FieldChoice`];
    /// default: `interacting` where the sampler's own is the paper's power field, as for
    /// `csgld`, else the sampler's own).
    #[arg(long, value_enum)]
    pub field: Option<FieldChoice>,
    /// Chains (replica exchange and ICSGLD need >= 2).
    #[arg(long, default_value_t = 1)]
    pub chains: usize,
    /// Any sampler setting, `KEY=VALUE` (repeatable), e.g. `momentum=0.95`,
    /// `replica.temperatures=[1.0, 3.0]`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Save every averaged model as a burn record (`OUT/seed-K/samples/`) for `sgmcmc predict`
    /// (in one process).
    #[arg(long, conflicts_with = "distributed")]
    pub save_samples: bool,
    /// Write a checkpoint every this many steps (`OUT/seed-K/checkpoint.cbor`; 0 = never).
    #[arg(long, default_value_t = 0)]
    pub checkpoint_every: u64,
    /// Repeat the run a `config.toml` describes, from scratch (`--out`, `--force`, `--quiet`,
    /// `--jobs`, `--data-dir` and `--distributed` may stand beside it; other settings are the
    /// file's).
    #[arg(long, conflicts_with = "resume")]
    pub config: Option<PathBuf>,
    /// `--data-dir` (holding `uci/`).
    #[command(flatten)]
    pub data: DataDir,
    /// Standardize the target as well as the features (the paper standardizes features only).
    #[arg(long)]
    pub standardize_target: bool,
    /// Observation noise: the paper's fixed unit precision, or a precision sampled with the
    /// weights under a Gamma prior (test NLL from the sampled precisions).
    #[arg(long, value_enum, default_value_t = NoiseChoice::Fixed)]
    pub noise: NoiseChoice,
    /// Gamma shape of the learned noise precision's prior (default 1; needs `--noise learned`).
    #[arg(long)]
    pub noise_shape: Option<f64>,
    /// Gamma rate of the learned noise precision's prior, in squared target units (default
    /// 0.01; needs `--noise learned`).
    #[arg(long)]
    pub noise_rate: Option<f64>,
    /// Run the grid of 4 datasets x 6 samplers and print the table.
    #[arg(long, conflicts_with_all = ["dataset", "sampler", "save_samples", "checkpoint_every", "distributed"])]
    pub table: bool,
    /// `--resume` (its `config.toml`, finished seeds and checkpoints) and `--distributed`
    /// (each run's chains over the ranks: `mpirun -np 2 sgmcmc uci --sampler icsgld --chains 4
    /// --distributed`).
    #[command(flatten)]
    pub job: JobFlags,
    /// `--device`.
    #[command(flatten)]
    pub device: DeviceFlag,
    /// Parallel runs (in one process; with `--distributed` the seeds run one after another).
    #[arg(long, default_value_t = 2)]
    pub jobs: usize,
    /// `--out` (default `runs/uci-DATASET-SAMPLER`), `--force` and `--quiet`.
    #[command(flatten)]
    pub output: OutputFlags,
}

/// The contour field of `sampler` on UCI: the interacting field where the sampler's own is the
/// paper's power field (eq. 9). With the power field each `theta` step is scaled by
/// `theta[J]^zeta`, 1e-30 from a uniform `theta` over 1000 bins at Wine's `zeta = 10`, so
/// `theta` never moves and CSGLD is SGLD; the reference DNN code (ICSGLD repository,
/// `sgmcmc.py`) drops the power from the step, and at `zeta = 1` (Energy, Concrete) the two
/// are the same update. The weights stay the paper's `theta[J]^zeta`.
fn default_field(sampler: &str) -> Option<RandomField> {
    let own = sgmcmc_samplers::registry::lookup(sampler).ok()?.family;
    (own == Family::Contour(RandomField::Power)).then_some(RandomField::Interacting)
}

/// What one dataset and sampler writes into `--out` (`seed-K` folders hold each seed's
/// `trace.zarr`, and its checkpoints and saved samples).
pub const FILES: &[&str] = &[
    "config.toml",
    "table.md",
    "runs.csv",
    "summary.json",
    "seed-#",
];

/// What `--table` writes into `--out`.
pub const TABLE_FILES: &[&str] = &["table.md", "runs.csv", "table.json"];

/// `--field`: how the contour samplers learn `theta`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FieldChoice {
    /// `theta_i += omega theta[J]^zeta (1{i=J} - theta_i)`, eq. 9 of the CSGLD paper.
    Power,
    /// `theta_i += omega theta[J] (1{i=J} - theta_i)`, the reference DNN code's field.
    Interacting,
}

impl FieldChoice {
    /// The sampler's field.
    pub fn field(self) -> RandomField {
        match self {
            Self::Power => RandomField::Power,
            Self::Interacting => RandomField::Interacting,
        }
    }
}

/// `--protocol`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ProtocolChoice {
    /// The CSGLD paper's (sec. 4.2) on the target's original units.
    Paper,
    /// Standardized target, noise precision and lr scaled for any data set.
    Standardized,
}

impl ProtocolChoice {
    /// `paper` on the paper's four data sets (by folder name), `standardized` on any other.
    pub fn default_for(dataset: &str) -> Self {
        let name = Path::new(dataset)
            .file_name()
            .map_or(dataset.into(), |n| n.to_string_lossy());
        if paper_rmse(&name, "sgld").is_some() {
            Self::Paper
        } else {
            Self::Standardized
        }
    }
}

/// `--noise`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum NoiseChoice {
    /// Fixed unit precision (the paper).
    Fixed,
    /// Sampled precision under a `Gamma(--noise-shape, --noise-rate)` prior.
    Learned,
}

impl UciArgs {
    /// The noise model the flags select.
    pub fn noise_model(&self) -> Result<RegressionNoise, AppError> {
        match self.noise {
            NoiseChoice::Fixed => {
                if self.noise_shape.is_some() || self.noise_rate.is_some() {
                    return Err(AppError::Usage(
                        "--noise-shape and --noise-rate need --noise learned".into(),
                    ));
                }
                Ok(RegressionNoise::Fixed { precision: 1.0 })
            }
            NoiseChoice::Learned => {
                let noise = RegressionNoise::learned(self.noise_shape, self.noise_rate);
                noise.validate()?;
                Ok(noise)
            }
        }
    }
}

/// The folder of the data set `name`: `name` itself when it holds a `data.txt`, else
/// `DIR/uci/NAME` under the data folder.
fn dataset_dir(data_dir: Option<&Path>, name: &str) -> PathBuf {
    let direct = Path::new(name);
    if direct.join("data.txt").exists() {
        return direct.to_path_buf();
    }
    sgmcmc_data::data_root(data_dir).join("uci").join(name)
}

/// The run `a` asks for on `dataset` with `sampler`: the paper's protocol with the flags laid
/// over it.
fn run_of(a: &UciArgs, dataset: &str, sampler: &str) -> Result<RegressionRun, AppError> {
    let (t, z) = paper_settings(dataset);
    let (t, z) = (a.temperature.unwrap_or(t), a.zeta.unwrap_or(z));
    let protocol = a
        .protocol
        .unwrap_or_else(|| ProtocolChoice::default_for(dataset));
    let mut run = match protocol {
        ProtocolChoice::Paper => protocol::paper(sampler, t, z, 0),
        ProtocolChoice::Standardized => protocol::standardized(sampler, t, z, 0),
    }
    .with_field(
        a.field
            .map(FieldChoice::field)
            .or_else(|| default_field(sampler)),
    );
    if let Some(lr) = a.lr {
        run = run.with_lr(lr);
        run.lr_per_row = None;
    }
    run.epochs = a.epochs;
    run.standardize_target |= a.standardize_target;
    let noise = a.noise_model()?;
    if a.noise == NoiseChoice::Learned || protocol == ProtocolChoice::Paper {
        run.noise = noise;
    }
    run.chains = a.chains;
    sgmcmc_engine::settings::check_flags_vs_sets(&[("lr", "lr", a.lr.is_some())], &a.set)?;
    run.sampler = sgmcmc_engine::settings::apply_sets(&run.sampler, &a.set)?;
    if !a.table {
        // The table checks its `--set`s against all its samplers at once.
        sgmcmc_engine::settings::check_sets_read(&[&run.sampler], &a.set)?;
    }
    // Every setting is checked before any run starts, as a config file's would be (the seed
    // count by `check_counts`).
    check_run(&run)?;
    Ok(run)
}

/// `series(device, tick)` on the device `device` names, with a progress bar over its `runs`
/// runs (drawn when `bar`: on rank 0, without `--quiet`): what it returns and when it started
/// (the reports' wall clock runs from there through their files).
fn timed_series<T>(
    runs: usize,
    bar: bool,
    device: DeviceChoice,
    series: impl FnOnce(&Device, &(dyn Fn() + Sync)) -> Result<T, RunError>,
) -> Result<(T, Instant), AppError> {
    let start = Instant::now();
    let device = device.tensor_device("uci")?.autodiff();
    let pb = crate::progress::bar(runs as u64, "uci runs", bar);
    let out = series(&device, &|| pb.inc(1))?;
    pb.finish_and_clear();
    Ok((out, start))
}

/// The split a run's seed takes of `data` (seed `s` runs on split `s mod` the split count).
fn split_of(run: &RegressionRun, data: &UciDataset) -> usize {
    (run.seed as usize) % data.splits.len()
}

/// `sgmcmc uci`.
pub fn run(a: &UciArgs) -> Result<(), AppError> {
    if a.table && a.job.resume.is_none() && a.config.is_none() {
        return table(a);
    }
    // Over ranks, rank 0 resolves the run (a new folder, `--config` or `--resume`) and sends
    // its settings to the others, which read the data it recorded and check its digest; the
    // seeds then run one after another, each over every rank.
    let distributed = a.job.distributed;
    let workers = if distributed { 1 } else { a.jobs };
    run_job(
        distributed,
        Lead {
            prepare: || {
                let p = prepare(a)?;
                if distributed && p.config.save_samples {
                    return Err(AppError::Usage(
                        "--save-samples writes each rank's models and one index: it runs in \
                         one process"
                            .into(),
                    ));
                }
                Ok(p)
            },
            share: |p: &Prepared| (p.config.clone(), p.out.clone(), p.resume),
            follow: |(config, out, resume): (UciConfig, PathBuf, bool)| {
                let data = recorded_data(&config, &out.join("config.toml"))?;
                Ok(Prepared {
                    config,
                    data,
                    out,
                    resume,
                })
            },
        },
        |p, ranks| {
            let runs = seed_runs(p);
            let bar = ranks.is_leader() && a.output.progress();
            timed_series(runs.len(), bar, p.config.device, |d, tick| {
                run_regressions_on(ranks, &runs, workers, d, uci_mlp, tick)
            })
        },
        |p, (results, start), over| report_seeds(&p, results, start, over),
    )
}

/// Seeds, epochs and jobs within what a run can hold.
fn check_counts(a: &UciArgs) -> Result<(), AppError> {
    if !(1..=100_000).contains(&a.seeds) || a.epochs == 0 {
        return Err(AppError::Usage(format!(
            "seeds must lie in 1..=100000 and epochs be >= 1 (got {} and {})",
            a.seeds, a.epochs
        )));
    }
    if a.jobs == 0 {
        return Err(AppError::Usage("jobs must be >= 1".into()));
    }
    Ok(())
}
