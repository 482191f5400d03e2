//! One `sgmcmc mnist` run on the engine: the sampler, the batches, the evaluations,
//! checkpoints and resume.
//!
//! Epoch `e` visits the training images in the order `epoch_order(N, seed, e)` in batches
//! (the last partial batch dropped). At the start of every `eval_every`-th epoch and of the last
//! one, each chain's current model is scored on the test digits, and, past the burn-in and the
//! initial networks (and in the sampling phase of cyclical schedules), added to the Bayesian
//! model averages with the log importance weight the sampler reports for that very point (the
//! pre-move point of the epoch's first step); after the last step the trained chains are scored
//! once more. A checkpoint after every `checkpoint_every`-th epoch holds the sampler state and
//! everything recorded so far; resuming from it replays the rest of the run exactly.
//!
//! Over the ranks of `mpirun` (`--distributed`) each rank steps its block of chains and
//! records their per-step rows; the engine's [`Evaluate`] scores every rank's chains and folds
//! the predictions on rank 0 in chain order (the order of a one-process run, so the averages
//! are its bits); at the end rank 0 gathers the rows. Checkpoints are one part per rank and a
//! manifest.

use std::path::Path;

use burn::tensor::Device;
use serde::{Deserialize, Serialize};
use sgmcmc_data::datasets::{ChannelBatcher, ImageBatcher};
use sgmcmc_data::mnist::{MNIST_MEAN, MNIST_STD};
use sgmcmc_engine::DeviceChoice;
use sgmcmc_engine::experiment::{Build, NetExperiment, RunMeta, Schedule, Session, drive};
use sgmcmc_engine::observers::{Evaluate, Scored, Scoring, TracePart};
use sgmcmc_engine::predict::SavedModel;
use sgmcmc_engine::predict::classifier::{ClassifierInput, ClassifierNetwork};
use sgmcmc_engine::{BatchSource as _, Checkpoint, DatasetBatches, Length, Progress, init};
use sgmcmc_models::posterior::Batch;
use sgmcmc_models::{Cnn, CnnConfig, Likelihood, Posterior, Scale};
use sgmcmc_samplers::comm::Placement;
use sgmcmc_samplers::control::Phase;
use sgmcmc_samplers::ensemble::ModuleEnsemble;
use sgmcmc_samplers::registry::AnySampler;

use crate::error::AppError;
use crate::mnist::Mnist;
use crate::mnist::config::MnistConfig;
use crate::mnist::data::MnistData;
use crate::mnist::eval::{Averages, ChainPredictions, scores};

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

/// What a run recorded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Record {
    /// Epochs done.
    pub epochs_done: usize,
    /// Per-step rows of every chain, in step and chain order (of a finished run).
    pub steps: Vec<StepRow>,
    /// Evaluation rows.
    pub evals: Vec<EvalRow>,
    /// Model averages.
    pub averages: Averages,
    /// Training wall time (the steps, evaluation excluded), seconds.
    pub train_seconds: f64,
    /// Evaluation wall time, seconds.
    pub eval_seconds: f64,
    /// The averaged models' energies and log weights, every chain's (on rank 0 of a finished
    /// run).
    pub trace: TracePart,
}

/// What a run's checkpoints record beside the sampler: what `--resume` continues.
pub type MnistMeta = RunMeta<MnistConfig>;

/// Reads a run directory's checkpoint and what it records.
pub fn read_checkpoint(dir: &Path) -> Result<(MnistMeta, Checkpoint), AppError> {
    sgmcmc_engine::experiment::read_checkpoint::<Mnist>(dir)
}

/// The sampler of a run.
pub type MnistSampler = AnySampler<ModuleEnsemble<Cnn, Posterior>>;

/// Steps per epoch.
pub fn steps_per_epoch(config: &MnistConfig, data: &MnistData) -> usize {
    data.train.len() / config.batch
}

/// Builds the sampler of `config` on the autodiff `device`; chain `p` starts from the CNN
/// initialised with [`init::chain_seed`]`(seed, p)` (burn's default Kaiming-uniform init).
pub fn build(
    config: &MnistConfig,
    data: &MnistData,
    device: &Device,
) -> Result<MnistSampler, AppError> {
    Mnist::build(Build {
        config,
        data,
        device,
        placement: Placement::local(config.chains),
    })
}

/// The network of a run.
pub fn cnn_config(config: &MnistConfig, data: &MnistData) -> CnnConfig {
    CnnConfig {
        channels: config.channels,
        hidden: config.hidden,
        classes: config.classes.len(),
        image_size: data.train.rows,
        ..CnnConfig::default()
    }
}

