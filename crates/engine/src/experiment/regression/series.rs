//! A series of regression runs in one command: the seeds of a configuration, the cells of a
//! table ([`crate::experiment::run_series`] of [`run_regression_on`]).

use std::path::Path;

use burn::tensor::Device;
use sgmcmc_data::UciDataset;
use sgmcmc_models::MlpConfig;

use super::{RegressionResult, RegressionRun, RunFiles, changed_settings, run_regression_on};
use crate::error::RunError;
use crate::experiment::{run_series, with_result_file};
use crate::ranks::Ranks;

/// One run of a series.
pub struct SeriesRun<'a> {
    /// Its settings, with its seed.
    pub run: RegressionRun,
    /// The data set it runs on.
    pub data: &'a UciDataset,
    /// The split of `data` it runs on.
    pub split: usize,
    /// Where it keeps its files (`None`: none): checkpoints, samples and its `result.json`.
    pub files: Option<RunFiles>,
}

/// Runs `runs` in one process, `workers` side by side, each with the network `mlp(features)`;
/// the results in run order. `done` is called after each run (a progress bar).
///
/// A run with files writes its `result.json` with its settings; a finished run's file, on a
/// continued folder, is read back and checked against its settings ([`changed_settings`];
/// a result of an older sgmcmc records none and is read as it is). In one process a run that
/// failed (exit code 1: a divergence) is a result with NaN metrics and its reason
/// ([`RegressionResult::failed`]), so one failure does not lose the series; bad input still
/// ends it.
pub fn run_regressions(
    runs: &[SeriesRun<'_>],
    workers: usize,
    device: &Device,
    mlp: impl Fn(usize) -> MlpConfig + Sync,
    done: impl Fn() + Sync,
) -> Result<Vec<RegressionResult>, RunError> {
    run_regressions_on(&Ranks::local(), runs, workers, device, mlp, done)
}

/// [`run_regressions`] over `ranks` ([`run_series`]: one after another over the ranks of a
/// distributed job, each run over every rank); rank 0's results (the other ranks get none).
pub fn run_regressions_on(
    ranks: &Ranks,
    runs: &[SeriesRun<'_>],
    workers: usize,
    device: &Device,
    mlp: impl Fn(usize) -> MlpConfig + Sync,
    done: impl Fn() + Sync,
) -> Result<Vec<RegressionResult>, RunError> {
    let results = run_series(ranks, runs, workers, done, |r, ranks| {
        run_one(r, device, &mlp, ranks)
    })?;
    results
        .into_iter()
        .map(|r| match r {
            Err(e) if e.exit_code() == 1 => Ok(RegressionResult::failed(e.to_string())),
            r => r,
        })
        .collect()
}

/// One run of the series on this rank's chains of `ranks` (rank 0 alone returns its result).
fn run_one(
    r: &SeriesRun<'_>,
    device: &Device,
    mlp: &impl Fn(usize) -> MlpConfig,
    ranks: &Ranks,
) -> Result<Option<RegressionResult>, RunError> {
    let done = r.files.as_ref().map(|f| f.dir.join("result.json"));
    let check = |old: &RegressionResult, path: &Path| match old.settings.as_ref() {
        Some(s) if *s != r.run => Err(changed_settings(path, Some(s), &r.run)),
        _ => Ok(()),
    };
    with_result_file(ranks, done.as_deref(), check, || {
        let split = r
            .data
            .split(r.split)
            .map_err(|e| RunError::Input(e.to_string()))?;
        if let Some(f) = &r.files {
            crate::run_dir::create_run_dir(&f.dir)?;
        }
        let network = mlp(split.n_features);
        let result = run_regression_on(&r.run, &network, &split, device, r.files.as_ref(), ranks)?;
        Ok(result.map(|result| RegressionResult {
            settings: Some(r.run.clone()),
            ..result
        }))
    })
}

#[cfg(test)]
mod tests {
    use sgmcmc_data::uci::write_synthetic;
    use sgmcmc_models::Activation;
    use sgmcmc_samplers::registry::SamplerSettings;

    use super::super::{RegressionNoise, run_regression};
    use super::*;

    fn sgld(seed: u64, lr: f64) -> RegressionRun {
        RegressionRun {
            sampler: SamplerSettings::named("sgld"),
            chains: 2,
            epochs: 4,
            batch: 20,
            weight_decay: 1e-4,
            models: 4,
            seed,
            standardize_target: false,
            noise: RegressionNoise::Fixed { precision: 1.0 },
            lr_per_row: None,
        }
        .with_lr(lr)
    }

    fn mlp(inputs: usize) -> MlpConfig {
        MlpConfig {
            inputs,
            hidden: vec![8],
            outputs: 1,
            activation: Activation::Relu,
        }
    }

    #[test]
    fn a_series_keeps_failed_runs_as_rows_and_its_result_files() {
        let dir =
            std::env::temp_dir().join(format!("sgmcmc-regression-series-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        write_synthetic(&dir, 120, 3, 2, 0.1, 5).unwrap();
        let data = UciDataset::load(&dir).unwrap();
        let device = Device::flex().autodiff();
        let files = RunFiles {
            dir: dir.join("seed-0"),
            checkpoint_every: 0,
            save_samples: false,
            resume: false,
            command: "test",
            warn: |_| (),
        };
        let run = |seed, lr, split, files| SeriesRun {
            run: sgld(seed, lr),
            data: &data,
            split,
            files,
        };
        // Seed 1's step size sends its chains to infinity: a failed run, kept as a row.
        let runs = [run(0, 1e-3, 0, Some(files.clone())), run(1, 1e6, 1, None)];
        let results = run_regressions(&runs, 2, &device, mlp, || ()).unwrap();
        let alone = run_regression(
            &runs[0].run,
            &mlp(3),
            &data.split(0).unwrap(),
            &device,
            None,
        )
        .unwrap();
        assert_eq!(results[0].rmse.to_bits(), alone.rmse.to_bits());
        assert_eq!(results[0].nll.to_bits(), alone.nll.to_bits());
        assert_eq!(results[0].settings.as_ref(), Some(&runs[0].run));
        assert!(results[1].rmse.is_nan() && results[1].nll.is_nan());
        let why = results[1].error.as_deref().unwrap_or_default();
        assert!(why.contains("diverged"), "{why}");

        // Seed 0 wrote its result: read back as it is (a network asked for would mean the run
        // ran again), refused under other settings.
        assert!(files.dir.join("result.json").exists());
        let no_run = |_: usize| -> MlpConfig { panic!("a finished run ran again") };
        let again = run_regressions(&runs[..1], 1, &device, no_run, || ());
        assert_eq!(again.unwrap()[0].rmse.to_bits(), alone.rmse.to_bits());
        let changed = [run(0, 2e-3, 0, Some(files.clone()))];
        let e = run_regressions(&changed, 1, &device, mlp, || ()).unwrap_err();
        assert!(
            e.to_string().contains("sampler.lr = 0.002 (was 0.001)"),
            "{e}"
        );

        // A split the data does not have is bad input: it ends the series.
        let e = run_regressions(&[run(0, 1e-3, 7, None)], 1, &device, mlp, || ()).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
        assert!(e.to_string().contains("split 7 out of range"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
