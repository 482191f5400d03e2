//! `sgmcmc images`: the papers' image classification tables (thesis Tables 2.1, 3.1, 4.2,
//! 5.2, 6.1) with ResNet20/32/56 on CIFAR-10/100 (SVHN out of distribution), and the same
//! pipeline on Fashion-MNIST and MNIST (each the other's out-of-distribution set), which this
//! machine has.
//!
//! `sgmcmc images --dataset D --model M --sampler S --preset cpu|gpu` runs one sampler;
//! `--preset ROW` runs a table row (`--list` names them) under `--protocol gpu|cpu`, and writes
//! the paper's numbers beside ours in `summary.json`; `--resume DIR` continues a checkpointed
//! run exactly; `mpirun -np R sgmcmc images ... --distributed` spreads the chains over `R`
//! ranks ([`distributed`]).
//!
//! The pipeline of the reference code: per-channel normalisation with the training set's
//! statistics, random crops after 4-pixel zero padding and horizontal flips
//! ([`sgmcmc_data::augment`]), the energy `N * mean cross-entropy + (25 / 2) |theta|^2`
//! ("weight decay 25"), BatchNorm running statistics carried by each network and used at
//! evaluation ([`eval`]), models collected from `burn_epochs` on at every evaluation.

pub mod config;
pub mod data;
pub mod distributed;
pub mod eval;
pub mod presets;
pub mod report;
pub mod run;
pub mod swag;

use std::path::PathBuf;

use clap::Args;
use sgmcmc_engine::experiment::{RunData, with_parts};
use sgmcmc_engine::settings::ConfigFile;
use sgmcmc_engine::{Length, flags_over};

use crate::error::AppError;
use crate::run_flags::RunFlags;
use config::{DATASETS, IMAGES_SAMPLERS, ImagesConfig};
use data::ImagesData;
use presets::{table_config, table_rows};

/// Options of `sgmcmc images`. A run's settings resolve as preset < `--config` < flags; it
/// writes into `--out`, by default `runs/images-DATASET-PRESET-SAMPLER`.
#[derive(Debug, Args)]
pub struct ImagesArgs {
    /// Sampler name (`--list` prints them) [default: the config file's, else sghmc].
    #[arg(long)]
    pub sampler: Option<String>,
    /// `cpu` (shortened schedule), `gpu` (the papers' protocol) or a table row (`--list`)
    /// [default: the config file's, else cpu].
    #[arg(long)]
    pub preset: Option<String>,
    /// Protocol of a table-row preset: `gpu` (the paper's schedule) or `cpu`.
    #[arg(long, default_value = "gpu")]
    pub protocol: String,
    /// Data set: fashion-mnist, mnist, cifar10, cifar100, svhn, synthetic [default:
    /// fashion-mnist].
    #[arg(long)]
    pub dataset: Option<String>,
    /// Model: resnet20, resnet32, resnet56, wrn16-8, wrn28-10 [default: resnet20].
    #[arg(long)]
    pub model: Option<String>,
    /// Chains (overrides the preset).
    #[arg(long)]
    pub chains: Option<usize>,
    /// Epochs, fractions allowed (overrides the preset).
    #[arg(long)]
    pub epochs: Option<f64>,
    /// Minibatch size (overrides the preset).
    #[arg(long)]
    pub batch: Option<usize>,
    /// Learning rate at full-data scale (overrides the preset).
    #[arg(long)]
    pub lr: Option<f64>,
    /// Sampling temperature (overrides the preset).
    #[arg(long)]
    pub temperature: Option<f64>,
    /// Training images used (0 = all; overrides the preset).
    #[arg(long)]
    pub train_limit: Option<usize>,
    /// Test images scored (0 = all; overrides the preset).
    #[arg(long)]
    pub test_limit: Option<usize>,
    /// Out-of-distribution images scored (0 = all; overrides the preset).
    #[arg(long)]
    pub ood_limit: Option<usize>,
    /// Test images of the chains' accuracy curves at evaluations that collect nothing (0 =
    /// all; overrides the preset).
    #[arg(long)]
    pub curve_limit: Option<usize>,
    /// Evaluate every this many epochs (overrides the preset).
    #[arg(long)]
    pub eval_every: Option<f64>,
    /// Collect models from this epoch on (overrides the preset).
    #[arg(long)]
    pub burn_epochs: Option<f64>,
    /// Checkpoint every this many epochs (0 = never; overrides the preset).
    #[arg(long)]
    pub checkpoint_every: Option<f64>,
    /// Stop after this many steps, >= 1 (a checkpoint is written; continue with `--resume`).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub stop_after: Option<u64>,
    /// Print the samplers, data sets and presets and exit.
    #[arg(long)]
    pub list: bool,
    /// Where and how the run runs.
    #[command(flatten)]
    pub run: RunFlags,
}