/// What `model.json` says of a run's saved networks: the CNN, the digits its outputs stand
/// for, and the normalisation of its inputs.
fn saved_model(config: &MnistConfig, data: &MnistData) -> SavedModel {
    SavedModel::ImageClassifier(ClassifierInput {
        network: ClassifierNetwork::Cnn(cnn_config(config, data)),
        classes: config.classes.len(),
        class_labels: config.classes.clone(),
        shape: [1, data.train.rows, data.train.cols],
        normaliser: ChannelBatcher {
            mean: vec![MNIST_MEAN],
            std: vec![MNIST_STD],
        },
    })
}

fn is_eval_epoch(config: &MnistConfig, e: usize) -> bool {
    e.is_multiple_of(config.eval_every) || e + 1 == config.epochs
}

/// The first epoch whose starting models join the averages: past the burn-in, and never the
/// initialisation (epoch 0 starts from untrained networks, which are not samples).
fn first_collected(config: &MnistConfig) -> usize {
    ((config.burn_fraction * config.epochs as f64).floor() as usize).max(1)
}

/// The steps whose pre-move models join the average: the first of every evaluation epoch from
/// [`first_collected`] on (the engine leaves out the exploration phase).
fn keeps(config: &MnistConfig, per_epoch: u64) -> impl Fn(u64) -> bool + 'static {
    let (config, first) = (config.clone(), first_collected(config));
    move |k| {
        let e = (k / per_epoch) as usize;
        k.is_multiple_of(per_epoch) && e >= first && is_eval_epoch(&config, e)
    }
}

/// What the evaluations fold on rank 0: the rows and the model averages.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Evaluations {
    evals: Vec<EvalRow>,
    averages: Averages,
}

/// The run's evaluations: at the first step of every evaluation epoch each chain's pre-move
/// model is scored on the test digits and, from [`first_collected`] on and in the sampling
/// phase, added to the model averages with that step's log weight; after the last step the
/// trained chains are scored once more (the last row, what "final" reports), without joining
/// the averages, whose weights are those of pre-move points.
fn evaluations<'a>(
    config: &'a MnistConfig,
    data: &'a MnistData,
    plain: Device,
) -> Evaluate<'a, Cnn, ChainPredictions, Evaluations> {
    let (first, classes) = (first_collected(config), config.classes.len());
    Evaluate::new(
        move |at: &Progress| at.starts_epoch() && is_eval_epoch(config, at.epoch() as usize),
        move |s: &Scoring<'_>, m: &Cnn| {
            let collect = !s.end
                && s.at.epoch() as usize >= first
                && s.report.phase != Some(Phase::Exploration);
            ChainPredictions::of(m, data, &plain, collect).map_err(|e| e.to_string())
        },
        move |st: &mut Evaluations, s: Scored<'_, ChainPredictions>| {
            let mut chain_accuracy = Vec::new();
            for (p, predictions) in s.scores.iter().enumerate() {
                if predictions.collected {
                    st.averages.add(s.report.log_weights[p], predictions);
                }
                chain_accuracy.push(scores(&predictions.test, &data.test, classes).accuracy);
            }
            let bma = st
                .averages
                .test
                .mean()
                .map(|m| scores(&m, &data.test, classes));
            st.evals.push(EvalRow {
                epoch: s.at.epoch() as usize + usize::from(s.end),
                step: s.steps_done(),
                chain_accuracy,
                bma_accuracy: bma.map(|b| b.accuracy),
                bma_nll: bma.map(|b| b.nll),
                effective_models: st.averages.test.effective_models(),
            });
            Ok(())
        },
    )
    .at_end()
}

impl NetExperiment for Mnist {
    const COMMAND: &'static str = "mnist";
    const NOT_OURS: &'static str =
        "not an mnist checkpoint with its data record, or one from an older sgmcmc";
    type Error = AppError;
    type Console = crate::progress::Terminal;
    type Config = MnistConfig;
    type Data = MnistData;
    type Sampler = MnistSampler;
    type Record = Record;

