//! One `sgmcmc images` run on the engine: the sampler over ImageClassifier chains, the augmented
//! batches, the evaluations (the engine's `Evaluate`: scores, model averages, cycSWAG's draws),
//! checkpoints and resume.
//!
//! Every `eval_every` epochs (counted in steps) and before the last step, each chain's
//! pre-move network is scored on the test set; past `burn_epochs` (and in the sampling phase
//! of cyclical schedules) the sample chains' networks join the model average with the log
//! importance weight the sampler reports for that very point, and are scored on the
//! out-of-distribution set too. Replica exchange samples from the chain on rung 0 only.
//!
//! Over the ranks of `mpirun` ([`super::distributed`]) each rank steps its block of chains and
//! scores its chains' networks; rank 0 folds every chain's predictions in chain order (the
//! engine's `Evaluate`) and joins the per-step energies and multipliers at the end (the
//! skeleton's [`sgmcmc_engine::experiment::Driven`]), so its files are the one-process run's.

use std::path::Path;

use burn::tensor::Device;
use serde::{Deserialize, Serialize};
use sgmcmc_engine::DeviceChoice;
use sgmcmc_engine::experiment::{Build, NetExperiment, RunMeta, Schedule, Session, drive};
use sgmcmc_engine::observers::{Evaluate, Scored, Scoring, TracePart};
use sgmcmc_engine::predict::SavedModel;
use sgmcmc_engine::predict::classifier::{ClassifierInput, ClassifierNetwork, probabilities};
use sgmcmc_engine::{Checkpoint, Length, Observer, Prefetch, Progress, init};
use sgmcmc_models::metrics::{ClassifierMetrics, OodMetrics, sorted_entropy};
use sgmcmc_models::{ImageClassifier, Likelihood, Posterior, Scale};
use sgmcmc_samplers::control::Phase;
use sgmcmc_samplers::ensemble::ModuleEnsemble;
use sgmcmc_samplers::registry::AnySampler;
use sgmcmc_samplers::sampler::StepReport;
use sgmcmc_samplers::swag::{CycleSwag, Swag};

use crate::error::AppError;
use crate::images::Images;
use crate::images::config::ImagesConfig;
use crate::images::data::{ImagesData, TrainBatcher, augmented_batches};
use crate::images::distributed::{ChainProbs, placed};
use crate::images::eval::{Averages, metrics, reliability};
use crate::images::swag::network;

/// The sampler of a run.
pub type ImagesSampler = AnySampler<ModuleEnsemble<ImageClassifier, Posterior>>;

/// One evaluation point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvalRow {
    /// Epochs done (fractional).
    pub epoch: f64,
    /// Steps done.
    pub step: u64,
    /// Test metrics of each chain's current network on the curve's images
    /// ([`ImagesConfig::curve_limit`]).
    pub chains: Vec<ClassifierMetrics>,
    /// Test metrics of each chain's network on the whole test set, where it was scored on it
    /// (collected networks, and every chain at the last evaluation).
    pub full: Vec<Option<ClassifierMetrics>>,
    /// Test metrics of the model average so far (`None` before the first collected model).
    pub bma: Option<ClassifierMetrics>,
    /// Out-of-distribution metrics of the model average so far.
    pub bma_ood: Option<OodMetrics>,
    /// Models averaged so far.
    pub models: usize,
    /// Kish's effective number of averaged models.
    pub effective_models: f64,
}

/// What a run recorded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Record {
    /// Steps done.
    pub steps_done: u64,
    /// Stochastic energy `U~` of each chain per step (of a finished run, every chain's).
    pub energies: Vec<Vec<f64>>,
    /// Evaluation rows.
    pub evals: Vec<EvalRow>,
    /// Model averages.
    pub averages: Averages,
    /// The last collected sample on its own: the "single final sample" the model average is
    /// compared with.
    pub last_sample: Option<LastSample>,
    /// Training wall time (the run loop: batches, steps and checkpoints; evaluation excluded),
    /// seconds.
    pub train_seconds: f64,
    /// Evaluation wall time, seconds.
    pub eval_seconds: f64,
    /// The averaged networks' energies and log weights, every chain's (on rank 0 of a finished
    /// run).
    pub trace: TracePart,
    /// The smallest and largest gradient multiplier of any step of any chain (1 for samplers
    /// without one; a contour sampler whose range stays near 1 samples as its base kernel), of
    /// a finished run.
    pub multiplier_range: [f64; 2],
}

/// The last collected network on its own.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LastSample {
    /// Test metrics.
    pub test: ClassifierMetrics,
    /// Out-of-distribution metrics.
    pub ood: OodMetrics,
    /// Its reliability diagram on the test set.
    pub reliability: Vec<(f64, f64, usize)>,
    /// Its predictive entropies on the out-of-distribution set, sorted.
    pub ood_entropy: Vec<f64>,
}

