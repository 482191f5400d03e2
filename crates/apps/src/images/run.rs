//! One `sgmcmc images` run on the engine: the sampler over ImageClassifier chains, the augmented
//! batches, the recorder observer (evaluation, model averages), checkpoints and resume.
//!
//! Every `eval_every` epochs (counted in steps) and before the last step, each chain's
//! pre-move network is scored on the test set; past `burn_epochs` (and in the sampling phase
//! of cyclical schedules) the sample chains' networks join the model average with the log
//! importance weight the sampler reports for that very point, and are scored on the
//! out-of-distribution set too. Replica exchange samples from the chain on rung 0 only.
//!
//! Over the ranks of `mpirun` ([`super::distributed`]) each rank steps its block of chains and
//! scores its chains' networks; rank 0 folds every chain's predictions in chain order and
//! joins the per-step energies and multipliers at the end (the skeleton's
//! [`sgmcmc_engine::experiment::Driven`]), so its files are the one-process run's.

use std::path::Path;
use std::time::Instant;

use burn::module::Module;
use burn::tensor::Device;
use serde::{Deserialize, Serialize};
use sgmcmc_engine::DeviceChoice;
use sgmcmc_engine::experiment::{NetExperiment, RunMeta, Schedule, Session, drive};
use sgmcmc_engine::observers::TracePart;
use sgmcmc_engine::predict::SavedModel;
use sgmcmc_engine::predict::classifier::{ClassifierInput, ClassifierNetwork, probabilities};
use sgmcmc_engine::{Checkpoint, Length, Observer, Prefetch, Progress, RunError, init};
use sgmcmc_models::metrics::{ClassifierMetrics, OodMetrics, sorted_entropy};
use sgmcmc_models::{ImageClassifier, Likelihood, Posterior, Scale};
use sgmcmc_samplers::control::Phase;
use sgmcmc_samplers::ensemble::ModuleEnsemble;
use sgmcmc_samplers::registry::AnySampler;
use sgmcmc_samplers::sampler::{Sampler, StepReport};
use sgmcmc_samplers::swag::{CycleSwag, Swag};

use crate::distributed::Ranks;
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

/// What a run has recorded so far (checkpointed).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
    /// cycSWAG: each chain's fit of the current cycle.
    pub swag: Vec<Swag>,
    /// Training wall time so far (excluding evaluation), seconds.
    pub train_seconds: f64,
    /// Evaluation wall time so far, seconds.
    pub eval_seconds: f64,
    /// The averaged networks' energies and log weights, every chain's (on rank 0 of a finished
    /// run; not in the recorder's checkpoints, which hold the trace's own state).
    #[serde(default)]
    pub trace: TracePart,
    /// The smallest and largest gradient multiplier of any step of any chain (1 for samplers
    /// without one; a contour sampler whose range stays near 1 samples as its base kernel), of
    /// a finished run.
    #[serde(default = "empty_range")]
    pub multiplier_range: [f64; 2],
}

/// The range of no value, which any value widens.
fn empty_range() -> [f64; 2] {
    [f64::INFINITY, f64::NEG_INFINITY]
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

/// Where a run stops early (tests of resume).
#[derive(Clone, Copy, Debug, Default)]
pub struct Stop {
    /// Stop after this many steps (a checkpoint is written there).
    pub after_steps: Option<u64>,
}

/// What the recorder needs for cycSWAG: the schedule of the fits and draws, and what
/// refreshes a draw's BatchNorm statistics.
struct SwagSetup {
    cycles: CycleSwag,
    bn_batches: usize,
    source: TrainBatcher,
}

/// The run's recorder (see the module docs).
struct Recorder<'a> {
    data: &'a ImagesData,
    ranks: &'a Ranks,
    swag: Option<SwagSetup>,
    plain: Device,
    eval_steps: u64,
    burn_steps: u64,
    per_epoch: u64,
    held: Option<Vec<ImageClassifier>>,
    record: Record,
    clock: Instant,
}