    fn build(parts: Build<'_, Self>) -> Result<MnistSampler, AppError> {
        let (config, data, device, placement) =
            (parts.config, parts.data, parts.device, parts.placement);
        let posterior = Posterior {
            likelihood: Likelihood::Categorical,
            scale: Scale {
                n_data: data.train.len(),
                prior_precision: config.prior_precision,
            },
        };
        let cnn = cnn_config(config, data);
        let (here, leader) = (placement.here(), placement.rank() == 0);
        let modules = init::chains_in(device, config.seed, here.clone(), || cnn.init(device));
        let ensemble = ModuleEnsemble::new_part(posterior, modules, config.seed, here.start)?;
        let total = (config.epochs * steps_per_epoch(config, data)) as u64;
        let sampler = config
            .spec(total)?
            .build_placed(ensemble, config.seed, placement)?;
        if let Some(reach) = sampler
            .multiplier_reach(total)
            .filter(|r| *r < 0.01 && leader)
        {
            // E.g. `csgld`: the power field at zeta 3e4 from a uniform theta over 10,000 bins.
            eprintln!(
                "warning: {}: theta cannot move in this run (the multiplier can leave 1 by at most \
                 {reach:.1e}); it samples as its base kernel",
                config.sampler
            );
        }
        Ok(sampler)
    }

    fn train(
        session: Session<'_, Self>,
        data: &MnistData,
        sampler: &mut MnistSampler,
        device: &Device,
    ) -> Result<Record, AppError> {
        let config = &session.meta.config.clone();
        let per_epoch = steps_per_epoch(config, data) as u64;
        let mut evaluate = evaluations(config, data, device.clone().inner());
        let schedule = Schedule {
            length: Length::Epochs(config.epochs as u64),
            total: config.epochs as u64 * per_epoch,
            checkpoint_every: config.checkpoint_every as u64 * per_epoch,
            progress_updates: 1000,
            keep: Box::new(keeps(config, per_epoch)),
            save: config
                .save_samples
                .then(|| saved_model(config, data).describe::<Mnist>()),
        };
        // Epoch `e` visits the training images in the order `epoch_order(N, seed, e)`, through
        // the data crate's burn dataset and batcher.
        let norm = ImageBatcher {
            mean: MNIST_MEAN,
            std: MNIST_STD,
        };
        let source =
            DatasetBatches::new(data.train.clone(), norm, config.batch, config.seed, device)?;
        let mut batches = source.map(Batch::from);
        let driven = drive(
            session,
            schedule,
            &mut [&mut evaluate],
            sampler,
            &mut batches,
        )?
        .unwrap_or_default();
        let eval_seconds = evaluate.seconds();
        let Evaluations { evals, averages } = evaluate.into_state();
        let mut record = Record {
            epochs_done: (driven.steps_done / per_epoch.max(1)) as usize,
            evals,
            averages,
            train_seconds: driven.step_seconds,
            eval_seconds,
            trace: driven.trace,
            ..Record::default()
        };
        // Every chain's rows of a finished run, in step and chain order.
        record.steps = (0..)
            .zip(driven.steps)
            .flat_map(|(step, row)| {
                row.into_iter().enumerate().map(move |(chain, s)| StepRow {
                    step,
                    chain,
                    energy: s.energy,
                    multiplier: s.multiplier,
                    log_weight: s.log_weight,
                })
            })
            .collect();
        Ok(record)
    }

    fn stopped(config: &MnistConfig, _: &MnistData, record: &Record) -> Option<String> {
        (record.epochs_done < config.epochs)
            .then(|| format!("after {} of {} epochs", record.epochs_done, config.epochs))
    }

    fn report(
        config: &MnistConfig,
        data: &MnistData,
        dir: &Path,
        device: DeviceChoice,
        record: &Record,
        over: &str,
    ) -> Result<(), AppError> {
        let s = crate::mnist::report::write(dir, config, data, record, &device.to_string())?;
        let bma = if s.bma_models == 0 {
            "no model averaged (no evaluation epoch past the burn-in and the initial networks: \
             raise --epochs)"
                .to_string()
        } else {
            format!(
                "BMA acc {:.4} (nll {:.4}, {:.1} effective of {} models)",
                s.bma_accuracy, s.bma_nll, s.bma_effective_models, s.bma_models
            )
        };
        println!(
            "{}{over}: final acc {:.4}, {bma}, loss range [{:.4}, {:.4}] over the last half, \
             held-out entropy > 0.5: {:.3} (fashion {:.3}), {:.1} s/epoch -> {}",
            config.sampler,
            s.final_accuracy,
            s.loss_range_last_half[0],
            s.loss_range_last_half[1],
            s.heldout_entropy_above_half,
            s.fashion_entropy_above_half,
            s.seconds_per_epoch,
            dir.display()
        );
        Ok(())
    }
}
