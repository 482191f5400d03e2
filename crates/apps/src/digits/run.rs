//! One `sgmcmc digits` run: data to tensors, the stepping loop with the streaming model
//! average, and the run's files (`summary.json`, `bma.csv`, `accuracy.png`).

use std::cell::Cell;
use std::path::Path;
use std::rc::Rc;

use burn::module::Module;
use burn::tensor::{Device, Int, Tensor, TensorData, activation};
use serde::{Deserialize, Serialize};
use sgmcmc_data::digits::Digits;
use sgmcmc_engine::DeviceChoice;
use sgmcmc_engine::observers::{
    BLOW_UP, DivergenceGuard, Evaluate, Scored, Scoring, Trace, TraceSummary,
};
use sgmcmc_engine::{BatchSource, Kept, Run, Shuffle, TensorBatches, init};
use sgmcmc_models::metrics::{Bma, accuracy, brier, ece, nll};
use sgmcmc_models::mlp::MlpPosterior;
use sgmcmc_models::posterior::Batch;
use sgmcmc_models::{Activation, Likelihood, Mlp, MlpConfig, Network, Posterior, Scale, Targets};
use sgmcmc_samplers::density::Target;
use sgmcmc_samplers::ensemble::ModuleEnsemble;
use sgmcmc_samplers::registry::{BuildContext, SamplerSettings, SamplerSpec};

use crate::error::AppError;
use crate::output::{self, RunHeader};
use crate::progress;

/// The single-chain samplers `sgmcmc digits` runs (the BlackJAX comparison's kernels).
pub const DIGITS_SAMPLERS: &[&str] = &["sgld", "sghmc", "psgld", "sgnht", "sgd", "msgd"];

/// Classes of the digits task.
const CLASSES: usize = 10;

/// The task's network: 64 pixels, one tanh layer of `hidden` units (BlackJAX's 100), 10 classes.
pub fn network(hidden: usize) -> MlpConfig {
    MlpConfig {
        inputs: Digits::FEATURES,
        hidden: vec![hidden],
        outputs: CLASSES,
        activation: Activation::Tanh,
    }
}

/// How the chain's gradients are computed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Gradients {
    /// Backpropagation written out for the MLP ([`MlpPosterior`]) on the plain device.
    #[default]
    ClosedForm,
    /// burn autodiff through the network as an ordinary module ([`Posterior`] on
    /// `device.autodiff()`): the path of a user's own network.
    Autodiff,
}

/// The settings of one run (the run's `config.toml`; missing fields take their defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DigitsConfig {
    /// Kernel name: `sgld`, `sghmc`, `psgld`, `sgnht`, `sgd` or `msgd`.
    pub sampler: String,
    /// Sampler steps.
    pub steps: u64,
    /// Learning rate on the full-data energy `U`.
    pub lr: f64,
    /// Prior precision of every weight and bias.
    pub prior_precision: f64,
    /// Minibatch size.
    pub batch: usize,
    /// Hidden tanh units.
    pub hidden: usize,
    /// Steps before the first averaged model.
    pub burn_in: u64,
    /// Steps between averaged models.
    pub bma_every: u64,
    /// Test share of the split.
    pub test_fraction: f64,
    /// Seed of the split.
    pub split_seed: u64,
    /// Run seed.
    pub seed: u64,
    /// Confidence bins of the ECE.
    pub ece_bins: usize,
    /// Closed-form or autodiff gradients (same energies and gradients to rounding).
    pub gradients: Gradients,
}

impl Default for DigitsConfig {
    fn default() -> Self {
        Self {
            sampler: "sgld".into(),
            steps: 20_000,
            lr: 5e-5,
            prior_precision: 1.0,
            batch: 100,
            hidden: 100,
            burn_in: 2_000,
            bma_every: 100,
            test_fraction: 0.2,
            split_seed: 0,
            seed: 1,
            ece_bins: 10,
            gradients: Gradients::ClosedForm,
        }
    }
}

