//! The outputs of one `sgmcmc mnist` run: CSV tables, PNG figures and `summary.json`.
//!
//! * `loss.csv` / `loss.png`: the stochastic energy per training image (`U~ / N`) of every
//!   chain per step (Fig. 6.2a / 7.4a);
//! * `multiplier.csv` columns in `loss.csv`, `multiplier.png`: gradient multiplier vs loss
//!   (contour samplers, Fig. 7.4b);
//! * `accuracy.csv` / `accuracy.png`: test accuracy of each chain's model and of the weighted
//!   model average (Fig. 7.4c);
//! * `entropy.csv` / `entropy_cdf.png`: empirical CDFs of the averaged predictive entropy on
//!   the held-out digits (`set` 0) and on Fashion-MNIST (`set` 1) (Fig. 7.4d);
//! * `trace.zarr`: the averaged models' energies and log weights by (chain, draw), an ArviZ
//!   store, with their diagnostics in `summary.json`.

use std::path::Path;

use serde::Serialize;

use sgmcmc_engine::experiment::write_trace;
use sgmcmc_engine::observers::TraceSummary;
use sgmcmc_models::metrics::{Bma, fraction_above, sorted_entropy};

use crate::error::AppError;
use crate::mnist::config::MnistConfig;
use crate::mnist::data::MnistData;
use crate::mnist::eval::scores;
use crate::mnist::run::Record;
use crate::output::{RunHeader, range, write_csv, write_json};

/// Entropy level (nats) above which a held-out prediction counts as uncertain.
pub const ENTROPY_LEVEL: f64 = 0.5;

/// `summary.json` of a run.
#[derive(Clone, Debug, Serialize)]
pub struct MnistSummary {
    /// Common header.
    #[serde(flatten)]
    pub header: RunHeader,
    /// Chains.
    pub chains: usize,
    /// Epochs done.
    pub epochs: usize,
    /// Training images.
    pub n_train: usize,
    /// Final test accuracy of chain 0's model.
    pub final_accuracy: f64,
    /// Test accuracy of the weighted model average.
    pub bma_accuracy: f64,
    /// Test NLL of the weighted model average.
    pub bma_nll: f64,
    /// Models averaged, and their effective number.
    pub bma_models: usize,
    /// Kish's effective number of averaged models.
    pub bma_effective_models: f64,
    /// Range `[min, max]` of the loss (`U~ / N`) over the last half of the steps, all chains.
    pub loss_range_last_half: [f64; 2],
    /// Range of the gradient multiplier over the run.
    pub multiplier_range: [f64; 2],
    /// Fraction of held-out digits whose averaged predictive entropy exceeds 0.5 nats.
    pub heldout_entropy_above_half: f64,
    /// The same on Fashion-MNIST (NaN without the data).
    pub fashion_entropy_above_half: f64,
    /// Training seconds per epoch (all chains, evaluation excluded).
    pub seconds_per_epoch: f64,
    /// Evaluation seconds in all.
    pub eval_seconds: f64,
    /// Convergence diagnostics of the averaged models' energies (rank-normalised R-hat, bulk
    /// and tail ESS, MCSE) and the Pareto k-hat of their log weights when these vary; the
    /// draws are in `trace.zarr`.
    pub diagnostics: TraceSummary,
}

