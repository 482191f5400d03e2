//! One UCI run: the CSGLD paper's protocol (sec. 4.2, Table 1) on one split with one sampler,
//! or the standardized protocol for data sets off the paper's list ([`UciRun::standardized`]:
//! target standardized with the training split, noise precision 100 in those units, lr
//! `1e-3 / N`, so a target of any offset and scale gives the same run up to rounding; the
//! paper's unit precision on original units diverges or underfits on a target in the hundreds).
//! pSGLD's lr is per parameter, 1e-3 by default under both ([`default_lr`]).
//!
//! The paper's protocol:
//! MLP with one hidden layer of 50 ReLU units; features standardized with the training split
//! ("we normalized all features"; the target stays in original units, which sets the scale the
//! paper's lr 5e-6 and (tau, zeta) were tuned for: on a standardized target the same lr
//! underfits, e.g. SGD RMSE 1.92 instead of 1.13 on Energy); Gaussian likelihood with unit
//! precision; prior
//! precision `N * 1e-4` (L2 1e-4 on the mean loss); batch 50 (shuffled each epoch, the last
//! partial batch dropped); 5000 epochs; lr 5e-6 at full-data scale; temperature tau (SGD and
//! M-SGD run at 0); contour samplers partition the stochastic energy from 0 into 1000 bins of
//! 100 (the paper gives `du` only; 1000 bins cover every dataset's energies after warm-up) with
//! the dataset's zeta, a uniform initial `theta`, `omega_k = min(0.01, 1 / (k^0.6 + 100))` and
//! the power field of eq. 9 unless `contour.field` says otherwise. Any registry sampler runs
//! (replica exchange and ICSGLD with `chains >= 2`; samples come from every chain, or from the
//! chain on rung 0). With that field `theta`
//! moves by `omega theta[J]^zeta` per step: at Yacht's `zeta = 2.5` the multiplier can move by
//! about 1e-4 over a run, at Wine's `zeta = 10` by about 1e-25, so there CSGLD is SGLD (see
//! [`ContourStats`]). Prediction: the mean over 50 models taken evenly over the second half of
//! the run, importance-weighted for contour samplers (each model's weight is that of the step
//! it was taken before). RMSE is in original units. The test NLL uses a Gaussian predictive
//! with the models' spread plus a plug-in noise variance, the mean squared training residual of
//! the averaged prediction (the unit likelihood precision is a fixed modelling choice, not an
//! estimate of the noise).
//!
//! **Learned noise** ([`UciNoise::Learned`], not the paper's protocol): the MLP is wrapped in
//! [`WithNoise`] so the noise precision `lambda = e^s` is sampled with the weights under a
//! `Gamma(shape, rate)` prior (see `sgmcmc_models::noise`), starting from `lambda = 1`. The test
//! NLL is then that of the posterior predictive itself: the weighted mixture over the collected
//! models, each a Gaussian with its own mean and its own sampled `1 / lambda_k`
//! (`sgmcmc_models::regression_average`), in original units. RMSE is unchanged (the mixture's
//! mean).

use std::path::PathBuf;

use burn::tensor::{Device, Tensor, TensorData};
use serde::{Deserialize, Serialize};
use sgmcmc_data::SplitData;
use sgmcmc_engine::experiment::Console;
use sgmcmc_engine::observers::{
    BLOW_UP, ContourWatch, DivergenceGuard, Evaluate, SampleSaver, Scored, Scoring, Trace,
    TracePart, TraceSummary,
};
use sgmcmc_engine::{BatchSource, Checkpoints, Run, Shuffle, TensorBatches, init};
use sgmcmc_models::metrics::rmse;
use sgmcmc_models::mlp::MlpPosterior;
use sgmcmc_models::posterior::Batch;
use sgmcmc_models::regression_average::{ModelPredictions, RegressionAverage};
use sgmcmc_models::{
    Activation, Likelihood, MlpConfig, Network, Posterior, Scale, Targets, WithNoise,
};
use sgmcmc_samplers::comm::Placement;
use sgmcmc_samplers::control::{RandomField, ThetaInit};
use sgmcmc_samplers::density::Target;
use sgmcmc_samplers::diagnostics::ContourStats;
use sgmcmc_samplers::ensemble::ModuleEnsemble;
use sgmcmc_samplers::registry::{BuildContext, KernelKind, SamplerSettings};