/// What a run's checkpoints record beside the sampler: what `--resume` continues.
pub type ImagesMeta = RunMeta<ImagesConfig>;

/// Reads a run directory's checkpoint and what it records.
pub fn read_checkpoint(dir: &Path) -> Result<(ImagesMeta, Checkpoint), AppError> {
    sgmcmc_engine::experiment::read_checkpoint::<Images>(dir)
}

/// Steps per epoch.
pub fn steps_per_epoch(config: &ImagesConfig, data: &ImagesData) -> u64 {
    (data.train.len() / config.batch) as u64
}

/// Steps of the whole run.
pub fn total_steps(config: &ImagesConfig, data: &ImagesData) -> u64 {
    ((config.epochs * steps_per_epoch(config, data) as f64).round() as u64).max(1)
}

/// Steps of `epochs` epochs (at least 1).
fn steps_of(epochs: f64, per_epoch: u64) -> u64 {
    ((epochs * per_epoch as f64).round() as u64).max(1)
}

/// The posterior of a run: categorical likelihood at full-data scale, Gaussian prior of
/// precision `weight_decay`.
pub fn posterior(config: &ImagesConfig, data: &ImagesData) -> Posterior {
    Posterior {
        likelihood: Likelihood::Categorical,
        scale: Scale {
            n_data: data.train.len(),
            prior_precision: config.weight_decay,
        },
    }
}

/// What the evaluations fold (checkpointed with the run): the rows, the model averages, the
/// last collected network on its own, and cycSWAG's fits of the current cycle.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Evaluations {
    evals: Vec<EvalRow>,
    averages: Averages,
    last_sample: Option<LastSample>,
    swag: Vec<Swag>,
}

impl Evaluations {
    /// Adds a network's test-set probabilities `probs` and out-of-distribution ones `ood` (if
    /// the run has the set) to the model averages with log weight `w`.
    fn collect(&mut self, data: &ImagesData, w: f64, probs: Vec<f64>, ood: Option<Vec<f64>>) {
        let classes = data.classes();
        self.averages.test.add_log(w, &probs);
        let mut last = LastSample {
            test: metrics(&probs, &data.test),
            reliability: reliability(&probs, &data.test),
            ..LastSample::default()
        };
        if let Some(q) = ood {
            last.ood = OodMetrics::of(&q, classes);
            last.ood_entropy = sorted_entropy(&q, classes);
            self.averages.ood.add_log(w, &q);
        }
        self.last_sample = Some(last);
    }
}

/// cycSWAG in the evaluations: the schedule of the fits and draws, and what refreshes a draw's
/// BatchNorm statistics and scores it.
struct SwagSetup<'a> {
    cycles: CycleSwag,
    bn_batches: usize,
    source: TrainBatcher,
    data: &'a ImagesData,
    plain: Device,
}

/// cycSWAG's `(sampling, last)` of the step `at`: whether it was in the sampling phase, and
/// the run's last.
fn setup_flags(at: &Progress, report: &StepReport) -> (bool, bool) {
    (report.phase == Some(Phase::Sampling), at.is_last())
}

impl SwagSetup<'_> {
    /// After the step `at`: the chains' iterates (`modules`) join their fits; at the end of a
    /// cycle the draws from the fits, their BatchNorm statistics refreshed, join the model
    /// average with weight 1.
    fn after_step(
        &self,
        st: &mut Evaluations,
        at: &Progress,
        report: &StepReport,
        modules: &[ImageClassifier],
    ) -> Result<(), AppError> {
        let draws = self
            .cycles
            .after_step(&mut st.swag, at.step + 1, setup_flags(at, report), modules)
            // The fits are of these very networks: an internal failure, exit 1.
            .map_err(|e| AppError::Run(format!("cycSWAG: {e}")))?;
        for d in draws {
            let key = (1 << 62) + d.cycle;
            let m = network(
                &d.theta,
                &modules[d.chain],
                &self.source,
                key,
                self.bn_batches,
            )?;
            let (data, plain) = (self.data, &self.plain);
            let probs = probabilities(&m, &data.test, &data.normaliser, plain)?;
            st.collect(data, 0.0, probs, ChainProbs::ood_of(&m, data, plain)?);
        }
        Ok(())
    }
}

