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

pub mod protocol;

use std::path::{Path, PathBuf};

use burn::tensor::Device;
use serde::{Deserialize, Serialize};
use sgmcmc_data::UciDataset;
use sgmcmc_engine::DeviceChoice;
use sgmcmc_engine::RunError;
use sgmcmc_engine::experiment::Console;
use sgmcmc_engine::experiment::regression::{
    RegressionNoise, RegressionResult, RegressionRun, RunFiles, SeriesRun, run_regressions,
};
use sgmcmc_engine::experiment::{DataDigest, DataRecord, Lead, leader_only, run_job};
use sgmcmc_samplers::control::RandomField;
use sgmcmc_samplers::registry::{Family, SamplerSettings};

use self::protocol::uci_mlp;
use crate::error::AppError;
use crate::output;

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
    /// Save every averaged model as a burn record (`OUT/seed-K/samples/`) for `sgmcmc predict`.
    #[arg(long)]
    pub save_samples: bool,
    /// Write a checkpoint every this many steps (`OUT/seed-K/checkpoint.cbor`; 0 = never).
    #[arg(long, default_value_t = 0)]
    pub checkpoint_every: u64,
    /// Repeat the run a `config.toml` describes, from scratch (`--out`, `--force`, `--jobs` and
    /// `--data-dir` may stand beside it; other settings are the file's).
    #[arg(long, conflicts_with = "resume")]
    pub config: Option<PathBuf>,
    /// Continue the run in this folder (its `config.toml`, finished seeds and checkpoints).
    #[arg(long)]
    pub resume: Option<PathBuf>,
    /// Data directory holding `uci/` (default: `$SGMCMC_DATA_DIR`, else `../shared/datasets`).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
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
    /// Spread each run's chains over the ranks of `mpirun` (build feature `mpi`): `mpirun -np 2
    /// sgmcmc uci --sampler icsgld --chains 4 --distributed`. The seeds run one after another
    /// (`--jobs` does not apply); rank 0 writes the run folder.
    #[arg(long, conflicts_with = "save_samples")]
    pub distributed: bool,
    /// Tensor device: flex, ndarray, wgpu or cuda; wgpu:N or cuda:N picks GPU N (without N, under mpirun, the local rank's).
    #[arg(long, default_value_t = DeviceChoice::Flex, value_name = "DEVICE")]
    pub device: DeviceChoice,
    /// Parallel runs.
    #[arg(long, default_value_t = 2)]
    pub jobs: usize,
    /// Run directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replacing an earlier run in `--out`.
    #[command(flatten)]
    pub force: output::Force,
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

/// One (dataset, sampler) cell over seeds.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    /// Dataset.
    pub dataset: String,
    /// Sampler.
    pub sampler: String,
    /// Per-seed results.
    pub runs: Vec<RegressionResult>,
    /// Mean and sd of the RMSE.
    pub rmse: (f64, f64),
    /// Mean and sd of the test NLL.
    pub nll: (f64, f64),
    /// The paper's RMSE.
    pub paper_rmse: Option<f64>,
}

fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (m, var.sqrt())
}

fn dataset_dir(data_dir: Option<&Path>, name: &str) -> PathBuf {
    let direct = Path::new(name);
    if direct.join("data.txt").exists() {
        return direct.to_path_buf();
    }
    sgmcmc_data::data_root(data_dir).join("uci").join(name)
}

/// The resolved settings of `sgmcmc uci` (one dataset and sampler), written to `config.toml`
/// and read back by `--resume`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UciConfig {
    /// Dataset name or folder.
    pub dataset: String,
    /// Data directory holding `uci/`.
    pub data_dir: Option<PathBuf>,
    /// Runs (seed `s` on split `s mod splits`).
    pub seeds: u64,
    /// Tensor device.
    pub device: DeviceChoice,
    /// The run of seed 0 (the others differ in the seed).
    pub run: RegressionRun,
    /// Steps between checkpoints (0 = none).
    pub checkpoint_every: u64,
    /// Save the averaged models.
    pub save_samples: bool,
    /// The folder the run read and the digest of its data (`--resume` reads that folder and
    /// refuses it if the data changed).
    #[serde(default)]
    pub data: Option<DataRecord>,
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
/// runs (drawn on rank 0, `leader`): what it returns and its wall-clock seconds.
fn timed_series<T>(
    runs: usize,
    leader: bool,
    device: DeviceChoice,
    series: impl FnOnce(&Device, &(dyn Fn() + Sync)) -> Result<T, RunError>,
) -> Result<(T, f64), AppError> {
    let start = std::time::Instant::now();
    let device = device.tensor_device("uci")?.autodiff();
    let pb = crate::progress::bar(runs as u64, "uci runs", leader);
    let out = series(&device, &|| pb.inc(1))?;
    pb.finish_and_clear();
    Ok((out, start.elapsed().as_secs_f64()))
}