use super::swap_variance;
use crate::distributed::{Ranks, Resume};
use crate::error::AppError;
use crate::progress::Terminal;

/// The observation noise model of a run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum UciNoise {
    /// Fixed noise precision (the paper: 1 in the target's units).
    Fixed {
        /// `lambda`.
        precision: f64,
    },
    /// Noise precision sampled with the weights under a `Gamma(shape, rate)` prior.
    Learned {
        /// Gamma shape `a`.
        shape: f64,
        /// Gamma rate `b` (squared target units).
        rate: f64,
    },
}

impl UciNoise {
    /// The default learned-noise prior `Gamma(1, 0.01)`: an exponential prior on `lambda` with
    /// mean 100, weak for any noise sd above ~0.1 target units, so the data (hundreds of
    /// points) set `lambda`. (PBP's `Gamma(6, 6)` assumes a standardized target; the paper's
    /// protocol keeps the target in original units.)
    pub fn learned(shape: Option<f64>, rate: Option<f64>) -> Self {
        Self::Learned {
            shape: shape.unwrap_or(1.0),
            rate: rate.unwrap_or(0.01),
        }
    }

    /// Checks the precision (finite, `> 0`) or the Gamma parameters (finite, `>= 0`).
    pub fn validate(self) -> Result<(), AppError> {
        Ok(self.likelihood().validate()?)
    }

    fn likelihood(self) -> Likelihood {
        match self {
            Self::Fixed { precision } => Likelihood::Gaussian { precision },
            Self::Learned { shape, rate } => Likelihood::GaussianLearned { shape, rate },
        }
    }
}

/// The settings of one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UciRun {
    /// The sampler (registry name and hyper-parameters; lr at full-data scale).
    pub sampler: SamplerSettings,
    /// Chains (rungs of replica exchange, ICSGLD's P).
    pub chains: usize,
    /// Epochs.
    pub epochs: usize,
    /// Minibatch size.
    pub batch: usize,
    /// L2 weight decay on the mean loss.
    pub weight_decay: f64,
    /// Models averaged (per target chain).
    pub models: usize,
    /// Seed (initialisation, minibatches, noise).
    pub seed: u64,
    /// Standardize the target too (not the paper's protocol).
    pub standardize_target: bool,
    /// Observation noise (the paper: fixed unit precision).
    pub noise: UciNoise,
    /// When set, the sampler's lr is this divided by the training split's rows (the
    /// standardized protocol: a fixed step on the mean loss whatever `N`).
    #[serde(default)]
    pub lr_per_row: Option<f64>,
}

impl UciRun {
    /// The paper's protocol for `sampler` with the dataset's `(tau, zeta)`.
    pub fn paper(sampler: &str, temperature: f64, zeta: f64, seed: u64) -> Self {
        let mut s = SamplerSettings::named(sampler);
        s.temperature = temperature;
        s.contour.zeta = zeta;
        s.contour.du = 100.0;
        s.contour.bins = 1000;
        s.contour.u_min = Some(0.0);
        s.contour.theta_init = Some(ThetaInit::Uniform);
        // reSGLD's swap variance: 10 fresh minibatches every 100 steps (`swap_variance`).
        Self {
            sampler: s,
            chains: 1,
            epochs: 5000,
            batch: 50,
            weight_decay: 1e-4,
            models: 50,
            seed,
            standardize_target: false,
            noise: UciNoise::Fixed { precision: 1.0 },
            lr_per_row: None,
        }
        .with_lr(default_lr(sampler, 5e-6))
    }