/// The run's evaluations (see the module docs): every `eval_every` epochs (in steps) and at
/// the last step each chain's pre-move network is scored; past the burn-in, in the sampling
/// phase, the sample chains' networks join the model average, or with cycSWAG (`swag`) the
/// draws from its fits at each cycle's end instead.
fn evaluations<'a>(
    session: &Session<'a, Images>,
    data: &'a ImagesData,
    plain: Device,
    swag: Option<SwagSetup<'a>>,
) -> Evaluate<'a, ImageClassifier, ChainProbs, Evaluations> {
    let config = &session.meta.config;
    let per_epoch = steps_per_epoch(config, data);
    let (eval, burn) = (eval_steps(config, per_epoch), burn_steps(config, per_epoch));
    let (cycswag, classes) = (swag.is_some(), data.classes());
    let evaluate = Evaluate::new(
        move |at: &Progress| (at.step > 0 && at.step.is_multiple_of(eval)) || at.is_last(),
        move |s: &Scoring<'_>, m: &ImageClassifier| {
            // cycSWAG averages its draws, not the SGD iterates. The engine's rule
            // (`Kept::chains`): replica exchange samples from the chain on rung 0 after this
            // step's swaps, at its pre-move point.
            let sampling = s.report.phase != Some(Phase::Exploration);
            let sample = s.report.rungs.get(s.chain).is_none_or(|r| *r == 0);
            let collected = s.at.step >= burn && sampling && !cycswag && sample;
            let whole = collected || s.at.is_last();
            ChainProbs::of(m, data, &plain, (collected, whole)).map_err(|e| e.to_string())
        },
        move |st: &mut Evaluations, s: Scored<'_, ChainProbs>| {
            let (test, curve) = (&data.test, &data.curve);
            let (mut chains, mut full) = (Vec::new(), Vec::new());
            for (p, c) in s.scores.into_iter().enumerate() {
                // The curve's images are the first ones of the test set.
                chains.push(metrics(&c.test[..curve.len() * classes], curve));
                full.push(c.whole.then(|| metrics(&c.test, test)));
                if c.collected {
                    let w = s.report.log_weights.get(p).copied().unwrap_or(0.0);
                    st.collect(data, w, c.test, c.ood);
                }
            }
            let averages = &st.averages;
            st.evals.push(EvalRow {
                epoch: s.at.step as f64 / per_epoch as f64,
                step: s.at.step,
                chains,
                full,
                bma: averages.test.mean().map(|m| metrics(&m, test)),
                bma_ood: averages.ood.mean().map(|m| OodMetrics::of(&m, classes)),
                models: averages.test.models(),
                effective_models: averages.test.effective_models(),
            });
            Ok(())
        },
    );
    match swag {
        Some(setup) => {
            let cycles = setup.cycles;
            evaluate.after_steps(
                move |at, report| cycles.reads(at.step + 1, setup_flags(at, report)),
                move |st, at, report, modules| {
                    setup
                        .after_step(st, at, report, modules)
                        .map_err(|e| e.to_string())
                },
            )
        }
        None => evaluate,
    }
}

/// Steps between evaluations.
fn eval_steps(config: &ImagesConfig, per_epoch: u64) -> u64 {
    steps_of(config.eval_every, per_epoch)
}

/// Steps of the burn-in.
fn burn_steps(config: &ImagesConfig, per_epoch: u64) -> u64 {
    (config.burn_epochs * per_epoch as f64).round() as u64
}

impl NetExperiment for Images {
    const COMMAND: &'static str = "images";
    const NOT_OURS: &'static str = "not an images checkpoint";
    type Error = AppError;
    type Console = crate::progress::Terminal;
    type Config = ImagesConfig;
    type Data = ImagesData;
    type Sampler = ImagesSampler;
    type Record = Record;

    fn build(parts: Build<'_, Self>) -> Result<ImagesSampler, AppError> {
        let (config, data, device, placement) =
            (parts.config, parts.data, parts.device, parts.placement);
        let arch = config.architecture()?;
        let (classes, channels) = (data.classes(), data.train.channels);
        arch.init(classes, channels, config.width, device)
            .map_err(AppError::Usage)?;
        let here = placement.here();
        let modules = init::chains_in(device, config.seed, here.clone(), || {
            arch.init(classes, channels, config.width, device)
                .expect("checked above")
        });
        let ensemble =
            ModuleEnsemble::new_part(posterior(config, data), modules, config.seed, here.start)?;
        let per_epoch = steps_per_epoch(config, data);
        let spec = config.spec(total_steps(config, data), per_epoch)?;
        if placement.is_distributed() {
            return placed(config, spec, ensemble, placement);
        }
        // Replica exchange draws fresh minibatches for its swap variance and, with control
        // variates, passes over the training set for the snapshots' energies. Both index the
        // training set within its length, so they cannot fail.
        let (fresh, pass) = (
            TrainBatcher::new(config, data, device),
            TrainBatcher::new(config, data, device),
        );
        Ok(spec.build_with_data(
            ensemble,
            config.seed,
            Box::new(move |k, j| fresh.fresh(k, j).expect("indices within the training set")),
            Some(Box::new(move |i| {
                pass.full_pass(i).expect("indices within the training set")
            })),
        )?)
    }