/// The split a run's seed takes of `data` (seed `s` runs on split `s mod` the split count).
fn split_of(run: &RegressionRun, data: &UciDataset) -> usize {
    (run.seed as usize) % data.splits.len()
}

/// `sgmcmc uci`.
pub fn run(a: &UciArgs) -> Result<(), AppError> {
    if a.table && a.resume.is_none() && a.config.is_none() {
        return table(a);
    }
    // Over ranks, rank 0 resolves the run (a new folder, `--config` or `--resume`) and sends
    // its settings to the others, which read the data it recorded and check its digest; the
    // seeds then run one after another, each over every rank.
    let workers = if a.distributed { 1 } else { a.jobs };
    run_job(
        a.distributed,
        Lead {
            prepare: || {
                let p = prepare(a)?;
                if a.distributed && p.config.save_samples {
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
            timed_series(runs.len(), ranks.is_leader(), p.config.device, |d, tick| {
                run_regressions(ranks, &runs, workers, d, uci_mlp, tick)
            })
        },
        |p, (results, wall), over| report_seeds(&p, results, wall, over),
    )
}

/// A run ready to start or continue: its settings (written to `out/config.toml`), its data and
/// folder, and whether it continues one.
struct Prepared {
    config: UciConfig,
    data: UciDataset,
    out: PathBuf,
    resume: bool,
}

/// The run `a` asks for: a new one (its folder prepared), the one a `config.toml` describes
/// (`--config`), or the one in a folder to continue (`--resume`).
fn prepare(a: &UciArgs) -> Result<Prepared, AppError> {
    if let Some(dir) = &a.resume {
        return resume(dir);
    }
    if let Some(path) = &a.config {
        return repeat(a, path);
    }
    check_counts(a)?;
    let out = a.out.clone().unwrap_or_else(|| {
        let suffix = match a.noise {
            NoiseChoice::Fixed => "",
            NoiseChoice::Learned => "-learned",
        };
        PathBuf::from(format!("runs/uci-{}-{}{suffix}", a.dataset, a.sampler))
    });
    let mut config = UciConfig {
        dataset: a.dataset.clone(),
        data_dir: a.data_dir.clone(),
        seeds: a.seeds,
        device: a.device,
        run: run_of(a, &a.dataset, &a.sampler)?,
        checkpoint_every: a.checkpoint_every,
        save_samples: a.save_samples,
        data: None,
    };
    output::fresh_run_dir(&out, a.force.force, FILES)?;
    let dir = dataset_dir(config.data_dir.as_deref(), &config.dataset);
    let data = load(&dir)?;
    config.data = Some(DataRecord::new(&dir, digest(&data))?);
    output::write_toml(&out.join("config.toml"), &config)?;
    Ok(Prepared {
        config,
        data,
        out,
        resume: false,
    })
}

/// The dataset in `dir`; errors name the dataset.
fn load(dir: &Path) -> Result<UciDataset, AppError> {
    let label = dir.file_name().map_or(dir.display().to_string(), |f| {
        f.to_string_lossy().into_owned()
    });
    UciDataset::load(dir).map_err(|e| AppError::Input(format!("dataset `{label}`: {e}")))
}

/// The digest of a dataset's rows, targets and splits.
fn digest(data: &UciDataset) -> DataDigest {
    let mut d = DataDigest::default();
    d.uci(data);
    d
}

/// `sgmcmc uci --resume DIR`: the configuration of `DIR/config.toml` on the data folder it
/// records (refused if its data changed), finished seeds read back, the others continued from
/// their checkpoints.
fn resume(dir: &Path) -> Result<Prepared, AppError> {
    output::lock_run_dir(dir)?;
    let path = dir.join("config.toml");
    let config = read_config(&path)?;
    let data = recorded_data(&config, &path)?;
    Ok(Prepared {
        config,
        data,
        out: dir.to_path_buf(),
        resume: true,
    })
}

/// The data `config` records (read from its folder), refused if it changed since; `path`
/// names the configuration in errors.
fn recorded_data(config: &UciConfig, path: &Path) -> Result<UciDataset, AppError> {
    let recorded = config.data.as_ref().ok_or_else(|| {
        AppError::Input(format!(
            "{}: no record of the data the run read (written by an older sgmcmc); start the \
             run again with --force",
            path.display()
        ))
    })?;
    let data = load(&recorded.dir)?;
    recorded.check(&DataRecord::new(&recorded.dir, digest(&data))?)?;
    Ok(data)
}

/// A run's `config.toml`.
fn read_config(path: &Path) -> Result<UciConfig, AppError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| AppError::Input(format!("cannot read {}: {e}", path.display())))?;
    let config: UciConfig = toml::from_str(&text).map_err(|e| {
        AppError::Input(format!(
            "{}: {}",
            path.display(),
            e.to_string().replace('\n', " ")
        ))
    })?;
    check_config(&config).map_err(|e| AppError::Usage(format!("{}: {e}", path.display())))?;
    Ok(config)
}