    /// The protocol for data sets off the paper's list, whatever the target's scale: the
    /// target standardized with the training split, noise precision 100 in standardized units
    /// (noise sd 0.1 target sd: what the paper's unit precision means on Energy's, Concrete's
    /// and Yacht's targets, sd 10-17), and lr `1e-3 / N` (the paper's `5e-6` is `3.5e-3 / N`
    /// on Energy; at `3e-3 / N` the top rung of DEO*-SGD, at 5 x lr, diverged within 5 steps),
    /// i.e. a fixed step on the mean loss. pSGLD keeps its per-coordinate lr ([`default_lr`]).
    pub fn standardized(sampler: &str, temperature: f64, zeta: f64, seed: u64) -> Self {
        let mut run = Self::paper(sampler, temperature, zeta, seed);
        run.standardize_target = true;
        run.noise = UciNoise::Fixed { precision: 100.0 };
        if !preconditioned(sampler) {
            run.lr_per_row = Some(1e-3);
        }
        run
    }

    /// The run with the lr resolved for a training split of `rows` rows.
    pub fn resolved(&self, rows: usize) -> Self {
        match self.lr_per_row {
            Some(eta) => Self {
                lr_per_row: None,
                ..self.clone()
            }
            .with_lr(eta / rows.max(1) as f64),
            None => self.clone(),
        }
    }

    /// Sets the learning rate (full-data scale); a DEO* ladder tops out at 5 x lr.
    pub fn with_lr(mut self, lr: f64) -> Self {
        self.sampler.lr = lr;
        self.sampler.replica.lr_max = 5.0 * lr;
        self
    }

    /// Sets the contour field (the paper's eq. 9 is the power field).
    pub fn with_field(mut self, field: Option<RandomField>) -> Self {
        self.sampler.contour.field = field;
        self
    }
}

/// Whether `sampler` runs the RMSprop-preconditioned kernel (pSGLD and its contour and DEO*
/// variants).
fn preconditioned(sampler: &str) -> bool {
    sgmcmc_samplers::registry::lookup(sampler).is_ok_and(|e| e.kernel == KernelKind::Psgld)
}

/// The default lr of `sampler` at full-data scale: `plain` for every kernel but pSGLD's, whose
/// preconditioner `G = 1 / (lambda + sqrt(V))` divides the full-data gradient by its own
/// running magnitude, so `lr G g` is about `lr` per parameter whatever `N` and the target's
/// units: there the lr is a per-parameter displacement, 1e-3 (on Energy and Yacht, 5000
/// epochs, 4 seeds: RMSE 0.47 and 0.54 at 1e-3; 2.6 and 3.2 at 1e-4; 15.8 and 16.6 at the
/// paper's SGLD lr 5e-6, which barely moves the weights).
pub fn default_lr(sampler: &str, plain: f64) -> f64 {
    if preconditioned(sampler) { 1e-3 } else { plain }
}

/// What one run measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct UciResult {
    /// Test RMSE in original units.
    pub rmse: f64,
    /// Test Gaussian NLL per point in original units.
    pub nll: f64,
    /// Sampler steps.
    pub steps: u64,
    /// Wall time.
    pub wall_seconds: f64,
    /// Why the run failed (a diverged chain, ...); its metrics are then NaN.
    pub error: Option<String>,
    /// With learned noise: the weighted mean over the collected models of the sampled noise sd
    /// `lambda^-1/2`, in original units.
    pub noise_sd: Option<f64>,
    /// Contour samplers: bins visited, multiplier range, effective number of models.
    pub contour: Option<ContourStats>,
    /// The model average's test predictions in original units (its mean).
    #[serde(default)]
    pub predictions: Vec<f64>,
    /// Convergence diagnostics of the averaged models' energies: R-hat (two or more chains),
    /// bulk and tail ESS, MCSE, and the Pareto `k-hat` of contour samplers' weights.
    #[serde(default)]
    pub diagnostics: Option<TraceSummary>,
    /// The draws the diagnostics come from, every chain's (on rank 0; not kept in the result
    /// files a resume reads back).
    #[serde(skip)]
    pub trace: Option<TracePart>,
    /// The settings the run ran with (a resume refuses to read the result back under others).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<UciRun>,
}