impl DigitsConfig {
    /// The registry sampler of `self.sampler` (the optimisers run at temperature 0).
    fn sampler(&self) -> Result<SamplerSpec, AppError> {
        if !DIGITS_SAMPLERS.contains(&self.sampler.as_str()) {
            return Err(AppError::Usage(format!(
                "unknown digits sampler `{}` (known: {})",
                self.sampler,
                DIGITS_SAMPLERS.join(", ")
            )));
        }
        let settings = SamplerSettings {
            lr: self.lr,
            temperature: 1.0,
            ..SamplerSettings::named(&self.sampler)
        };
        Ok(settings.spec(&BuildContext::steps(self.steps))?)
    }

    /// Checks the settings, the sampler's included.
    pub fn validate(&self) -> Result<(), AppError> {
        let bad = |what: String| Err(AppError::Usage(format!("digits: {what}")));
        sgmcmc_engine::limits::check_seed(self.seed)?;
        sgmcmc_engine::limits::check_seed(self.split_seed)?;
        if self.steps == 0 || self.batch == 0 || self.hidden == 0 || self.bma_every == 0 {
            return bad("steps, batch, hidden and bma_every must be positive".into());
        }
        sgmcmc_engine::limits::check_steps("steps", Some(self.steps))?;
        if self.burn_in + self.bma_every > self.steps {
            return bad(format!(
                "burn_in {} + bma_every {} exceeds steps {}: no model would be averaged",
                self.burn_in, self.bma_every, self.steps
            ));
        }
        if !(self.prior_precision.is_finite() && self.prior_precision >= 0.0) {
            return bad(format!(
                "prior precision must be finite and >= 0, got {}",
                self.prior_precision
            ));
        }
        if self.ece_bins == 0 {
            return bad("ece_bins must be positive".into());
        }
        self.sampler().map(|_| ())
    }
}

/// What a run writes to `summary.json`.
#[derive(Clone, Debug, Serialize)]
pub struct DigitsSummary {
    /// The CLI contract's fields.
    #[serde(flatten)]
    pub header: RunHeader,
    /// The settings.
    pub config: DigitsConfig,
    /// Training and test set sizes.
    pub n_train: usize,
    /// Test set size.
    pub n_test: usize,
    /// Models in the average.
    pub models: usize,
    /// Accuracy of the model average on the test set.
    pub accuracy: f64,
    /// Mean negative log-likelihood of the model average.
    pub nll: f64,
    /// Expected calibration error of the model average.
    pub ece: f64,
    /// Brier score of the model average.
    pub brier: f64,
    /// Accuracy of the last model alone.
    pub last_model_accuracy: f64,
    /// Convergence diagnostics of the averaged models' energies and test NLLs (ESS and MCSE;
    /// R-hat is null for the one chain); the draws themselves are `trace.zarr`, an ArviZ store
    /// (`scripts/arviz_trace.py`).
    pub diagnostics: TraceSummary,
}

/// One split of the data as tensors on a device.
struct Set {
    x: Tensor<2>,
    y: Tensor<1, Int>,
    labels: Vec<usize>,
}

impl Set {
    fn new(d: &Digits, device: &Device) -> Self {
        let labels: Vec<usize> = d.labels.iter().map(|&l| usize::from(l)).collect();
        let ints: Vec<i64> = labels.iter().map(|&l| l as i64).collect();
        Self {
            x: Tensor::from_data(
                TensorData::new(d.features(), [d.len(), Digits::FEATURES]),
                device,
            ),
            y: Tensor::from_data(ints.as_slice(), device),
            labels,
        }
    }
}

/// Softmax predictions `[n, k]` (row-major) of `model` on `x`, forward without autodiff.
pub fn predict(model: &Mlp, x: &Tensor<2>) -> Result<Vec<f64>, AppError> {
    let p = activation::softmax(model.valid().forward(x.clone()), 1);
    Ok(p.into_data()
        .try_into_vec::<f32>()
        .map_err(|e| AppError::Run(format!("reading predictions: {e:?}")))?
        .into_iter()
        .map(f64::from)
        .collect())
}

/// The streaming model average over the test set, its `bma.csv` rows and the last model's
/// accuracy (folded by the engine's [`Evaluate`]).
#[derive(Default, Serialize, Deserialize)]
struct DigitsAverage {
    bma: Bma,
    rows: Vec<Vec<f64>>,
    last: f64,
}