/// Every value of a `config.toml` (`--config`, `--resume`): its seed count and [`check_run`].
fn check_config(config: &UciConfig) -> Result<(), AppError> {
    if !(1..=100_000).contains(&config.seeds) {
        return Err(AppError::Usage(format!(
            "seeds must lie in 1..=100000, got {}",
            config.seeds
        )));
    }
    check_run(&config.run)
}

/// Every value of one run's settings, whether they came from flags or from a `config.toml`:
/// one path for both.
fn check_run(run: &RegressionRun) -> Result<(), AppError> {
    let bad = |what: String| Err(AppError::Usage(what));
    if !(1..=64).contains(&run.chains) {
        return bad(format!("chains must lie in 1..=64, got {}", run.chains));
    }
    sgmcmc_engine::limits::check_chains(&run.sampler.name, run.chains)?;
    if run.epochs == 0 || run.batch == 0 || run.models == 0 {
        return bad(format!(
            "epochs, batch and models must be >= 1 (got {}, {} and {})",
            run.epochs, run.batch, run.models
        ));
    }
    sgmcmc_engine::limits::check_steps("epochs", Some(run.epochs as u64))?;
    if !run.weight_decay.is_finite() || run.weight_decay < 0.0 {
        return bad(format!(
            "weight_decay must be finite and >= 0, got {}",
            run.weight_decay
        ));
    }
    sgmcmc_engine::limits::check_seed(run.seed)?;
    run.sampler
        .spec(&sgmcmc_samplers::registry::BuildContext::steps(1).chains(run.chains))?;
    Ok(())
}

/// `sgmcmc uci --config FILE`: the run a `config.toml` describes, from scratch into `--out`
/// (its data folder, or `--data-dir`'s, is read and recorded anew).
fn repeat(a: &UciArgs, path: &Path) -> Result<Prepared, AppError> {
    let mut config = read_config(path)?;
    if a.data_dir.is_some() {
        config.data_dir = a.data_dir.clone();
    }
    let out = a.out.clone().unwrap_or_else(|| {
        PathBuf::from(format!(
            "runs/uci-{}-{}",
            config.dataset, config.run.sampler.name
        ))
    });
    let recorded = config.data.as_ref().filter(|_| a.data_dir.is_none());
    let dir = match recorded {
        Some(d) => d.dir.clone(),
        None => dataset_dir(config.data_dir.as_deref(), &config.dataset),
    };
    // The recorded folder is named after its data set (`uci/yacht`): a `dataset` edited beside
    // it would report one data set's energies under the other's name.
    let named = Path::new(&config.dataset).file_name();
    if recorded.is_some() && dir.file_name() != named {
        return Err(AppError::Input(format!(
            "{}: dataset `{}` but its data folder is {}; edit both, or remove the [data] table",
            path.display(),
            config.dataset,
            dir.display()
        )));
    }
    let data = load(&dir)?;
    let record = DataRecord::new(&dir, digest(&data))?;
    if let Some(recorded) = &config.data {
        recorded.check_repeat(&record, path)?;
    }
    config.data = Some(record);
    output::fresh_run_dir(&out, a.force.force, FILES)?;
    output::write_toml(&out.join("config.toml"), &config)?;
    Ok(Prepared {
        config,
        data,
        out,
        resume: false,
    })
}