impl UciResult {
    /// A run that failed for `why`: NaN metrics, its reason recorded.
    pub fn failed(why: String) -> Self {
        Self {
            rmse: f64::NAN,
            nll: f64::NAN,
            steps: 0,
            wall_seconds: 0.0,
            error: Some(why),
            noise_sd: None,
            contour: None,
            predictions: Vec::new(),
            diagnostics: None,
            trace: None,
            settings: None,
        }
    }
}

/// Where a run keeps its files (checkpoints, saved samples).
#[derive(Clone, Debug, Default)]
pub struct RunFiles {
    /// The run's folder (`seed-K` in the command's folder).
    pub dir: PathBuf,
    /// Steps between checkpoints (0: none).
    pub checkpoint_every: u64,
    /// Save every averaged model as a burn record under `dir/samples`.
    pub save_samples: bool,
    /// Continue from `dir/checkpoint.cbor` if it exists.
    pub resume: bool,
}

impl RunFiles {
    /// The folder of the command's run that holds this one (`--resume` takes it).
    fn run_dir(&self) -> &std::path::Path {
        self.dir.parent().unwrap_or(&self.dir)
    }
}

fn to_vec(t: Tensor<2>) -> Result<Vec<f64>, String> {
    t.into_data()
        .try_into_vec::<f32>()
        .map(|v| v.into_iter().map(f64::from).collect())
        .map_err(|e| format!("reading predictions: {e:?}"))
}

/// Runs `run` on `data` on `device` (plain or autodiff), with its files in `files` (if any).
/// An NLL that is not finite (a collapsed predictive spread) is reported as such.
///
/// With the paper's fixed noise the MLP runs on the plain device with the closed-form gradients
/// of [`MlpPosterior`] (the same energy and gradients as autodiff's to rounding, about twice
/// the steps per second); a learned noise precision needs [`WithNoise`] and runs on the
/// autodiff device with the autodiff [`Posterior`].
pub fn run_split(
    run: &UciRun,
    data: &SplitData,
    device: &Device,
    files: Option<&RunFiles>,
) -> Result<UciResult, AppError> {
    run_split_on(run, data, device, files, &Ranks::local())?
        .ok_or_else(|| AppError::Run("a one-process run has no result".into()))
}

/// [`run_split`] on this rank's block of the chains laid out over `ranks`: at every kept step
/// each rank predicts with its chains' samples and rank 0 folds the predictions in chain order
/// (the engine's [`Evaluate::kept`]: the one-process order, so the sums are its bits) and
/// returns the result (`None` on the other ranks).
pub fn run_split_on(
    run: &UciRun,
    data: &SplitData,
    device: &Device,
    files: Option<&RunFiles>,
    ranks: &Ranks,
) -> Result<Option<UciResult>, AppError> {
    let run = &run.resolved(data.n_train());
    let mlp = uci_mlp(data.n_features);
    run.noise.validate()?;
    let posterior = Posterior {
        likelihood: run.noise.likelihood(),
        scale: Scale::from_weight_decay(data.n_train(), run.weight_decay),
    };
    let placement = ranks.placement(run.chains.max(1))?;
    let here = placement.here();
    let job = Job {
        run,
        data,
        files,
        ranks,
        placement,
    };
    match run.noise {
        UciNoise::Fixed { .. } => {
            let plain = device.clone().without_autodiff();
            let models = init::chains_in(&plain, run.seed, here, || mlp.init(&plain));
            run_model(job, &plain, models, MlpPosterior::new(posterior))
        }
        UciNoise::Learned { .. } => {
            let ad = device.clone().autodiff();
            let models = init::chains_in(&ad, run.seed, here, || mlp.init(&ad))
                .into_iter()
                .map(|net| WithNoise::new(net, 1.0, &ad))
                .collect::<Result<Vec<_>, _>>()?;
            run_model(job, &ad, models, posterior)
        }
    }
}