/// The model average of a digits run: every kept model (the pre-move point of step `k` is the
/// chain after `k` steps) and, when `add_final`, the chain after the last step, scored on the
/// test set; each added model's step and test NLL go to `model_nll` (the trace records it: one
/// forward pass per kept model serves both).
fn average<'a>(
    test: &'a Set,
    ece_bins: usize,
    add_final: bool,
    model_nll: Rc<Cell<(u64, f64)>>,
) -> Evaluate<'a, Mlp, Vec<f64>, DigitsAverage> {
    let l = &test.labels;
    let average = Evaluate::kept(
        DigitsAverage::default(),
        |_: &Scoring<'_>, m: &Mlp| predict(m, &test.x).map_err(|e| e.to_string()),
        move |a: &mut DigitsAverage, s: Scored<'_, Vec<f64>>| {
            let steps = s.steps_done();
            for p in s.scores {
                a.last = accuracy(&p, CLASSES, l);
                model_nll.set((steps, nll(&p, CLASSES, l)));
                a.bma.add(1.0, &p);
                let mean = a.bma.mean().expect("a model was added");
                a.rows.push(vec![
                    steps as f64,
                    a.bma.models() as f64,
                    accuracy(&mean, CLASSES, l),
                    nll(&mean, CLASSES, l),
                    ece(&mean, CLASSES, l, ece_bins),
                    a.last,
                ]);
            }
            Ok(())
        },
    )
    .unclocked();
    if add_final { average.at_end() } else { average }
}

/// Runs `config` on the digits in `dir` and writes the run's files into `out` (`config.toml`
/// first, once the data are read).
pub fn run_digits(
    config: &DigitsConfig,
    dir: &Path,
    device: &Device,
    out: &Path,
    device_name: DeviceChoice,
    show_progress: bool,
) -> Result<DigitsSummary, AppError> {
    config.validate()?;
    let spec = config.sampler()?;
    let digits = Digits::load(dir).map_err(|e| {
        AppError::Input(format!(
            "{e} (fetch the digits with `sgmcmc data fetch digits --to DIR`)"
        ))
    })?;
    let (train, test) = digits.split(config.test_fraction, config.split_seed)?;
    if config.batch > train.len() {
        return Err(AppError::Usage(format!(
            "digits: batch {} exceeds the {} training images",
            config.batch,
            train.len()
        )));
    }
    // The settings are written once the data they name are read: a refused run leaves no
    // `config.toml` to block the next one in the same folder.
    output::run_dir(out)?;
    output::write_toml(&out.join("config.toml"), config)?;
    let posterior = Posterior {
        likelihood: Likelihood::Categorical,
        scale: Scale {
            n_data: train.len(),
            prior_precision: config.prior_precision,
        },
    };
    let test_set = Set::new(&test, device);
    let chain = Chain {
        config,
        spec: &spec,
        test: &test_set,
        show_progress,
    };
    let (wall, average, trace) = match config.gradients {
        Gradients::ClosedForm => chain.run(
            MlpPosterior::new(posterior),
            &Set::new(&train, device),
            device,
        )?,
        Gradients::Autodiff => {
            let ad = device.clone().autodiff();
            chain.run(posterior, &Set::new(&train, &ad), &ad)?
        }
    };
    let DigitsAverage { bma, rows, last } = average;
    let mean = bma
        .mean()
        .ok_or_else(|| AppError::Run("no model was averaged".into()))?;
    let l = &test_set.labels;
    let summary = DigitsSummary {
        header: RunHeader {
            sampler: config.sampler.clone(),
            target: "digits mlp64-100-10 tanh".into(),
            seed: config.seed,
            device: device_name.to_string(),
            wall_seconds: wall,
            steps_per_second: config.steps as f64 / wall,
        },
        config: config.clone(),
        n_train: train.len(),
        n_test: test.len(),
        models: bma.models(),
        accuracy: accuracy(&mean, CLASSES, l),
        nll: nll(&mean, CLASSES, l),
        ece: ece(&mean, CLASSES, l, config.ece_bins),
        brier: brier(&mean, CLASSES, l),
        last_model_accuracy: last,
        diagnostics: trace.summary(),
    };
    write(out, &summary, &rows)?;
    trace.write_zarr(&out.join("trace.zarr"))?;
    Ok(summary)
}

