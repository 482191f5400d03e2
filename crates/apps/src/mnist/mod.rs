//! `sgmcmc mnist`: mode exploration on MNIST digits 0-4 with the papers' CNN (thesis sec.
//! 6.4.1, E.4.1, 7.2.3): SGD and the SGLD family get stuck in one low-loss region, the
//! contour samplers (ICSGLD, AWSGLD) keep travelling between high and low loss while their
//! weighted model average stays accurate.
//!
//! `sgmcmc mnist --sampler NAME [--chains P] [--preset paper|cpu]` runs one sampler;
//! `--sampler all` runs the comparison set one after another and overlays them;
//! `--resume RUN_DIR` continues a checkpointed run exactly; `--compare RUN ...` overlays runs;
//! `--trajectory` draws the 2-class weight-space paths (Fig. 6.2 / 7.5).
//! `mpirun -np R sgmcmc mnist --sampler icsgld --chains P --distributed` spreads the `P` chains
//! over `R` ranks (feature `mpi`); rank 0 writes the run folder, the same files with the same
//! bytes as the one-process run ([`mod@run`] says how).
//!
//! **How the model average is weighted.** By default as the reference code that produced the
//! papers' MNIST and CIFAR figures weighs it: a sample's weight is `theta[J]` (0 in the top bin),
//! not the papers' `theta[J]^zeta`, which at `zeta = 3e4` leaves one effective model; the
//! chains' models are pooled into one average of softmax probabilities. The measured
//! comparison of both weightings and of the samplers' loss and entropy is in
//! `docs/experiments/mnist.md`.
//!
//! `--sampler all` runs the set in [`STORY`].

pub mod compare;
pub mod config;
pub mod data;
pub mod eval;
pub mod report;
pub mod run;
pub mod trajectory;

use std::path::PathBuf;

use clap::Args;
use sgmcmc_engine::experiment::{RunData, with_parts};
use sgmcmc_engine::settings::ConfigFile;
use sgmcmc_engine::{Length, flags_over};
use sgmcmc_samplers::control::WeightRule;

use crate::error::AppError;
use crate::run_flags::RunFlags;
use config::{MNIST_SAMPLERS, MnistConfig};
use data::MnistData;

/// The samplers `--sampler all` runs (the story of Fig. 6.2 / 7.4).
pub const STORY: &[&str] = &[
    "sgd",
    "sgld",
    "sgld-high",
    "psgld",
    "sghmc",
    "cycsgld",
    "icsgld",
    "awsgld",
];

/// `--bma-weights`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BmaWeights {
    /// `theta[J]^zeta`.
    Bin,
    /// `Psi_theta(U)^zeta`.
    Interpolated,
    /// `theta[J]`.
    Reference,
}

impl BmaWeights {
    fn rule(self) -> WeightRule {
        match self {
            Self::Bin => WeightRule::Bin,
            Self::Interpolated => WeightRule::Interpolated,
            Self::Reference => WeightRule::Reference,
        }
    }
}

/// Options of `sgmcmc mnist`. A run's settings resolve as preset < `--config` < flags; it
/// writes into `--out`, by default `runs/mnist-PRESET-SAMPLER`.
#[derive(Debug, Args)]
pub struct MnistArgs {
    /// Sampler name, or `all` for the comparison set; `--list` prints them [default: the
    /// config file's, else icsgld].
    #[arg(long)]
    pub sampler: Option<String>,
    /// Settings: `paper` (the thesis' protocol) or `cpu` (scaled to this machine) [default:
    /// the config file's, else cpu].
    #[arg(long)]
    pub preset: Option<String>,
    /// Chains (ICSGLD's P; independent chains otherwise). Default: 4 for icsgld, else 1.
    #[arg(long)]
    pub chains: Option<usize>,
    /// Epochs (overrides the preset).
    #[arg(long)]
    pub epochs: Option<usize>,
    /// Minibatch size (overrides the preset).
    #[arg(long)]
    pub batch: Option<usize>,
    /// Training images per class (overrides the preset; 0 = all).
    #[arg(long)]
    pub train_per_class: Option<usize>,
    /// Contour zeta (overrides the preset).
    #[arg(long)]
    pub zeta: Option<f64>,
    /// Sampling temperature (overrides the preset).
    #[arg(long)]
    pub temperature: Option<f64>,
    /// Importance weights of the contour samplers' model average: `reference` (the reference
    /// code's `theta[J]`, no power; the default), `bin` (the papers' `theta[J]^zeta`) or
    /// `interpolated`.
    #[arg(long, value_enum)]
    pub bma_weights: Option<BmaWeights>,
    /// Evaluate every this many epochs (overrides the preset).
    #[arg(long)]
    pub eval_every: Option<usize>,
    /// Checkpoint every this many epochs (overrides the preset; 0 = never).
    #[arg(long)]
    pub checkpoint_every: Option<usize>,
    /// Stop after this many epochs (a checkpoint is written; continue with `--resume`).
    #[arg(long)]
    pub stop_after: Option<usize>,
    /// Overlay finished runs (their directories) into `--out`.
    #[arg(long, num_args = 1..)]
    pub compare: Vec<PathBuf>,
    /// Draw the 2-class trajectory picture (Fig. 6.2 / 7.5) into `--out` instead of a run.
    #[arg(long)]
    pub trajectory: bool,
    /// Print the samplers and presets and exit.
    #[arg(long)]
    pub list: bool,
    /// Where and how the run runs.
    #[command(flatten)]
    pub run: RunFlags,
}

