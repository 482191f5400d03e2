//! What `sgmcmc uci` writes and prints: each (data set, sampler) cell's RMSE and NLL over its
//! seeds beside the paper's, `table.md`, `runs.csv`, `summary.json` or `table.json`, and each
//! seed's draws as an ArviZ store.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;
use sgmcmc_engine::experiment::regression::{RegressionNoise, RegressionResult};

use super::folder::Prepared;
use super::paper_rmse;
use crate::error::AppError;
use crate::output;

/// One (dataset, sampler) cell over seeds.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    /// Dataset.
    pub dataset: String,
    /// Sampler.
    pub sampler: String,
    /// Per-seed results.
    pub runs: Vec<RegressionResult>,
    /// Mean and sd of the RMSE.
    pub rmse: (f64, f64),
    /// Mean and sd of the test NLL.
    pub nll: (f64, f64),
    /// The paper's RMSE.
    pub paper_rmse: Option<f64>,
}

fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (m, var.sqrt())
}

pub(super) fn cell(dataset: &str, sampler: &str, runs: Vec<RegressionResult>) -> Cell {
    let ok: Vec<&RegressionResult> = runs.iter().filter(|r| r.error.is_none()).collect();
    let rmse: Vec<f64> = ok.iter().map(|r| r.rmse).collect();
    let nll: Vec<f64> = ok.iter().map(|r| r.nll).collect();
    Cell {
        dataset: dataset.to_string(),
        sampler: sampler.to_string(),
        rmse: mean_sd(&rmse),
        nll: mean_sd(&nll),
        paper_rmse: paper_rmse(dataset, sampler),
        runs,
    }
}

/// Prints and writes the table (`table.md`, `runs.csv`, `summary.json` or `table.json`).
pub(super) fn report(
    cells: &[Cell],
    seeds: u64,
    wall: f64,
    noise: RegressionNoise,
    out: &Path,
    grid: bool,
) -> Result<(), AppError> {
    let mut table = render(cells, seeds, wall);
    {
        use std::fmt::Write;
        if let RegressionNoise::Learned { shape, rate } = noise {
            for c in cells {
                let sds: Vec<f64> = c.runs.iter().filter_map(|r| r.noise_sd).collect();
                let _ = writeln!(
                    table,
                    "{} / {}: learned noise, Gamma({shape}, {rate}) prior; mean sampled noise sd {:.3}",
                    c.dataset,
                    c.sampler,
                    mean_sd(&sds).0
                );
            }
        }
        for c in cells {
            let stats: Vec<_> = c.runs.iter().filter_map(|r| r.contour.as_ref()).collect();
            if let Some(line) = sgmcmc_samplers::diagnostics::contour::describe(&stats) {
                let _ = writeln!(table, "{} / {}: {line}", c.dataset, c.sampler);
            }
        }
    }
    print!("{table}");
    output::run_dir(out)?;
    output::write_atomic(&out.join("table.md"), table.as_bytes())?;
    let rows: Vec<Vec<f64>> = cells
        .iter()
        .enumerate()
        .flat_map(|(c, cell)| {
            cell.runs
                .iter()
                .enumerate()
                .map(move |(s, r)| vec![c as f64, s as f64, r.rmse, r.nll, r.wall_seconds])
        })
        .collect();
    output::write_csv(
        &out.join("runs.csv"),
        &["cell", "seed", "rmse", "nll", "wall_seconds"],
        &rows,
    )?;
    let runs: usize = cells.iter().map(|c| c.runs.len()).sum();
    let failed: Vec<(&Cell, &str)> = cells
        .iter()
        .flat_map(|c| {
            c.runs
                .iter()
                .filter_map(move |r| Some((c, r.error.as_deref()?)))
        })
        .collect();
    let summary = serde_json::json!({
        "wall_seconds": wall,
        "noise": noise,
        "runs": runs,
        "failed_runs": failed.len(),
        "cells": cells,
        "rmse": cells.first().map(|c| c.rmse.0),
        "nll": cells.first().map(|c| c.nll.0),
    });
    output::write_json(
        &out.join(if grid { "table.json" } else { "summary.json" }),
        &summary,
    )?;
    println!("wrote {}", out.display());
    // One line for every failed run together (each one's reason is in table.md's cells and
    // summary.json's runs); the figures average the runs that finished.
    if let Some((c, why)) = failed.first() {
        eprintln!(
            "warning: {} of {runs} runs failed and are left out of the figures (first: {} / {}: \
             {why})",
            failed.len(),
            c.dataset,
            c.sampler
        );
    }
    let dead: Vec<String> = cells
        .iter()
        .filter(|c| c.runs.iter().all(|r| r.error.is_some()))
        .map(|c| format!("{} / {}", c.dataset, c.sampler))
        .collect();
    if !dead.is_empty() {
        return Err(AppError::Run(format!(
            "every run failed for {} (see table.md)",
            dead.join(", ")
        )));
    }
    Ok(())
}

/// A markdown table: RMSE and NLL (mean +- sd) with the paper's RMSE.
fn render(cells: &[Cell], seeds: u64, wall: f64) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| dataset | sampler | RMSE (mean +- sd over the runs that finished) | paper RMSE | test NLL | failed runs |\n|---|---|---|---|---|---|"
    );
    for c in cells {
        let failed = c.runs.iter().filter(|r| r.error.is_some()).count();
        // A cell where no run finished has no mean: a dash, not NaN.
        let pm = |(m, sd): (f64, f64)| {
            if m.is_finite() {
                output::mean_pm(m, sd)
            } else {
                "-".into()
            }
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {failed} of {seeds} |",
            c.dataset,
            c.sampler,
            pm(c.rmse),
            c.paper_rmse.map_or("-".into(), |v| format!("{v:.2}")),
            pm(c.nll),
        );
    }
    let _ = writeln!(s, "\nwall time {wall:.0} s");
    s
}

/// Rank 0's report of the seeds of one configuration (`over`: the ranks of a distributed
/// run): each seed's draws as an ArviZ store in its folder, the summary and its files.
pub(super) fn report_seeds(
    p: &Prepared,
    results: Vec<RegressionResult>,
    start: Instant,
    over: Option<usize>,
) -> Result<(), AppError> {
    let (config, out) = (&p.config, &p.out);
    for (seed, r) in results.iter().enumerate() {
        if let Some(trace) = &r.trace {
            let dir = out.join(format!("seed-{seed}"));
            crate::output::run_dir(&dir)?;
            sgmcmc_engine::experiment::write_trace(&dir, trace)?;
        }
    }
    let sampler = config.run.sampler.name.clone();
    let cells = vec![cell(&config.dataset, &sampler, results)];
    let wall = start.elapsed().as_secs_f64();
    report(&cells, config.seeds, wall, config.run.noise, out, false)?;
    if let Some(ranks) = over {
        println!(
            "{} seeds of {} x {} chains, each over {ranks} ranks",
            config.seeds, sampler, config.run.chains,
        );
    }
    Ok(())
}