/// What one run writes into its folder.
pub const FILES: &[&str] = &[
    "checkpoint.cbor",
    "config.toml",
    "energy.csv",
    "accuracy.csv",
    "accuracy.png",
    "calibration.csv",
    "calibration.png",
    "ood_entropy.csv",
    "ood_entropy_cdf.png",
    "summary.json",
    sgmcmc_engine::experiment::TRACE_FILE,
    sgmcmc_engine::experiment::MODEL_FILE,
    sgmcmc_engine::experiment::SAMPLES_DIR,
];

/// The configuration `a` asks for: the preset (generic or a table row), the config file laid
/// over it, then the flags.
pub fn config_of(a: &ImagesArgs, file: Option<&ConfigFile>) -> Result<ImagesConfig, AppError> {
    let from_file = |key: &str| file.and_then(|f| f.string(key));
    let preset = a.preset.as_deref().or(from_file("preset")).unwrap_or("cpu");
    if !matches!(a.protocol.as_str(), "gpu" | "cpu") {
        return Err(AppError::Usage(format!(
            "unknown protocol `{}` (known: gpu, cpu)",
            a.protocol
        )));
    }
    let mut c = if matches!(preset, "cpu" | "gpu") {
        ImagesConfig::preset(
            preset,
            a.dataset
                .as_deref()
                .or(from_file("dataset"))
                .unwrap_or("fashion-mnist"),
            a.model
                .as_deref()
                .or(from_file("model"))
                .unwrap_or("resnet20"),
            a.sampler
                .as_deref()
                .or(from_file("sampler"))
                .unwrap_or("sghmc"),
        )?
    } else {
        // An unknown name is refused as such before the flags a row fixes.
        let row = table_config(preset, &a.protocol)?;
        if a.sampler.is_some() || a.dataset.is_some() || a.model.is_some() {
            return Err(AppError::Usage(format!(
                "preset `{preset}` is a table row: it fixes --sampler, --dataset and --model"
            )));
        }
        row
    };
    if let Some(f) = file {
        c = f.over(&c)?;
    }
    flags_over!(c, a.run.settings; seed);
    flags_over!(c, a; chains, epochs, batch, lr, temperature, train_limit, test_limit,
        ood_limit, curve_limit, eval_every, burn_epochs, checkpoint_every);
    c.save_samples |= a.run.save_samples;
    c.validate()?;
    Ok(c)
}

/// `sgmcmc images` in the experiment skeleton ([`sgmcmc_engine::experiment`]; its filling is in
/// [`mod@run`]).
pub struct Images;

/// The settings `a` asks for (`--config` and the flags) and the run folder: `--out`, else
/// `runs/images-DATASET-PRESET-SAMPLER`.
fn resolved(a: &ImagesArgs) -> Result<(ImagesConfig, PathBuf), AppError> {
    let file = a.run.settings.file()?;
    let config = config_of(a, file.as_ref())?;
    let dir = a.run.output.dir_or(|| {
        PathBuf::from(format!(
            "runs/images-{}-{}-{}",
            config.dataset, config.preset, config.sampler
        ))
    });
    Ok((config, dir))
}

fn list() {
    println!("samplers:");
    for (name, what) in IMAGES_SAMPLERS {
        println!("  {name:>11}  {what}");
    }
    println!("data sets (out-of-distribution set):");
    for (name, ood) in DATASETS {
        println!("  {name:>13}  ({ood})");
    }
    println!("presets: cpu (shortened schedule), gpu (the papers' protocol), and the table rows:");
    for r in table_rows() {
        println!(
            "  {:<36} Table {:<4} {:<12} {:<9} {:<9} {}",
            r.name,
            r.table,
            r.method,
            r.dataset(),
            r.model(),
            r.sampler()
        );
    }
}

/// `sgmcmc images`.
pub fn run(a: &ImagesArgs) -> Result<(), AppError> {
    if a.list {
        list();
        return Ok(());
    }
    if a.stop_after == Some(0) {
        return Err(AppError::Usage("--stop-after must be >= 1 step".into()));
    }
    let stop = a.stop_after.map(Length::Steps);
    if let Some(done) = a.run.resume::<Images>(stop) {
        return done;
    }
    if a.run.job.distributed {
        return a.run.over_ranks::<Images>(FILES, || resolved(a), stop);
    }
    let (config, dir) = resolved(a)?;
    a.run.device.checked("images")?;
    let dir = a.run.output.fresh(&dir, &with_parts(FILES))?;
    let data = ImagesData::load(&a.run.data.root(), &config)?;
    sgmcmc_engine::experiment::execute::<Images>(
        &config,
        &data,
        &dir,
        a.run.device.tensor(),
        None,
        stop,
        a.run.output.quiet,
    )?;
    Ok(())
}
