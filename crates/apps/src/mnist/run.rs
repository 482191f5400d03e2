//! One `sgmcmc mnist` run: the training loop, evaluation points, checkpoints and resume.
//!
//! Epoch `e` visits the training images in the order [`epoch_order`]`(N, seed, e)` in batches
//! (the last partial batch dropped). At the start of every `eval_every`-th epoch and of the last
//! one, each chain's current model is scored on the test digits, and, past the burn-in (and in
//! the sampling phase of cyclical schedules), added to the Bayesian model averages with the log
//! importance weight the sampler reports for that very point (the pre-move point of the epoch's
//! first step). A checkpoint after every `checkpoint_every`-th epoch holds the sampler state
//! and everything recorded so far; resuming from it replays the rest of the run exactly.

use std::path::{Path, PathBuf};
use std::time::Instant;

use burn::tensor::Device;
use serde::{Deserialize, Serialize};
use sgmcmc_data::epoch_order;
use sgmcmc_models::{Cnn, CnnConfig, Likelihood, Posterior, Scale};
use sgmcmc_samplers::checkpoint::SamplerState;
use sgmcmc_samplers::control::Phase;
use sgmcmc_samplers::ensemble::ModuleEnsemble;

use crate::error::AppError;
use crate::mnist::config::MnistConfig;
use crate::mnist::data::{MnistData, batch};
use crate::mnist::eval::{Averages, scores};
use crate::net_runner::{NetRunner, seeded};
use crate::output::{write_atomic, write_json};
use crate::progress;

/// One step of one chain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepRow {
    /// Step index.
    pub step: u64,
    /// Chain.
    pub chain: usize,
    /// Stochastic energy `U~` (full-data scale) before the move.
    pub energy: f64,
    /// Gradient multiplier of the move.
    pub multiplier: f64,
    /// Log importance weight of the pre-move point.
    pub log_weight: f64,
}

/// One evaluation point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvalRow {
    /// Epochs done.
    pub epoch: usize,
    /// Steps done.
    pub step: u64,
    /// Test accuracy of each chain's current model.
    pub chain_accuracy: Vec<f64>,
    /// Test accuracy of the model average so far (`None` before the first collected model).
    pub bma_accuracy: Option<f64>,
    /// Test NLL of the model average so far.
    pub bma_nll: Option<f64>,
    /// Kish's effective number of averaged models.
    pub effective_models: f64,
}

/// What a run has recorded so far (checkpointed).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Epochs done.
    pub epochs_done: usize,
    /// Per-step rows.
    pub steps: Vec<StepRow>,
    /// Evaluation rows.
    pub evals: Vec<EvalRow>,
    /// Model averages.
    pub averages: Averages,
    /// Training wall time so far (excluding evaluation), seconds.
    pub train_seconds: f64,
    /// Evaluation wall time so far, seconds.
    pub eval_seconds: f64,
}

/// A checkpoint file (`checkpoint.cbor`): the configuration, the record and the sampler state.
/// CBOR stores `f64`/`f32` as their exact bits; JSON text would not round-trip every `f64`
/// through serde_json's default parser, and resume must be exact.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Run settings.
    pub config: MnistConfig,
    /// Recorded so far.
    pub record: Record,
    /// Sampler state after `record.epochs_done` epochs.
    pub sampler: SamplerState,
}

/// The checkpoint file of a run directory.
pub fn checkpoint_path(dir: &Path) -> PathBuf {
    dir.join("checkpoint.cbor")
}

/// Reads a run directory's checkpoint.
pub fn read_checkpoint(dir: &Path) -> Result<Checkpoint, AppError> {
    let path = checkpoint_path(dir);
    let bytes = std::fs::read(&path)
        .map_err(|e| AppError::Input(format!("cannot read {}: {e}", path.display())))?;
    ciborium::from_reader(bytes.as_slice())
        .map_err(|e| AppError::Input(format!("{} is not a checkpoint: {e}", path.display())))
}

/// The CNN of chain `p`, initialised from `seed` (burn's default Kaiming-uniform init).
fn init_chain(config: &MnistConfig, image_size: usize, p: usize, device: &Device) -> Cnn {
    let seed = config.seed.wrapping_mul(1000).wrapping_add(p as u64);
    seeded(device, seed, || {
        CnnConfig {
            channels: config.channels,
            hidden: config.hidden,
            classes: config.classes.len(),
            image_size,
            ..CnnConfig::default()
        }
        .init(device)
    })
}

/// Steps per epoch.
pub fn steps_per_epoch(config: &MnistConfig, data: &MnistData) -> usize {
    data.train.len() / config.batch
}