/// Writes every output of a finished run into `dir`; returns the summary.
pub fn write(
    dir: &Path,
    config: &MnistConfig,
    data: &MnistData,
    record: &Record,
    device: &str,
) -> Result<MnistSummary, AppError> {
    let n = data.train.len() as f64;
    let k = config.classes.len();
    let steps = &record.steps;
    let rows: Vec<Vec<f64>> = steps
        .iter()
        .map(|r| {
            vec![
                r.step as f64,
                r.chain as f64,
                r.energy,
                r.energy / n,
                r.multiplier,
                r.log_weight,
            ]
        })
        .collect();
    write_csv(
        &dir.join("loss.csv"),
        &[
            "step",
            "chain",
            "energy",
            "loss",
            "multiplier",
            "log_weight",
        ],
        &rows,
    )?;
    let per_chain = |f: &dyn Fn(&crate::mnist::run::StepRow) -> (f64, f64)| {
        (0..config.chains)
            .map(|p| {
                (
                    format!("chain {p}"),
                    steps
                        .iter()
                        .filter(|r| r.chain == p)
                        .map(f)
                        .collect::<Vec<_>>(),
                )
            })
            .collect::<Vec<_>>()
    };
    let series = per_chain(&|r| (r.step as f64, r.energy / n));
    let named: Vec<(&str, Vec<(f64, f64)>)> = series
        .iter()
        .map(|(s, v)| (s.as_str(), v.clone()))
        .collect();
    sgmcmc_plot::lines(
        &dir.join("loss.png"),
        &format!("{}: training loss (U~ / N)", config.sampler),
        "step",
        "loss",
        &named,
    )?;
    let scatter: Vec<(f64, f64)> = steps.iter().map(|r| (r.energy / n, r.multiplier)).collect();
    sgmcmc_plot::scatter(
        &dir.join("multiplier.png"),
        &format!("{}: gradient multiplier vs loss", config.sampler),
        "loss (U~ / N)",
        "multiplier",
        &[(config.sampler.as_str(), scatter)],
    )?;
    let eval_rows: Vec<Vec<f64>> = record
        .evals
        .iter()
        .map(|r| {
            let mean = r.chain_accuracy.iter().sum::<f64>() / r.chain_accuracy.len() as f64;
            vec![
                r.epoch as f64,
                r.step as f64,
                r.chain_accuracy[0],
                mean,
                r.bma_accuracy.unwrap_or(f64::NAN),
                r.bma_nll.unwrap_or(f64::NAN),
                r.effective_models,
            ]
        })
        .collect();
    write_csv(
        &dir.join("accuracy.csv"),
        &[
            "epoch",
            "step",
            "chain0_accuracy",
            "mean_chain_accuracy",
            "bma_accuracy",
            "bma_nll",
            "effective_models",
        ],
        &eval_rows,
    )?;
    let col = |j: usize| -> Vec<(f64, f64)> {
        eval_rows
            .iter()
            .filter(|r| r[j].is_finite())
            .map(|r| (r[0], r[j]))
            .collect()
    };
    sgmcmc_plot::lines(
        &dir.join("accuracy.png"),
        &format!("{}: test accuracy", config.sampler),
        "epoch",
        "accuracy",
        &[
            ("single model (chain 0)", col(2)),
            ("model average", col(4)),
        ],
    )?;
    // Entropies of the averaged predictions (none without a model averaged).
    let entropies = |bma: &Bma| {
        bma.mean()
            .map(|m| sorted_entropy(&m, k))
            .unwrap_or_default()
    };
    let (heldout, fashion) = (
        entropies(&record.averages.heldout),
        entropies(&record.averages.fashion),
    );
    let cdf = |v: &[f64]| -> Vec<(f64, f64)> {
        v.iter()
            .enumerate()
            .map(|(i, e)| (*e, (i + 1) as f64 / v.len() as f64))
            .collect()
    };
    let mut entropy_rows = Vec::new();
    for (set, v) in [(0.0, &heldout), (1.0, &fashion)] {
        for (e, c) in cdf(v) {
            entropy_rows.push(vec![set, e, c]);
        }
    }
    write_csv(
        &dir.join("entropy.csv"),
        &["set", "entropy", "cdf"],
        &entropy_rows,
    )?;
    sgmcmc_plot::lines(
        &dir.join("entropy_cdf.png"),
        &format!(
            "{}: predictive entropy, out of distribution",
            config.sampler
        ),
        "entropy (nats)",
        "empirical CDF",
        &[
            ("held-out digits", cdf(&heldout)),
            ("Fashion-MNIST", cdf(&fashion)),
        ],
    )?;
    let bma = record
        .averages
        .test
        .mean()
        .map(|m| scores(&m, &data.test, k));
    let total_steps = steps.iter().map(|r| r.step).max().map_or(0, |s| s + 1);
    let summary = MnistSummary {
        header: RunHeader {
            sampler: config.sampler.clone(),
            target: format!("mnist digits {:?}", config.classes),
            seed: config.seed,
            device: device.to_string(),
            wall_seconds: record.train_seconds + record.eval_seconds,
            steps_per_second: total_steps as f64 / record.train_seconds.max(1e-9),
        },
        chains: config.chains,
        epochs: record.epochs_done,
        n_train: data.train.len(),
        final_accuracy: record
            .evals
            .last()
            .map_or(f64::NAN, |r| r.chain_accuracy[0]),
        bma_accuracy: bma.map_or(f64::NAN, |s| s.accuracy),
        bma_nll: bma.map_or(f64::NAN, |s| s.nll),
        bma_models: record.averages.test.models(),
        bma_effective_models: record.averages.test.effective_models(),
        loss_range_last_half: range(
            steps
                .iter()
                .filter(|r| r.step >= total_steps / 2)
                .map(|r| r.energy / n),
        ),
        multiplier_range: range(steps.iter().map(|r| r.multiplier)),
        heldout_entropy_above_half: fraction_above(&heldout, ENTROPY_LEVEL),
        fashion_entropy_above_half: fraction_above(&fashion, ENTROPY_LEVEL),
        seconds_per_epoch: record.train_seconds / record.epochs_done.max(1) as f64,
        eval_seconds: record.eval_seconds,
        diagnostics: write_trace(dir, &record.trace)?,
    };
    write_json(&dir.join("summary.json"), &summary)?;
    Ok(summary)
}
