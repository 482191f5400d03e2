//! The outputs of one `sgmcmc images` run: CSV tables, PNG figures and `summary.json`.
//!
//! * `energy.csv`: the stochastic energy `U~` of every chain per step;
//! * `accuracy.csv` / `accuracy.png`: test accuracy of each chain's network (on the first
//!   `curve_limit` test images) and of the model average (on all) over the epochs, with the
//!   average's NLL, Brier and ECE;
//! * `calibration.csv` / `calibration.png`: reliability diagram (accuracy vs confidence per bin)
//!   of the model average and of the last sample alone;
//! * `ood_entropy.csv` / `ood_entropy_cdf.png`: empirical CDFs of the predictive entropy on the
//!   out-of-distribution set (model average, last sample) and on the test set (model average);
//! * `summary.json`: the final metrics beside the paper's (`paper`) where the preset has them,
//!   throughput (steps/s on the run's device), timings and the convergence diagnostics;
//! * `trace.zarr`: the averaged networks' energies and log weights by (chain, draw), an ArviZ
//!   store.

use std::path::Path;

use serde::Serialize;

use sgmcmc_engine::experiment::write_trace;
use sgmcmc_engine::observers::TraceSummary;
use sgmcmc_models::metrics::{ClassifierMetrics, OodMetrics, sorted_entropy};

use crate::error::AppError;
use crate::images::config::ImagesConfig;
use crate::images::data::ImagesData;
use crate::images::eval::{metrics, reliability};
use crate::images::presets::{PaperColumns, paper_row};
use crate::images::run::Record;
use crate::output::{RunHeader, write_csv, write_json};

/// `summary.json` of a run.
#[derive(Clone, Debug, Serialize)]
pub struct ImagesSummary {
    /// Common header.
    #[serde(flatten)]
    pub header: RunHeader,
    /// Model.
    pub model: String,
    /// Chains.
    pub chains: usize,
    /// Epochs run.
    pub epochs: f64,
    /// Training images.
    pub n_train: usize,
    /// Test images scored.
    pub n_test: usize,
    /// Out-of-distribution set and images scored.
    pub ood: (String, usize),
    /// Best point estimate: the best test accuracy of any single network scored on the whole
    /// test set (collected networks, and every chain at the last evaluation).
    pub bpe_accuracy: f64,
    /// The model average on the test set.
    pub bma: ClassifierMetrics,
    /// The model average on the out-of-distribution set.
    pub bma_ood: OodMetrics,
    /// The last collected network alone.
    pub last_sample: ClassifierMetrics,
    /// The last collected network alone on the out-of-distribution set.
    pub last_sample_ood: OodMetrics,
    /// Models averaged, and their effective number (Kish).
    pub bma_models: usize,
    /// Kish's effective number of averaged models.
    pub bma_effective_models: f64,
    /// The paper's numbers for this preset's table row.
    pub paper: Option<PaperColumns>,
    /// Training seconds (all chains, evaluation excluded).
    pub train_seconds: f64,
    /// Evaluation seconds.
    pub eval_seconds: f64,
    /// The smallest and largest gradient multiplier over the run (contour samplers: a range
    /// near 1 means theta did not learn the energy landscape, and the run sampled as SGHMC).
    pub multiplier_range: [f64; 2],
    /// Convergence diagnostics of the averaged networks' energies (rank-normalised R-hat, bulk
    /// and tail ESS, MCSE) and the Pareto k-hat of their log weights when these vary; the
    /// draws are in `trace.zarr`.
    pub diagnostics: TraceSummary,
}