/// What one run's chains run on, beside the models.
struct Job<'a> {
    run: &'a UciRun,
    data: &'a SplitData,
    files: Option<&'a RunFiles>,
    ranks: &'a Ranks,
    placement: Placement,
}

/// Refuses to continue the checkpoint at `path`, whose meta `saved` holds the settings it was
/// written with, under other settings `run` (`config.toml` edited since the run started: a
/// resumed run would move on with two learning rates). A checkpoint of an older sgmcmc holds
/// none and is continued.
fn same_settings(path: &std::path::Path, saved: &[u8], run: &UciRun) -> Result<(), AppError> {
    if saved.is_empty() {
        return Ok(());
    }
    let old = sgmcmc_engine::observer::decode::<UciRun>(saved).ok();
    if old.as_ref() == Some(run) {
        return Ok(());
    }
    Err(changed_settings(path, old.as_ref(), run))
}

/// The refusal of the file at `path` (a checkpoint, a finished seed's `result.json`) written
/// with settings `old` (`None`: unreadable) other than the `now` of `config.toml`, naming
/// every changed setting by its dotted path.
pub fn changed_settings(path: &std::path::Path, old: Option<&UciRun>, now: &UciRun) -> AppError {
    let mut changed = old.map_or_else(Vec::new, |old| sgmcmc_engine::settings::changes(now, old));
    if changed.is_empty() {
        changed.push("the run settings".into());
    }
    AppError::Usage(format!(
        "{} was written with other settings than config.toml gives now ({}); restore \
         config.toml or start the run again with --force",
        path.display(),
        changed.join(", ")
    ))
}

/// The paper's network: one hidden layer of 50 ReLU units.
pub fn uci_mlp(inputs: usize) -> MlpConfig {
    MlpConfig {
        inputs,
        hidden: vec![50],
        outputs: 1,
        activation: Activation::Relu,
    }
}