/// What one run writes into its folder (the checkpoint, or a distributed run's manifest, the
/// settings, the tables, figures and summary of [`report`]; a distributed run's checkpoint
/// parts beside them, [`sgmcmc_engine::experiment::with_parts`]).
pub const FILES: &[&str] = &[
    "checkpoint.cbor",
    "config.toml",
    "loss.csv",
    "loss.png",
    "multiplier.png",
    "accuracy.csv",
    "accuracy.png",
    "entropy.csv",
    "entropy_cdf.png",
    "summary.json",
    sgmcmc_engine::experiment::TRACE_FILE,
    sgmcmc_engine::experiment::MODEL_FILE,
    sgmcmc_engine::experiment::SAMPLES_DIR,
];

/// The preset `a` starts from: `--preset`, else the config file's, else `cpu`.
fn preset_of<'a>(a: &'a MnistArgs, file: Option<&'a ConfigFile>) -> &'a str {
    a.preset
        .as_deref()
        .or_else(|| file.and_then(|f| f.string("preset")))
        .unwrap_or("cpu")
}

/// The samplers `a` runs: `--sampler` (`all` for [`STORY`]), else the config file's, else
/// `icsgld`.
fn samplers_of<'a>(a: &'a MnistArgs, file: Option<&'a ConfigFile>) -> Vec<&'a str> {
    match a.sampler.as_deref() {
        Some("all") => STORY.to_vec(),
        Some(s) => vec![s],
        None => vec![file.and_then(|f| f.string("sampler")).unwrap_or("icsgld")],
    }
}

/// The configuration `a` asks for, for `sampler`: the preset, the config file laid over it,
/// then the flags.
pub fn config_of(
    a: &MnistArgs,
    file: Option<&ConfigFile>,
    sampler: &str,
) -> Result<MnistConfig, AppError> {
    let mut c = MnistConfig::preset(preset_of(a, file), sampler)?;
    if let Some(f) = file {
        c = f.over(&c)?;
        c.sampler = sampler.to_string();
    }
    flags_over!(c, a.run.settings; seed);
    flags_over!(c, a; chains, epochs, batch, zeta, temperature, eval_every, checkpoint_every);
    if let Some(v) = a.train_per_class {
        c.train_per_class = (v > 0).then_some(v);
    }
    if let Some(v) = a.bma_weights {
        c.weights = v.rule();
    }
    c.save_samples |= a.run.save_samples;
    c.validate()?;
    Ok(c)
}

/// The settings and folder of the one sampler `a` names (`--distributed` runs one sampler's
/// chains over the ranks).
fn one_run(a: &MnistArgs) -> Result<(MnistConfig, PathBuf), AppError> {
    let file = a.run.settings.file()?;
    let samplers = samplers_of(a, file.as_ref());
    let [sampler] = samplers.as_slice() else {
        return Err(AppError::Usage(
            "--distributed runs one sampler's chains over the ranks; `--sampler all` runs in one \
             process"
                .into(),
        ));
    };
    let config = config_of(a, file.as_ref(), sampler)?;
    Ok((config, run_dir(a, preset_of(a, file.as_ref()), sampler, 1)))
}

