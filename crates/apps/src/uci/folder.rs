//! A `sgmcmc uci` run folder: the settings it records (`config.toml`), a new run's folder, the
//! repeat of a `config.toml` (`--config`) and the continued folder (`--resume`), whose data are
//! checked against the digest it records; the seeds' runs with their files.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sgmcmc_data::UciDataset;
use sgmcmc_engine::DeviceChoice;
use sgmcmc_engine::experiment::Console;
use sgmcmc_engine::experiment::regression::{RegressionRun, RunFiles, SeriesRun};
use sgmcmc_engine::experiment::{DataDigest, DataRecord};

use super::{FILES, NoiseChoice, UciArgs, check_counts, dataset_dir, run_of, split_of};
use crate::error::AppError;
use crate::output;

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

/// A run ready to start or continue: its settings (written to `out/config.toml`), its data and
/// folder, and whether it continues one.
pub(super) struct Prepared {
    pub(super) config: UciConfig,
    pub(super) data: UciDataset,
    pub(super) out: PathBuf,
    pub(super) resume: bool,
}

/// A run that starts in `out` (a new one or a repeat): its settings written to `config.toml`.
fn started(config: UciConfig, data: UciDataset, out: PathBuf) -> Result<Prepared, AppError> {
    output::write_toml(&out.join("config.toml"), &config)?;
    Ok(Prepared {
        config,
        data,
        out,
        resume: false,
    })
}

/// The run `a` asks for: a new one (its folder prepared), the one a `config.toml` describes
/// (`--config`), or the one in a folder to continue (`--resume`).
pub(super) fn prepare(a: &UciArgs) -> Result<Prepared, AppError> {
    if let Some(dir) = &a.job.resume {
        return resume(dir);
    }
    if let Some(path) = &a.config {
        return repeat(a, path);
    }
    check_counts(a)?;
    let out = a.output.dir_or(|| {
        let suffix = match a.noise {
            NoiseChoice::Fixed => "",
            NoiseChoice::Learned => "-learned",
        };
        PathBuf::from(format!("runs/uci-{}-{}{suffix}", a.dataset, a.sampler))
    });
    let mut config = UciConfig {
        dataset: a.dataset.clone(),
        data_dir: a.data.given().map(Path::to_path_buf),
        seeds: a.seeds,
        device: a.device.checked("uci")?,
        run: run_of(a, &a.dataset, &a.sampler)?,
        checkpoint_every: a.checkpoint_every,
        save_samples: a.save_samples,
        data: None,
    };
    a.output.fresh(&out, FILES)?;
    let dir = dataset_dir(config.data_dir.as_deref(), &config.dataset);
    let data = load(&dir)?;
    config.data = Some(DataRecord::new(&dir, digest(&data))?);
    started(config, data, out)
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
pub(super) fn recorded_data(config: &UciConfig, path: &Path) -> Result<UciDataset, AppError> {
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
pub(super) fn check_run(run: &RegressionRun) -> Result<(), AppError> {
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
    if let Some(dir) = a.data.given() {
        config.data_dir = Some(dir.to_path_buf());
    }
    let out = a.output.dir_or(|| {
        PathBuf::from(format!(
            "runs/uci-{}-{}",
            config.dataset, config.run.sampler.name
        ))
    });
    let recorded = config.data.as_ref().filter(|_| a.data.given().is_none());
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
    config.device.tensor_device("uci")?;
    a.output.fresh(&out, FILES)?;
    started(config, data, out)
}

/// The seeds of a prepared configuration, each on its split, with its files in `seed-K`
/// when the run checkpoints or saves samples.
pub(super) fn seed_runs(p: &Prepared) -> Vec<SeriesRun<'_>> {
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
