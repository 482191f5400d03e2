//! `sgmcmc uci --table`: the CSGLD paper's four data sets x six samplers, beside the paper's
//! RMSE (Table 1).

use std::path::PathBuf;

use sgmcmc_data::UciDataset;
use sgmcmc_engine::experiment::regression::{RegressionRun, SeriesRun, run_regressions};
use sgmcmc_samplers::registry::SamplerSettings;

use super::protocol::uci_mlp;
use super::report::{cell, report};
use super::{TABLE_FILES, UciArgs, check_counts, dataset_dir, run_of, split_of, timed_series};
use crate::error::AppError;

/// `sgmcmc uci --table`: 4 datasets x 6 samplers.
pub(super) fn table(a: &UciArgs) -> Result<(), AppError> {
    let names = ["energy", "concrete", "yacht", "wine-quality-red"].map(String::from);
    let samplers = ["sgd", "sgld", "csgld", "msgd", "sghmc", "csghmc"];
    check_counts(a)?;
    // Every run's settings, checked before the folder is touched; a `--set` counts when one
    // of the table's samplers reads it.
    let runs = names
        .iter()
        .flat_map(|d| samplers.map(|s| (d, s)))
        .map(|(d, s)| Ok((d.clone(), run_of(a, d, s)?)))
        .collect::<Result<Vec<_>, AppError>>()?;
    let settings: Vec<&SamplerSettings> = runs.iter().map(|(_, r)| &r.sampler).collect();
    sgmcmc_engine::settings::check_sets_read(&settings, &a.set)?;
    let out = a.output.dir_or(|| PathBuf::from("runs/uci-table"));
    let device = a.device.checked("uci")?;
    a.output.fresh(&out, TABLE_FILES)?;
    let datasets: Vec<(String, UciDataset)> = names
        .iter()
        .map(|n| {
            let dir = dataset_dir(a.data.given(), n);
            UciDataset::load(&dir)
                .map(|d| (n.clone(), d))
                .map_err(|e| AppError::Input(format!("dataset `{n}`: {e}")))
        })
        .collect::<Result<_, _>>()?;
    let mut series = Vec::new();
    for (d, run) in &runs {
        let data = &datasets.iter().find(|x| x.0 == *d).expect("loaded").1;
        for seed in 0..a.seeds {
            let run = RegressionRun {
                seed,
                ..run.clone()
            };
            let split = split_of(&run, data);
            series.push(SeriesRun {
                run,
                data,
                split,
                files: None,
            });
        }
    }
    // The table runs in one process.
    let (results, start) = timed_series(series.len(), a.output.progress(), device, |d, tick| {
        run_regressions(&series, a.jobs, d, uci_mlp, tick)
    })?;
    let cells: Vec<_> = runs
        .iter()
        .zip(results.chunks(a.seeds as usize))
        .map(|((d, run), chunk)| cell(d, &run.sampler.name, chunk.to_vec()))
        .collect();
    let wall = start.elapsed().as_secs_f64();
    report(&cells, a.seeds, wall, a.noise_model()?, &out, true)
}