/// [`run_split_on`] for this rank's initial models (MLPs, or MLPs with a learned noise
/// precision) and their posterior.
fn run_model<M, T>(
    job: Job<'_>,
    device: &Device,
    models: Vec<M>,
    posterior: T,
) -> Result<Option<UciResult>, AppError>
where
    M: Network<Input = Tensor<2>> + 'static,
    T: Target<M, Batch = Batch<Tensor<2>>> + Send + 'static,
{
    let Job {
        run,
        data,
        files,
        ranks,
        placement,
    } = job;
    let (n, d) = (data.n_train(), data.n_features);
    if run.batch == 0 || n < run.batch {
        return Err(AppError::Input(format!(
            "the training split has {n} rows, fewer than the batch size {}",
            run.batch
        )));
    }
    let x_train = Tensor::<2>::from_data(TensorData::new(data.x_train.clone(), [n, d]), device);
    let st = &data.standardizer;
    // Targets as the model sees them, and the map back to original units.
    let (y_fit, back): (Vec<f32>, Box<dyn Fn(f64) -> f64>) = if run.standardize_target {
        (data.y_train.clone(), Box::new(|v| st.y_back(v)))
    } else {
        let raw = data
            .y_train
            .iter()
            .map(|v| st.y_back(f64::from(*v)) as f32)
            .collect();
        (raw, Box::new(|v| v))
    };
    let y_train = Tensor::<2>::from_data(TensorData::new(y_fit.clone(), [n, 1]), device);
    let x_test = Tensor::<2>::from_data(
        TensorData::new(data.x_test.clone(), [data.n_test(), d]),
        device,
    );
    let per_epoch = (n / run.batch) as u64;
    let total = (run.epochs as u64).checked_mul(per_epoch);
    sgmcmc_engine::limits::check_steps("epochs", total)?;
    let total = total.unwrap_or(u64::MAX);
    let burn = total / 2;
    let every = ((total - burn) / run.models.max(1) as u64).max(1);
    let ctx = BuildContext::steps(total).chains(placement.total());
    let chains = placement.total();
    let ens = ModuleEnsemble::new_part(posterior, models, run.seed, placement.here().start)?;
    let spec = swap_variance::settings(&run.sampler, ranks.is_distributed())?.spec(&ctx)?;
    let mut sampler = if ranks.is_distributed() {
        spec.build_placed(ens, run.seed, placement)?
    } else {
        let fresh =
            swap_variance::fresh_batches(x_train.clone(), y_train.clone(), run.batch, run.seed);
        spec.build_with_data(ens, run.seed, fresh, None)?
    };
    let mut stats = ContourWatch::new(sampler.multiplier_reach(total).map(ContourStats::new), burn);
    let sums = RegressionAverage::new(n, data.y_test_raw.clone());
    // The model average of the kept samples, folded on rank 0 in step and chain order.
    let x_fit = x_train.clone();
    let mut average = Evaluate::kept(
        ranks,
        sums,
        |_: &Scoring<'_>, m: &M| {
            Ok(ModelPredictions {
                test: to_vec(m.forward(x_test.clone()))?,
                train: to_vec(m.forward(x_fit.clone()))?,
                log_precision: m
                    .log_precision()
                    .map(|lp| f64::from(lp.val().into_scalar::<f32>())),
            })
        },
        |sums: &mut RegressionAverage, s: Scored<'_, ModelPredictions>| {
            for (c, m) in s.chains.iter().zip(&s.scores) {
                sums.add(s.report.weights[*c], m, &*back);
            }
            Ok(())
        },
    )
    .unclocked();
    // `theta` before the run (a resumed run restores the sampler inside `Run::run`).
    let theta_start = sampler.theta().map_or(Vec::new(), |t| t.theta().to_vec());
    let mut saver = files
        .filter(|f| f.save_samples)
        .map(|f| SampleSaver::new(f.dir.join("samples")));
    if let Some(f) = files.filter(|f| f.save_samples) {
        if matches!(run.noise, UciNoise::Learned { .. }) {
            return Err(AppError::Usage(
                "--save-samples supports the fixed-noise MLP only".into(),
            ));
        }
        sgmcmc_engine::predict::SavedModel::UciMlp {
            mlp: uci_mlp(d),
            standardizer: data.standardizer.clone(),
            standardize_target: run.standardize_target,
        }
        .write(&f.dir)?;
    }
    // The paper's minibatches: the rows shuffled in place by one Fisher-Yates pass per epoch.
    let mut batches = TensorBatches::new(x_train, y_train, run.batch, run.seed, Shuffle::Carried)?
        .map(|(x, y)| Batch {
            x,
            y: Targets::Real(y),
        });
    let mut trace = Trace::energies();
    let mut guard = DivergenceGuard::new().blow_up(BLOW_UP);
    let mut r = Run::epochs(run.epochs as u64)
        .burn_in(burn)
        .thin(every)
        .observe(&mut guard)
        .observe(&mut stats)
        .observe(&mut average)
        .observe(&mut trace);
    if let Some(s) = saver.as_mut() {
        r = r.observe(s);
    }
    if let Some(f) = files.filter(|f| f.checkpoint_every > 0) {
        let path = f.dir.join("checkpoint.cbor");
        // The run's settings ride in every checkpoint: a resume continues them or is refused.
        let meta = sgmcmc_engine::observer::encode(run)?;
        if f.resume
            && let Some(resume) = Resume::if_present::<AppError>(
                (&path, f.run_dir()),
                ranks,
                ("uci", chains),
                |saved| same_settings(&path, saved, run),
                &Terminal::warn,
            )?
        {
            r = resume.apply(r);
        }
        let checkpoints = Checkpoints::new(path, f.checkpoint_every).with_meta(meta);
        r = r.checkpoints(checkpoints);
    }
    let report = r.over(ranks).run(&mut sampler, &mut batches)?;
    // Every rank's draws to rank 0 (a collective every rank reaches before any returns).
    let trace = trace.gather(ranks)?;
    let diagnostics = trace.clone().map(|t| Trace::from(t).summary());
    if !ranks.is_leader() {
        return Ok(None);
    }
    let s = average.into_state();
    let predictive = s
        .predictive(&y_fit, &*back)
        .ok_or_else(|| AppError::Run("no model was collected (weights vanished)".into()))?;
    let (weight, weight_sq) = s.weights();
    Ok(Some(UciResult {
        rmse: rmse(&predictive.mean, &data.y_test_raw),
        nll: predictive.nll,
        steps: report.steps,
        wall_seconds: report.wall_seconds,
        error: None,
        noise_sd: predictive.noise_sd,
        contour: stats.into_stats().map(|mut st| {
            st.weights(weight, weight_sq);
            st.finish(sampler.theta().map(|t| t.theta()), &theta_start)
        }),
        predictions: predictive.mean,
        diagnostics,
        trace,
        settings: None,
    }))
}