/// The sampling part of a run.
struct Chain<'a> {
    config: &'a DigitsConfig,
    spec: &'a SamplerSpec,
    test: &'a Set,
    show_progress: bool,
}

impl<'a> Chain<'a> {
    /// Samples `target` with the model on `device` and the training set `train` (on the same
    /// device); returns the wall time of the loop and the model average.
    fn run<T: Target<Mlp, Batch = Batch<Tensor<2>>>>(
        &self,
        target: T,
        train: &Set,
        device: &Device,
    ) -> Result<(f64, DigitsAverage, Trace<TestNll<'a>>), AppError> {
        let config = self.config;
        let mlp = network(config.hidden);
        let model = init::seeded(device, config.seed, || mlp.init(device));
        let ensemble = ModuleEnsemble::new(target, vec![model], config.seed)?;
        let mut sampler = self.spec.clone().build(ensemble, config.seed)?;
        let mut batches = TensorBatches::new(
            train.x.clone(),
            train.y.clone(),
            config.batch,
            config.seed,
            Shuffle::PerEpoch,
        )?
        .map(|(x, y)| Batch {
            x,
            y: Targets::Class(y),
        });
        let (steps, burn_in, every) = (config.steps, config.burn_in, config.bma_every);
        // The model after step j (1-based) joins the average for j > burn_in, every `every`:
        // the pre-move point of step j; the one after the last step is added at the end.
        let model_nll = Rc::new(Cell::new((0, 0.0)));
        let add_final = (steps - burn_in).is_multiple_of(every);
        let mut average = average(self.test, config.ece_bins, add_final, model_nll.clone());
        let bar = progress::bar(config.steps, &config.sampler, self.show_progress);
        let mut progress = progress::report(bar.clone(), 1000);
        // Per kept model: its energy, and its own test NLL (the per-sample loss), which the
        // average (observed first) has just computed for the same step.
        let test_nll: TestNll<'a> =
            Box::new(move |kept: &Kept<Vec<Mlp>>, _| match model_nll.get() {
                (k, v) if k == kept.step => Ok(vec![v]),
                (k, _) => Err(format!(
                    "the traced test NLL is of step {k}, not {}",
                    kept.step
                )),
            });
        let mut trace = Trace::new(&["test_nll"], test_nll);
        let mut guard = DivergenceGuard::new().blow_up(BLOW_UP);
        let report = Run::steps(steps)
            .keep_when(move |k| k > burn_in && (k - burn_in).is_multiple_of(every))
            .observe(&mut guard)
            .observe(&mut average)
            .observe(&mut trace)
            .observe(&mut progress)
            .run(&mut sampler, &mut batches);
        bar.finish_and_clear();
        Ok((report?.wall_seconds, average.into_state(), trace))
    }
}

/// The traced functional of a digits run: a kept model's test NLL.
type TestNll<'a> = Box<dyn FnMut(&Kept<'_, Vec<Mlp>>, usize) -> Result<Vec<f64>, String> + 'a>;

/// What a run writes into its folder.
pub const FILES: &[&str] = &[
    "config.toml",
    "summary.json",
    "bma.csv",
    "accuracy.png",
    "trace.zarr",
];

/// `summary.json`, `bma.csv` (step, models, BMA accuracy / NLL / ECE, last model's accuracy)
/// and `accuracy.png`.
fn write(out: &Path, summary: &DigitsSummary, rows: &[Vec<f64>]) -> Result<(), AppError> {
    output::run_dir(out)?;
    output::write_csv(
        &out.join("bma.csv"),
        &[
            "step",
            "models",
            "bma_accuracy",
            "bma_nll",
            "bma_ece",
            "model_accuracy",
        ],
        rows,
    )?;
    let series = |c: usize| rows.iter().map(|r| (r[0], r[c])).collect::<Vec<_>>();
    sgmcmc_plot::lines(
        &out.join("accuracy.png"),
        "digits: test accuracy",
        "step",
        "accuracy",
        &[("model average", series(2)), ("current model", series(5))],
    )?;
    output::write_json(&out.join("summary.json"), summary)
}