/// Builds the sampler of `config` on the autodiff `device`.
pub fn build(
    config: &MnistConfig,
    data: &MnistData,
    device: &Device,
) -> Result<NetRunner<Cnn>, AppError> {
    let posterior = Posterior {
        likelihood: Likelihood::Categorical,
        scale: Scale {
            n_data: data.train.len(),
            prior_precision: config.prior_precision,
        },
    };
    let modules = (0..config.chains)
        .map(|p| init_chain(config, data.train.rows, p, device))
        .collect();
    let ensemble = ModuleEnsemble::new(posterior, modules, config.seed)?;
    let total = (config.epochs * steps_per_epoch(config, data)) as u64;
    let runner = NetRunner::new(&config.spec(total)?, ensemble)?;
    if let Some(reach) = runner.psi_reach(total).filter(|r| *r < 0.01) {
        // E.g. `csgld`: the power field at zeta 3e4 from a uniform theta over 10,000 bins.
        eprintln!(
            "warning: {}: theta cannot move in this run (the multiplier can leave 1 by at most \
             {reach:.1e}); it samples as its base kernel",
            config.sampler
        );
    }
    Ok(runner)
}

/// Where a run stops early (tests of resume).
#[derive(Clone, Copy, Debug, Default)]
pub struct Stop {
    /// Stop after this many epochs (a checkpoint is written there).
    pub after_epochs: Option<usize>,
}

fn is_eval_epoch(config: &MnistConfig, e: usize) -> bool {
    e.is_multiple_of(config.eval_every) || e + 1 == config.epochs
}

/// Runs (or continues) `config` from `record`/`runner` until the end or `stop`, checkpointing
/// into `dir`. Returns the record.
#[allow(clippy::too_many_arguments)]
pub fn train(
    config: &MnistConfig,
    data: &MnistData,
    runner: &mut NetRunner<Cnn>,
    mut record: Record,
    dir: &Path,
    device: &Device,
    stop: Stop,
    show_progress: bool,
) -> Result<Record, AppError> {
    let per_epoch = steps_per_epoch(config, data);
    let plain = device.clone().inner();
    let burn_epochs = (config.burn_fraction * config.epochs as f64).floor() as usize;
    let classes = config.classes.len();
    let last = stop
        .after_epochs
        .unwrap_or(config.epochs)
        .min(config.epochs);
    let pb = progress::bar(
        ((last.saturating_sub(record.epochs_done)) * per_epoch) as u64,
        &config.sampler,
        show_progress,
    );
    for e in record.epochs_done..last {
        let order = epoch_order(data.train.len(), config.seed, e as u64);
        let eval_now = is_eval_epoch(config, e);
        for (i, idx) in order.chunks_exact(config.batch).enumerate() {
            let start = Instant::now();
            let b = batch(&data.train, idx, device);
            // The models of an evaluation point are the pre-move points of this step.
            let held: Option<Vec<Cnn>> =
                (eval_now && i == 0).then(|| runner.modules().into_iter().cloned().collect());
            let report = runner.step(&b)?;
            let step = report.step;
            let multipliers = NetRunner::<Cnn>::multipliers(report);
            let log_weights = report.log_weights.clone();
            let sampling = report.phase != Some(Phase::Exploration);
            for (p, &energy) in report.energies.iter().enumerate() {
                record.steps.push(StepRow {
                    step,
                    chain: p,
                    energy,
                    multiplier: multipliers[p],
                    log_weight: log_weights[p],
                });
            }
            pb.inc(1);
            record.train_seconds += start.elapsed().as_secs_f64();
            if let Some(models) = held {
                let t = Instant::now();
                let mut chain_accuracy = Vec::new();
                for (p, m) in models.iter().enumerate() {
                    let probs = if e >= burn_epochs && sampling {
                        record.averages.add(m, log_weights[p], data, &plain)?
                    } else {
                        crate::mnist::eval::probabilities(m, &data.test, &plain)?
                    };
                    chain_accuracy.push(scores(&probs, &data.test, classes).accuracy);
                }
                let bma = record
                    .averages
                    .test
                    .mean()
                    .map(|m| scores(&m, &data.test, classes));
                record.evals.push(EvalRow {
                    epoch: e,
                    step,
                    chain_accuracy,
                    bma_accuracy: bma.map(|s| s.accuracy),
                    bma_nll: bma.map(|s| s.nll),
                    effective_models: record.averages.test.effective_models(),
                });
                record.eval_seconds += t.elapsed().as_secs_f64();
            }
        }
        record.epochs_done = e + 1;
        let due = config.checkpoint_every > 0
            && record.epochs_done.is_multiple_of(config.checkpoint_every);
        if due || Some(record.epochs_done) == stop.after_epochs {
            save_checkpoint(dir, config, &record, runner)?;
        }
    }
    pb.finish_and_clear();
    Ok(record)
}

/// Writes `dir/checkpoint.json` atomically.
pub fn save_checkpoint(
    dir: &Path,
    config: &MnistConfig,
    record: &Record,
    runner: &NetRunner<Cnn>,
) -> Result<(), AppError> {
    let c = Checkpoint {
        config: config.clone(),
        record: record.clone(),
        sampler: runner.state()?,
    };
    let mut bytes = Vec::new();
    ciborium::into_writer(&c, &mut bytes).map_err(|e| AppError::Run(e.to_string()))?;
    write_atomic(&checkpoint_path(dir), &bytes)?;
    write_json(&dir.join("config.json"), config)
}