#[cfg(test)]
mod tests {
    use sgmcmc_data::UciDataset;
    use sgmcmc_data::uci::write_synthetic;

    use super::*;

    #[test]
    fn learned_noise_moves_from_its_start_to_the_residual_scale() {
        // y = w.x + sin(x_0) + 0.1 N(0, 1) over 4 features (target sd ~1.5). The precision
        // starts at 1 (noise sd 1.0, ten times the true noise); sampled with the weights it must
        // settle near the scale of the residuals (the fitted MLP's RMSE is ~0.1-0.3 here), so
        // its sd ends well below the start and above nothing-but-noise. The NLL is that of
        // the mixture of the collected models' Gaussians, finite.
        let dir = std::env::temp_dir().join(format!("sgmcmc-uci-noise-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        write_synthetic(&dir, 400, 4, 1, 0.1, 7).unwrap();
        let split = UciDataset::load(&dir).unwrap().split(0).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let device = Device::flex().autodiff();
        for sampler in ["sgld", "csgld"] {
            let mut run = UciRun::paper(sampler, 1.0, 1.0, 1);
            run.epochs = 200;
            run.sampler.lr = 1e-4;
            run.noise = UciNoise::learned(None, None);
            let r = run_split(&run, &split, &device, None).unwrap();
            let sd = r.noise_sd.unwrap();
            println!(
                "{sampler}: RMSE {:.3}, NLL {:.3}, sampled noise sd {sd:.3}",
                r.rmse, r.nll
            );
            assert!(r.rmse < 0.5, "{sampler}: RMSE {}", r.rmse);
            assert!(r.nll.is_finite(), "{sampler}: NLL {}", r.nll);
            assert!((0.1..0.8).contains(&sd), "{sampler}: noise sd {sd}");
        }
        // The paper's fixed precision reports no sampled noise.
        let mut run = UciRun::paper("sgld", 1.0, 1.0, 1);
        run.epochs = 5;
        assert!(
            run_split(&run, &split, &device, None)
                .unwrap()
                .noise_sd
                .is_none()
        );
        run.noise = UciNoise::learned(Some(-1.0), None);
        assert!(matches!(
            run_split(&run, &split, &device, None),
            Err(AppError::Usage(m)) if m.contains("noise shape")
        ));
    }
}