impl Recorder<'_> {
    fn is_eval_step(&self, at: &Progress) -> bool {
        (at.step > 0 && at.step.is_multiple_of(self.eval_steps)) || at.is_last()
    }

    fn evaluate(
        &mut self,
        report: &StepReport,
        models: &[ImageClassifier],
        last: bool,
    ) -> Result<(), AppError> {
        let k = report.step;
        let sampling = report.phase != Some(Phase::Exploration);
        let collect = k >= self.burn_steps && sampling;
        // cycSWAG averages its draws, not the SGD iterates.
        let collect = collect && self.swag.is_none();
        let (classes, test, curve) = (self.data.classes(), &self.data.test, &self.data.curve);
        let mine = models
            .iter()
            .zip(report.local.clone())
            .map(|(m, p)| {
                // The engine's rule (`Kept::chains`): replica exchange samples from the chain
                // on rung 0 after this step's swaps, at its pre-move point.
                let sample = report.rungs.get(p).is_none_or(|r| *r == 0);
                let collected = collect && sample;
                ChainProbs::of(m, self.data, &self.plain, (collected, collected || last))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let Some(all) = self.ranks.gather_chains(mine)? else {
            return Ok(());
        };
        let (mut chains, mut full) = (Vec::new(), Vec::new());
        for (p, c) in all.into_iter().enumerate() {
            // The curve's images are the first ones of the test set.
            chains.push(metrics(&c.test[..curve.len() * classes], curve));
            full.push(c.whole.then(|| metrics(&c.test, test)));
            if c.collected {
                let w = report.log_weights.get(p).copied().unwrap_or(0.0);
                self.collect_probs(w, c.test, c.ood);
            }
        }
        let bma = self
            .record
            .averages
            .test
            .mean()
            .map(|m| metrics(&m, &self.data.test));
        let bma_ood = self
            .record
            .averages
            .ood
            .mean()
            .map(|m| OodMetrics::of(&m, classes));
        self.record.evals.push(EvalRow {
            epoch: k as f64 / self.per_epoch as f64,
            step: k,
            chains,
            full,
            bma,
            bma_ood,
            models: self.record.averages.test.models(),
            effective_models: self.record.averages.test.effective_models(),
        });
        Ok(())
    }
}

impl Recorder<'_> {
    /// Adds network `m` (with test-set probabilities `probs`) to the model averages with log
    /// weight `w`, scoring it on the out-of-distribution set too.
    fn collect(&mut self, m: &ImageClassifier, w: f64, probs: Vec<f64>) -> Result<(), AppError> {
        let ood = ChainProbs::ood_of(m, self.data, &self.plain)?;
        self.collect_probs(w, probs, ood);
        Ok(())
    }

    /// Adds a network's test-set probabilities `probs` and out-of-distribution ones `ood` (if
    /// the run has the set) to the model averages with log weight `w`.
    fn collect_probs(&mut self, w: f64, probs: Vec<f64>, ood: Option<Vec<f64>>) {
        let classes = self.data.classes();
        self.record.averages.test.add_log(w, &probs);
        let mut last = LastSample {
            test: metrics(&probs, &self.data.test),
            reliability: reliability(&probs, &self.data.test),
            ..LastSample::default()
        };
        if let Some(q) = ood {
            last.ood = OodMetrics::of(&q, classes);
            last.ood_entropy = sorted_entropy(&q, classes);
            self.record.averages.ood.add_log(w, &q);
        }
        self.record.last_sample = Some(last);
    }

    /// cycSWAG after the step `at`: the chains' iterates join their fits; at the end of a cycle
    /// the draws from the fits, their BatchNorm statistics refreshed, join the model average.
    fn swag_step(
        &mut self,
        at: &Progress,
        sampler: &ImagesSampler,
        report: &StepReport,
    ) -> Result<(), AppError> {
        let Some(setup) = self.swag.as_ref() else {
            return Ok(());
        };
        let done = at.step + 1;
        let modules: Vec<ImageClassifier> = sampler.ensemble().modules().cloned().collect();
        let sampling = report.phase == Some(Phase::Sampling);
        let draws = setup
            .cycles
            .after_step(
                &mut self.record.swag,
                done,
                (sampling, at.is_last()),
                &modules,
            )
            // The fits are of these very networks: an internal failure, exit 1.
            .map_err(|e| AppError::Run(format!("cycSWAG: {e}")))?;
        let drawn = draws
            .into_iter()
            .map(|d| {
                let key = (1 << 62) + d.cycle;
                network(
                    &d.theta,
                    &modules[d.chain],
                    &setup.source,
                    key,
                    setup.bn_batches,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        for m in drawn {
            let probs = probabilities(&m, &self.data.test, &self.data.normaliser, &self.plain)?;
            self.collect(&m, 0.0, probs)?;
        }
        Ok(())
    }
}

impl Observer<ImagesSampler> for Recorder<'_> {
    fn on_start(&mut self, _: &Progress, _: &ImagesSampler) -> Result<(), RunError> {
        self.clock = Instant::now();
        Ok(())
    }

    fn before_step(&mut self, at: &Progress, sampler: &ImagesSampler) -> Result<(), RunError> {
        if self.is_eval_step(at) {
            // `valid` copies: a clone would share its BatchNorm running statistics with the
            // chain, which the step is about to update.
            self.held = Some(sampler.ensemble().modules().map(Module::valid).collect());
        }
        Ok(())
    }

    fn on_step(
        &mut self,
        at: &Progress,
        sampler: &ImagesSampler,
        report: &StepReport,
    ) -> Result<(), RunError> {
        self.record.train_seconds += self.clock.elapsed().as_secs_f64();
        let t = Instant::now();
        if let Some(models) = self.held.take() {
            self.evaluate(report, &models, at.is_last())
                .map_err(|e| RunError::Observer(e.to_string()))?;
        }
        self.swag_step(at, sampler, report)
            .map_err(|e| RunError::Observer(e.to_string()))?;
        self.record.eval_seconds += t.elapsed().as_secs_f64();
        self.record.steps_done = at.step + 1;
        self.clock = Instant::now();
        Ok(())
    }

    fn save(&self) -> Result<Vec<u8>, RunError> {
        sgmcmc_engine::observer::encode(&self.record)
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RunError> {
        self.record = sgmcmc_engine::observer::decode(state)?;
        Ok(())
    }
}

impl NetExperiment for Images {
    const COMMAND: &'static str = "images";
    const NOT_OURS: &'static str = "not an images checkpoint";
    type Error = AppError;
    type Console = crate::progress::Terminal;
    type Config = ImagesConfig;
    type Data = ImagesData;
    type Network = ImageClassifier;
    type Sampler = ImagesSampler;
    type Record = Record;
    type Stop = Stop;

    fn load(root: &Path, config: &ImagesConfig) -> Result<ImagesData, AppError> {
        ImagesData::load(root, config)
    }

    fn build_on(
        config: &ImagesConfig,
        data: &ImagesData,
        device: &Device,
        ranks: &Ranks,
    ) -> Result<ImagesSampler, AppError> {
        let arch = config.architecture()?;
        let (classes, channels) = (data.classes(), data.train.channels);
        arch.init(classes, channels, config.width, device)
            .map_err(AppError::Usage)?;
        let placement = ranks.placement(config.chains)?;
        let here = placement.here();
        let modules = init::chains_in(device, config.seed, here.clone(), || {
            arch.init(classes, channels, config.width, device)
                .expect("checked above")
        });
        let ensemble =
            ModuleEnsemble::new_part(posterior(config, data), modules, config.seed, here.start)?;
        let per_epoch = steps_per_epoch(config, data);
        let spec = config.spec(total_steps(config, data), per_epoch)?;
        if ranks.is_distributed() {
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
        let ranks = session.ranks;
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
        });
        let mut recorder = Recorder {
            data,
            ranks,
            swag,
            plain: device.clone().inner(),
            eval_steps: steps_of(config.eval_every, per_epoch),
            burn_steps: (config.burn_epochs * per_epoch as f64).round() as u64,
            per_epoch,
            held: None,
            record: Record {
                multiplier_range: empty_range(),
                ..Record::default()
            },
            clock: Instant::now(),
        };
        let (burn, eval) = (recorder.burn_steps, recorder.eval_steps);
        let schedule = Schedule {
            length: Length::Steps(total),
            total,
            checkpoint_every: if config.checkpoint_every > 0.0 {
                steps_of(config.checkpoint_every, per_epoch)
            } else {
                0
            },
            stop_after: session.stop.after_steps,
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
        let recorders: &mut [&mut dyn Observer<ImagesSampler>] = &mut [&mut recorder];
        let batches = augmented_batches(config, data, device)?;
        let driven = if config.prefetch > 0 {
            let mut batches = Prefetch::new(batches, config.prefetch)?;
            drive(session, schedule, recorders, sampler, &mut batches)?
        } else {
            drive(session, schedule, recorders, sampler, &mut { batches })?
        }
        .unwrap_or_default();
        let mut record = recorder.record;
        record.trace = driven.trace;
        // Every chain's energies and multiplier range of a finished run.
        let multipliers = driven.steps.iter().flatten().map(|s| s.multiplier);
        record.multiplier_range =
            multipliers.fold(empty_range(), |[lo, hi], m| [lo.min(m), hi.max(m)]);
        record.energies = driven
            .steps
            .into_iter()
            .map(|r| r.into_iter().map(|s| s.energy).collect())
            .collect();
        Ok(record)
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
