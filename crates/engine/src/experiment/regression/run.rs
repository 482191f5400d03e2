//! One regression run: the chains, the batches, the observers and the result.

use burn::tensor::{Device, Tensor, TensorData};
use sgmcmc_data::SplitData;
use sgmcmc_models::metrics::rmse;
use sgmcmc_models::mlp::MlpPosterior;
use sgmcmc_models::posterior::Batch;
use sgmcmc_models::regression_average::{ModelPredictions, RegressionAverage};
use sgmcmc_models::{MlpConfig, Network, Posterior, Scale, Targets, WithNoise};
use sgmcmc_samplers::comm::Placement;
use sgmcmc_samplers::density::Target;
use sgmcmc_samplers::diagnostics::ContourStats;
use sgmcmc_samplers::ensemble::ModuleEnsemble;
use sgmcmc_samplers::registry::BuildContext;
use sgmcmc_samplers::transfer::read_f64;

use super::{RegressionNoise, RegressionResult, RegressionRun, RunFiles, changed_settings, fresh};
use crate::error::RunError;
use crate::experiment::Resume;
use crate::observer::{decode, encode};
use crate::observers::{
    BLOW_UP, ContourWatch, DivergenceGuard, Evaluate, SampleSaver, Scored, Scoring, Trace,
};
use crate::predict::SavedModel;
use crate::ranks::Ranks;
use crate::{BatchSource, Checkpoints, Run, Shuffle, TensorBatches, init};

/// Runs `run` with the network `mlp` on the split `data` on `device` (plain or autodiff), with
/// its files in `files` (if any). An NLL that is not finite (a collapsed predictive spread) is
/// reported as such.
///
/// With fixed noise the MLP runs on the plain device with the closed-form gradients of
/// [`MlpPosterior`] (the same energy and gradients as autodiff's to rounding, about twice the
/// steps per second); a learned noise precision needs [`WithNoise`] and runs on the autodiff
/// device with the autodiff [`Posterior`].
pub fn run_regression(
    run: &RegressionRun,
    mlp: &MlpConfig,
    data: &SplitData,
    device: &Device,
    files: Option<&RunFiles>,
) -> Result<RegressionResult, RunError> {
    run_regression_on(run, mlp, data, device, files, &Ranks::local())?
        .ok_or_else(|| RunError::Observer("a one-process run has no result".into()))
}

/// [`run_regression`] on this rank's block of the chains laid out over `ranks`: at every kept
/// step each rank predicts with its chains' samples and rank 0 folds the predictions in chain
/// order ([`Evaluate::kept`]: the one-process order, so the sums are its bits) and returns the
/// result (`None` on the other ranks).
pub fn run_regression_on(
    run: &RegressionRun,
    mlp: &MlpConfig,
    data: &SplitData,
    device: &Device,
    files: Option<&RunFiles>,
    ranks: &Ranks,
) -> Result<Option<RegressionResult>, RunError> {
    let run = &run.resolved(data.n_train());
    run.noise.validate()?;
    let posterior = Posterior {
        likelihood: run.noise.likelihood(),
        scale: Scale::from_weight_decay(data.n_train(), run.weight_decay),
    };
    let placement = ranks.placement(run.chains.max(1))?;
    let here = placement.here();
    let job = Job {
        run,
        mlp,
        data,
        files,
        ranks,
        placement,
    };
    match run.noise {
        RegressionNoise::Fixed { .. } => {
            let plain = device.clone().without_autodiff();
            let models = init::chains_in(&plain, run.seed, here, || mlp.init(&plain));
            run_model(job, &plain, models, MlpPosterior::new(posterior))
        }
        RegressionNoise::Learned { .. } => {
            let ad = device.clone().autodiff();
            let models = init::chains_in(&ad, run.seed, here, || mlp.init(&ad))
                .into_iter()
                .map(|net| WithNoise::new(net, 1.0, &ad))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| RunError::Setting(e.to_string()))?;
            run_model(job, &ad, models, posterior)
        }
    }
}