/// The folder of the run of `sampler`, one of `runs` samplers: `--out` itself for one, a
/// subfolder of it for each of several, else `runs/mnist-PRESET-SAMPLER`.
fn run_dir(a: &MnistArgs, preset: &str, sampler: &str, runs: usize) -> PathBuf {
    match (&a.run.output.out, runs) {
        (Some(o), 1) => o.clone(),
        (Some(o), _) => o.join(sampler),
        (None, _) => PathBuf::from(format!("runs/mnist-{preset}-{sampler}")),
    }
}

/// `sgmcmc mnist` in the experiment skeleton ([`sgmcmc_engine::experiment`]; its filling is in
/// [`mod@run`]).
pub struct Mnist;

/// `sgmcmc mnist`.
pub fn run(a: &MnistArgs) -> Result<(), AppError> {
    if a.list {
        for (name, what) in MNIST_SAMPLERS {
            println!("{name:>10}  {what}");
        }
        println!("presets: paper (thesis protocol), cpu (scaled; see `config.toml` of a run)");
        return Ok(());
    }
    if a.run.job.distributed && (!a.compare.is_empty() || a.trajectory) {
        return Err(AppError::Usage(
            "--distributed spreads one run's chains over ranks; --compare and --trajectory run \
             in one process"
                .into(),
        ));
    }
    if !a.compare.is_empty() {
        let out = a.run.output.dir_or(|| PathBuf::from("runs/mnist-compare"));
        let out = a.run.output.fresh(&out, compare::FILES)?;
        return compare::compare(&a.compare, &out);
    }
    if a.trajectory {
        let preset = preset_of(a, None);
        let out = a
            .run
            .output
            .dir_or(|| PathBuf::from(format!("runs/mnist-trajectory-{preset}")));
        let device = a.run.device.tensor().tensor_device("mnist")?.autodiff();
        let mut s = trajectory::TrajectorySettings::default();
        if let Some(e) = a.epochs {
            s.epochs = e;
        }
        if let Some(n) = a.train_per_class {
            s.per_class = n.max(1);
        }
        let out = a.run.output.fresh(&out, trajectory::FILES)?;
        return trajectory::trajectory(&a.run.data.root(), preset, &s, &out, &device);
    }
    if a.stop_after == Some(0) {
        return Err(AppError::Usage(
            "--stop-after must be >= 1 epoch (a run stopped before its first epoch writes nothing)"
                .into(),
        ));
    }
    let stop = a.stop_after.map(|e| Length::Epochs(e as u64));
    if let Some(done) = a.run.resume::<Mnist>(stop) {
        return done;
    }
    if a.run.job.distributed {
        return a.run.over_ranks::<Mnist>(FILES, || one_run(a), stop);
    }
    let file = a.run.settings.file()?;
    let samplers = samplers_of(a, file.as_ref());
    if file.is_some() && samplers.len() > 1 {
        return Err(AppError::Usage(
            "--config holds the settings of one run; it cannot go with --sampler all".into(),
        ));
    }
    let configs = samplers
        .iter()
        .map(|s| config_of(a, file.as_ref(), s))
        .collect::<Result<Vec<_>, _>>()?;
    let preset = preset_of(a, file.as_ref());
    a.run.device.checked("mnist")?;
    // Every folder is checked before the first run starts: the comparison's (holding the runs'
    // folders under `--out`) first, then each run's.
    let joint = (samplers.len() > 1).then(|| {
        a.run
            .output
            .dir_or(|| PathBuf::from(format!("runs/mnist-{preset}")))
    });
    if let Some(out) = &joint {
        let own: Vec<&str> = compare::FILES.iter().chain(STORY).copied().collect();
        a.run.output.fresh(out, &own)?;
    }
    let dirs = samplers
        .iter()
        .map(|s| {
            let dir = run_dir(a, preset, s, samplers.len());
            a.run.output.fresh(&dir, &with_parts(FILES))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut data: Option<MnistData> = None;
    for (config, dir) in configs.iter().zip(&dirs) {
        let d = match &data {
            Some(d) => d,
            None => data.insert(MnistData::load(&a.run.data.root(), config)?),
        };
        sgmcmc_engine::experiment::execute::<Mnist>(
            config,
            d,
            dir,
            a.run.device.tensor(),
            None,
            stop,
            a.run.output.quiet,
        )?;
    }
    if let Some(out) = joint.filter(|_| stop.is_none()) {
        compare::compare(&dirs, &out)?;
    }
    Ok(())
}