/// The seeds of a prepared configuration, each on its split, with its files in `seed-K`
/// when the run checkpoints or saves samples.
fn seed_runs(p: &Prepared) -> Vec<SeriesRun<'_>> {
    let config = &p.config;
    let files = config.checkpoint_every > 0 || config.save_samples;
    (0..config.seeds)
        .map(|seed| {
            let run = RegressionRun {
                seed,
                ..config.run.clone()
            };
            SeriesRun {
                split: split_of(&run, &p.data),
                run,
                data: &p.data,
                files: files.then(|| RunFiles {
                    dir: p.out.join(format!("seed-{seed}")),
                    checkpoint_every: config.checkpoint_every,
                    save_samples: config.save_samples,
                    resume: p.resume,
                    command: "uci",
                    warn: crate::progress::Terminal::warn,
                }),
            }
        })
        .collect()
}

/// Rank 0's report of the seeds of one configuration (`over`: the ranks of a distributed
/// run): each seed's draws as an ArviZ store in its folder, the summary and its files.
fn report_seeds(
    p: &Prepared,
    results: Vec<RegressionResult>,
    wall: f64,
    over: Option<usize>,
) -> Result<(), AppError> {
    let (config, out) = (&p.config, &p.out);
    for (seed, r) in results.iter().enumerate() {
        if let Some(trace) = &r.trace {
            let dir = out.join(format!("seed-{seed}"));
            crate::output::run_dir(&dir)?;
            sgmcmc_engine::experiment::write_trace(&dir, trace)?;
        }
    }
    let sampler = config.run.sampler.name.clone();
    let cells = vec![cell(&config.dataset, &sampler, results)];
    report(&cells, config.seeds, wall, config.run.noise, out, false)?;
    if let Some(ranks) = over {
        println!(
            "{} seeds of {} x {} chains, each over {ranks} ranks",
            config.seeds, sampler, config.run.chains,
        );
    }
    Ok(())
}