    fn train(
        session: Session<'_, Self>,
        data: &ImagesData,
        sampler: &mut ImagesSampler,
        device: &Device,
    ) -> Result<Record, AppError> {
        let config = &session.meta.config.clone();
        let per_epoch = steps_per_epoch(config, data);
        let total = total_steps(config, data);
        let swag = (config.sampler == "cycswag").then(|| SwagSetup {
            cycles: CycleSwag {
                rank: config.swag_rank,
                every: (per_epoch / config.swag_per_epoch.max(1) as u64).max(1),
                cycle: total
                    .max(config.cycles)
                    .div_ceil(config.cycles.max(1))
                    .max(1),
                samples: config.swag_samples,
                seed: config.seed,
            },
            bn_batches: config.bn_batches,
            source: TrainBatcher::new(config, data, device),
            data,
            plain: device.clone().inner(),
        });
        let mut evaluate = evaluations(&session, data, device.clone().inner(), swag);
        let (burn, eval) = (burn_steps(config, per_epoch), eval_steps(config, per_epoch));
        let schedule = Schedule {
            length: Length::Steps(total),
            total,
            checkpoint_every: if config.checkpoint_every > 0.0 {
                steps_of(config.checkpoint_every, per_epoch)
            } else {
                0
            },
            progress_updates: 500,
            // The evaluation steps past the burn-in (the engine leaves out the exploration
            // phase): the networks the average collects, or cycSWAG's chains there.
            keep: Box::new(move |k| {
                k >= burn && ((k > 0 && k.is_multiple_of(eval)) || k + 1 == total)
            }),
            save: config.save_samples.then(|| {
                SavedModel::ImageClassifier(ClassifierInput {
                    network: ClassifierNetwork::ImageClassifier {
                        model: config.model.clone(),
                        width: config.width,
                    },
                    classes: data.classes(),
                    class_labels: Vec::new(),
                    shape: [data.train.channels, data.train.rows, data.train.cols],
                    normaliser: data.normaliser.clone(),
                })
                .describe::<Images>()
            }),
        };
        let recorders: &mut [&mut dyn Observer<ImagesSampler>] = &mut [&mut evaluate];
        let batches = augmented_batches(config, data, device)?;
        let driven = if config.prefetch > 0 {
            let mut batches = Prefetch::new(batches, config.prefetch)?;
            drive(session, schedule, recorders, sampler, &mut batches)?
        } else {
            drive(session, schedule, recorders, sampler, &mut { batches })?
        }
        .unwrap_or_default();
        let eval_seconds = evaluate.seconds();
        let Evaluations {
            evals,
            averages,
            last_sample,
            ..
        } = evaluate.into_state();
        // Every chain's energies and multiplier range of a finished run.
        let multipliers = driven.steps.iter().flatten().map(|s| s.multiplier);
        Ok(Record {
            steps_done: driven.steps_done,
            energies: driven
                .steps
                .iter()
                .map(|r| r.iter().map(|s| s.energy).collect())
                .collect(),
            evals,
            averages,
            last_sample,
            // Everything of the loop but the evaluations (batches, steps, checkpoints).
            train_seconds: (driven.loop_seconds - eval_seconds).max(0.0),
            eval_seconds,
            trace: driven.trace,
            multiplier_range: crate::output::range(multipliers),
        })
    }

    fn stopped(config: &ImagesConfig, data: &ImagesData, record: &Record) -> Option<String> {
        (record.steps_done < total_steps(config, data))
            .then(|| format!("after {} steps", record.steps_done))
    }

    fn report(
        config: &ImagesConfig,
        data: &ImagesData,
        dir: &Path,
        device: DeviceChoice,
        record: &Record,
        over: &str,
    ) -> Result<(), AppError> {
        let s = crate::images::report::write(dir, config, data, record, &device.to_string())?;
        println!(
            "{}{over} {} on {}: BMA acc {:.4} nll {:.4} (sum {:.0}) Brier {:.1}‰ ECE {:.2}% over {} models; \
             last sample acc {:.4} nll {:.4} ECE {:.2}%; BPE {:.4}; {} entropy {:.3} (last {:.3}), \
             Brier {:.2}‰; {:.2} steps/s on {}, {:.0} s training + {:.0} s evaluation -> {}",
            config.sampler,
            config.model,
            config.dataset,
            s.bma.accuracy,
            s.bma.nll,
            s.bma.nll_sum,
            s.bma.brier_permille,
            s.bma.ece_percent,
            s.bma_models,
            s.last_sample.accuracy,
            s.last_sample.nll,
            s.last_sample.ece_percent,
            s.bpe_accuracy,
            config.ood,
            s.bma_ood.mean_entropy,
            s.last_sample_ood.mean_entropy,
            s.bma_ood.brier_permille,
            s.header.steps_per_second,
            s.header.device,
            s.train_seconds,
            s.eval_seconds,
            dir.display()
        );
        Ok(())
    }
}