/// What one run's chains run on, beside the models.
struct Job<'a> {
    run: &'a RegressionRun,
    mlp: &'a MlpConfig,
    data: &'a SplitData,
    files: Option<&'a RunFiles>,
    ranks: &'a Ranks,
    placement: Placement,
}

/// Refuses to continue the checkpoint at `path`, whose meta `saved` holds the settings it was
/// written with, under other settings `run` (`config.toml` edited since the run started: a
/// resumed run would move on with two learning rates). A checkpoint of an older sgmcmc holds
/// none and is continued.
fn same_settings(
    path: &std::path::Path,
    saved: &[u8],
    run: &RegressionRun,
) -> Result<(), RunError> {
    if saved.is_empty() {
        return Ok(());
    }
    let old = decode::<RegressionRun>(saved).ok();
    if old.as_ref() == Some(run) {
        return Ok(());
    }
    Err(changed_settings(path, old.as_ref(), run))
}

/// [`run_regression_on`] for this rank's initial models (MLPs, or MLPs with a learned noise
/// precision) and their posterior.
fn run_model<M, T>(
    job: Job<'_>,
    device: &Device,
    models: Vec<M>,
    posterior: T,
) -> Result<Option<RegressionResult>, RunError>
where
    M: Network<Input = Tensor<2>> + 'static,
    T: Target<M, Batch = Batch<Tensor<2>>> + Send + 'static,
{
    let Job {
        run,
        mlp,
        data,
        files,
        ranks,
        placement,
    } = job;
    let (n, d) = (data.n_train(), data.n_features);
    if run.batch == 0 || n < run.batch {
        return Err(RunError::Input(format!(
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
    crate::limits::check_steps("epochs", total)?;
    let total = total.unwrap_or(u64::MAX);
    let burn = total / 2;
    let every = ((total - burn) / run.models.max(1) as u64).max(1);
    let ctx = BuildContext::steps(total).chains(placement.total());
    let chains = placement.total();
    let ens = ModuleEnsemble::new_part(posterior, models, run.seed, placement.here().start)?;
    let spec = fresh::settings(&run.sampler, ranks.is_distributed())?.spec(&ctx)?;
    let mut sampler = if ranks.is_distributed() {
        spec.build_placed(ens, run.seed, placement)?
    } else {
        let draws = fresh::fresh_batches(x_train.clone(), y_train.clone(), run.batch, run.seed);
        spec.build_with_data(ens, run.seed, draws, None)?
    };
    let mut stats = ContourWatch::new(sampler.multiplier_reach(total).map(ContourStats::new), burn);
    let sums = RegressionAverage::new(n, data.y_test_raw.clone());
    // The model average of the kept samples, folded on rank 0 in step and chain order.
    let x_fit = x_train.clone();
    let mut average = Evaluate::kept(
        sums,
        |_: &Scoring<'_>, m: &M| {
            Ok(ModelPredictions {
                test: read_f64(m.forward(x_test.clone())).map_err(|e| e.to_string())?,
                train: read_f64(m.forward(x_fit.clone())).map_err(|e| e.to_string())?,
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
        if matches!(run.noise, RegressionNoise::Learned { .. }) {
            return Err(RunError::Setting(
                "--save-samples supports the fixed-noise MLP only".into(),
            ));
        }
        SavedModel::UciMlp {
            mlp: mlp.clone(),
            standardizer: data.standardizer.clone(),
            standardize_target: run.standardize_target,
        }
        .write(&f.dir)?;
    }
    // The minibatches: the rows shuffled in place by one Fisher-Yates pass per epoch.
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
        let meta = encode(run)?;
        if f.resume
            && let Some(resume) = Resume::if_present::<RunError>(
                (&path, f.run_dir()),
                ranks,
                (f.command, chains),
                |saved| same_settings(&path, saved, run),
                &f.warn,
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
        .ok_or_else(|| RunError::Observer("no model was collected (weights vanished)".into()))?;
    let (weight, weight_sq) = s.weights();
    Ok(Some(RegressionResult {
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