/// `sgmcmc uci --table`: 4 datasets x 6 samplers.
fn table(a: &UciArgs) -> Result<(), AppError> {
    let names = ["energy", "concrete", "yacht", "wine-quality-red"].map(String::from);
    let samplers = ["sgd", "sgld", "csgld", "msgd", "sghmc", "csghmc"];
    check_counts(a)?;
    // Every run's settings, checked before the folder is touched; a `--set` counts when one
    // of the table's samplers reads it.
    let runs = names
        .iter()
        .flat_map(|d| samplers.map(|s| (d, s)))
        .map(|(d, s)| Ok((d.clone(), run_of(a, d, s)?)))
        .collect::<Result<Vec<_>, AppError>>()?;
    let settings: Vec<&SamplerSettings> = runs.iter().map(|(_, r)| &r.sampler).collect();
    sgmcmc_engine::settings::check_sets_read(&settings, &a.set)?;
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("runs/uci-table"));
    output::fresh_run_dir(&out, a.force.force, TABLE_FILES)?;
    let datasets: Vec<(String, UciDataset)> = names
        .iter()
        .map(|n| {
            let dir = dataset_dir(a.data_dir.as_deref(), n);
            UciDataset::load(&dir)
                .map(|d| (n.clone(), d))
                .map_err(|e| AppError::Input(format!("dataset `{n}`: {e}")))
        })
        .collect::<Result<_, _>>()?;
    let mut series = Vec::new();
    for (d, run) in &runs {
        let data = &datasets.iter().find(|x| x.0 == *d).expect("loaded").1;
        for seed in 0..a.seeds {
            let run = RegressionRun {
                seed,
                ..run.clone()
            };
            let split = split_of(&run, data);
            series.push(SeriesRun {
                run,
                data,
                split,
                files: None,
            });
        }
    }
    // The table runs in one process: a job of one rank.
    run_job(
        false,
        leader_only(|| Ok(())),
        |(), ranks| {
            timed_series(series.len(), true, a.device, |d, tick| {
                run_regressions(ranks, &series, a.jobs, d, uci_mlp, tick)
            })
        },
        |(), (results, wall), _| {
            let cells: Vec<_> = runs
                .iter()
                .zip(results.chunks(a.seeds as usize))
                .map(|((d, run), chunk)| cell(d, &run.sampler.name, chunk.to_vec()))
                .collect();
            report(&cells, a.seeds, wall, a.noise_model()?, &out, true)
        },
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

fn cell(dataset: &str, sampler: &str, runs: Vec<RegressionResult>) -> Cell {
    let ok: Vec<&RegressionResult> = runs.iter().filter(|r| r.error.is_none()).collect();
    let rmse: Vec<f64> = ok.iter().map(|r| r.rmse).collect();
    let nll: Vec<f64> = ok.iter().map(|r| r.nll).collect();
    Cell {
        dataset: dataset.to_string(),
        sampler: sampler.to_string(),
        rmse: mean_sd(&rmse),
        nll: mean_sd(&nll),
        paper_rmse: paper_rmse(dataset, sampler),
        runs,
    }
}

/// Prints and writes the table (`table.md`, `runs.csv`, `summary.json` or `table.json`).
fn report(
    cells: &[Cell],
    seeds: u64,
    wall: f64,
    noise: RegressionNoise,
    out: &Path,
    grid: bool,
) -> Result<(), AppError> {
    let mut table = render(cells, seeds, wall);
    {
        use std::fmt::Write;
        if let RegressionNoise::Learned { shape, rate } = noise {
            for c in cells {
                let sds: Vec<f64> = c.runs.iter().filter_map(|r| r.noise_sd).collect();
                let _ = writeln!(
                    table,
                    "{} / {}: learned noise, Gamma({shape}, {rate}) prior; mean sampled noise sd {:.3}",
                    c.dataset,
                    c.sampler,
                    mean_sd(&sds).0
                );
            }
        }
        for c in cells {
            let stats: Vec<_> = c.runs.iter().filter_map(|r| r.contour.as_ref()).collect();
            if let Some(line) = sgmcmc_samplers::diagnostics::contour::describe(&stats) {
                let _ = writeln!(table, "{} / {}: {line}", c.dataset, c.sampler);
            }
        }
    }
    print!("{table}");
    output::run_dir(out)?;
    output::write_atomic(&out.join("table.md"), table.as_bytes())?;
    let rows: Vec<Vec<f64>> = cells
        .iter()
        .enumerate()
        .flat_map(|(c, cell)| {
            cell.runs
                .iter()
                .enumerate()
                .map(move |(s, r)| vec![c as f64, s as f64, r.rmse, r.nll, r.wall_seconds])
        })
        .collect();
    output::write_csv(
        &out.join("runs.csv"),
        &["cell", "seed", "rmse", "nll", "wall_seconds"],
        &rows,
    )?;
    let runs: usize = cells.iter().map(|c| c.runs.len()).sum();
    let failed: Vec<(&Cell, &str)> = cells
        .iter()
        .flat_map(|c| {
            c.runs
                .iter()
                .filter_map(move |r| Some((c, r.error.as_deref()?)))
        })
        .collect();
    let summary = serde_json::json!({
        "wall_seconds": wall,
        "noise": noise,
        "runs": runs,
        "failed_runs": failed.len(),
        "cells": cells,
        "rmse": cells.first().map(|c| c.rmse.0),
        "nll": cells.first().map(|c| c.nll.0),
    });
    output::write_json(
        &out.join(if grid { "table.json" } else { "summary.json" }),
        &summary,
    )?;
    println!("wrote {}", out.display());
    // One line for every failed run together (each one's reason is in table.md's cells and
    // summary.json's runs); the figures average the runs that finished.
    if let Some((c, why)) = failed.first() {
        eprintln!(
            "warning: {} of {runs} runs failed and are left out of the figures (first: {} / {}: \
             {why})",
            failed.len(),
            c.dataset,
            c.sampler
        );
    }
    let dead: Vec<String> = cells
        .iter()
        .filter(|c| c.runs.iter().all(|r| r.error.is_some()))
        .map(|c| format!("{} / {}", c.dataset, c.sampler))
        .collect();
    if !dead.is_empty() {
        return Err(AppError::Run(format!(
            "every run failed for {} (see table.md)",
            dead.join(", ")
        )));
    }
    Ok(())
}

/// A markdown table: RMSE and NLL (mean +- sd) with the paper's RMSE.
fn render(cells: &[Cell], seeds: u64, wall: f64) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| dataset | sampler | RMSE (mean +- sd over the runs that finished) | paper RMSE | test NLL | failed runs |\n|---|---|---|---|---|---|"
    );
    for c in cells {
        let failed = c.runs.iter().filter(|r| r.error.is_some()).count();
        // A cell where no run finished has no mean: a dash, not NaN.
        let pm = |(m, sd): (f64, f64)| {
            if m.is_finite() {
                output::mean_pm(m, sd)
            } else {
                "-".into()
            }
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {failed} of {seeds} |",
            c.dataset,
            c.sampler,
            pm(c.rmse),
            c.paper_rmse.map_or("-".into(), |v| format!("{v:.2}")),
            pm(c.nll),
        );
    }
    let _ = writeln!(s, "\nwall time {wall:.0} s");
    s
}