/// Writes every output of a finished run into `dir`; returns the summary.
pub fn write(
    dir: &Path,
    config: &ImagesConfig,
    data: &ImagesData,
    record: &Record,
    device: &str,
) -> Result<ImagesSummary, AppError> {
    let k = data.classes();
    let energy_rows: Vec<Vec<f64>> = record
        .energies
        .iter()
        .enumerate()
        .map(|(step, e)| {
            std::iter::once(step as f64)
                .chain(e.iter().copied())
                .collect()
        })
        .collect();
    let energy_header: Vec<String> = std::iter::once("step".to_string())
        .chain((0..config.chains).map(|p| format!("chain{p}")))
        .collect();
    let refs: Vec<&str> = energy_header.iter().map(String::as_str).collect();
    write_csv(&dir.join("energy.csv"), &refs, &energy_rows)?;

    let nan = f64::NAN;
    let acc_rows: Vec<Vec<f64>> = record
        .evals
        .iter()
        .map(|e| {
            let b = e.bma.unwrap_or(ClassifierMetrics {
                accuracy: nan,
                nll: nan,
                nll_sum: nan,
                brier_permille: nan,
                ece_percent: nan,
            });
            let mut row = vec![
                e.epoch,
                e.step as f64,
                b.accuracy,
                b.nll,
                b.brier_permille,
                b.ece_percent,
                e.bma_ood.map_or(nan, |o| o.mean_entropy),
                e.models as f64,
                e.effective_models,
            ];
            row.extend(e.chains.iter().map(|c| c.accuracy));
            row
        })
        .collect();
    let mut acc_header = vec![
        "epoch".to_string(),
        "step".into(),
        "bma_accuracy".into(),
        "bma_nll".into(),
        "bma_brier_permille".into(),
        "bma_ece_percent".into(),
        "bma_ood_entropy".into(),
        "models".into(),
        "effective_models".into(),
    ];
    acc_header.extend((0..config.chains).map(|p| format!("chain{p}_accuracy")));
    let refs: Vec<&str> = acc_header.iter().map(String::as_str).collect();
    write_csv(&dir.join("accuracy.csv"), &refs, &acc_rows)?;
    let mut series: Vec<(String, Vec<(f64, f64)>)> = (0..config.chains)
        .map(|p| {
            (
                format!("chain {p}"),
                record
                    .evals
                    .iter()
                    .map(|e| (e.epoch, e.chains[p].accuracy))
                    .collect(),
            )
        })
        .collect();
    series.push((
        "model average".into(),
        record
            .evals
            .iter()
            .filter_map(|e| e.bma.map(|b| (e.epoch, b.accuracy)))
            .collect(),
    ));
    let named: Vec<(&str, Vec<(f64, f64)>)> = series
        .iter()
        .map(|(n, v)| (n.as_str(), v.clone()))
        .collect();
    sgmcmc_plot::lines(
        &dir.join("accuracy.png"),
        &format!(
            "{} {} on {}: test accuracy",
            config.sampler, config.model, config.dataset
        ),
        "epoch",
        "test accuracy",
        &named,
    )?;

    let Some(bma_probs) = record.averages.test.mean() else {
        return Err(AppError::Run(format!(
            "no model entered the model average ({} collected, all with weight 0): {}",
            record.averages.test.models(),
            if record.averages.test.models() == 0 {
                "collect earlier (burn_epochs) or run longer".to_string()
            } else {
                format!(
                    "every collected point sat in the top energy bin (energies in {}); move the \
                     partition (u_min {}, du {}, bins {}) over them",
                    dir.join("energy.csv").display(),
                    config.u_min,
                    config.du,
                    config.bins
                )
            }
        )));
    };
    let bma = metrics(&bma_probs, &data.test);
    let bma_rel = reliability(&bma_probs, &data.test);
    let last = record.last_sample.clone().unwrap_or_default();
    let mut cal_rows = Vec::new();
    for (set, rel) in [(0.0, &bma_rel), (1.0, &last.reliability)] {
        for &(conf, acc, n) in rel {
            cal_rows.push(vec![set, conf, acc, n as f64]);
        }
    }
    write_csv(
        &dir.join("calibration.csv"),
        &["set", "confidence", "accuracy", "count"],
        &cal_rows,
    )?;
    let pts = |rel: &[(f64, f64, usize)]| rel.iter().map(|&(c, a, _)| (c, a)).collect();
    sgmcmc_plot::lines(
        &dir.join("calibration.png"),
        "reliability: accuracy vs confidence (set 0 model average, 1 last sample)",
        "confidence",
        "accuracy",
        &[
            ("ideal", vec![(0.0, 0.0), (1.0, 1.0)]),
            ("model average", pts(&bma_rel)),
            ("last sample", pts(&last.reliability)),
        ],
    )?;

    let ood_probs = record.averages.ood.mean().unwrap_or_default();
    let bma_ood = OodMetrics::of(&ood_probs, k);
    let cdfs = [
        (
            "model average, out of distribution",
            sorted_entropy(&ood_probs, k),
        ),
        ("last sample, out of distribution", last.ood_entropy.clone()),
        ("model average, test set", sorted_entropy(&bma_probs, k)),
    ];
    let mut ent_rows = Vec::new();
    for (set, (_, e)) in cdfs.iter().enumerate() {
        for (i, &h) in e.iter().enumerate() {
            ent_rows.push(vec![set as f64, h, (i + 1) as f64 / e.len() as f64]);
        }
    }
    write_csv(
        &dir.join("ood_entropy.csv"),
        &["set", "entropy", "cdf"],
        &ent_rows,
    )?;
    let curves: Vec<(&str, Vec<(f64, f64)>)> = cdfs
        .iter()
        .map(|(name, e)| {
            let n = e.len() as f64;
            let step = (e.len() / 400).max(1);
            let pts = e
                .iter()
                .enumerate()
                .filter(|(i, _)| i % step == 0 || i + 1 == e.len())
                .map(|(i, &h)| (h, (i + 1) as f64 / n))
                .collect();
            (*name, pts)
        })
        .collect();
    sgmcmc_plot::lines(
        &dir.join("ood_entropy_cdf.png"),
        &format!(
            "predictive entropy CDF ({} vs {})",
            config.ood, config.dataset
        ),
        "entropy (nats)",
        "fraction of images",
        &curves,
    )?;

    // The best single network on the whole test set (collected networks and the last
    // evaluation's chains).
    let bpe = record
        .evals
        .iter()
        .flat_map(|e| e.full.iter().flatten().map(|m| m.accuracy))
        .fold(f64::NAN, f64::max);
    let wall = record.train_seconds + record.eval_seconds;
    let summary = ImagesSummary {
        header: RunHeader {
            sampler: config.sampler.clone(),
            target: config.dataset.clone(),
            seed: config.seed,
            device: device.into(),
            wall_seconds: wall,
            steps_per_second: record.steps_done as f64 / record.train_seconds.max(1e-9),
        },
        model: config.model.clone(),
        chains: config.chains,
        epochs: config.epochs,
        n_train: data.train.len(),
        n_test: data.test.len(),
        ood: (config.ood.clone(), data.ood.len()),
        bpe_accuracy: bpe,
        bma,
        bma_ood,
        last_sample: last.test,
        last_sample_ood: last.ood,
        bma_models: record.averages.test.models(),
        bma_effective_models: record.averages.test.effective_models(),
        paper: paper_row(&config.preset),
        train_seconds: record.train_seconds,
        eval_seconds: record.eval_seconds,
        multiplier_range: record.multiplier_range,
        diagnostics: write_trace(dir, &record.trace)?,
    };
    write_json(&dir.join("summary.json"), &summary)?;
    Ok(summary)
}
