//! The table rows of the papers as named presets (`tables.toml` beside this file, compiled in):
//! each sets the data, model, sampler and hyper-parameters of its row over the generic `gpu`
//! protocol, and carries the row's published numbers (the `paper` columns of `summary.json`)
//! and a note of what it does not reproduce. `--protocol gpu` runs the paper's schedule,
//! `--protocol cpu` the shortened one of [`ImagesConfig::cpu`].

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use sgmcmc_engine::settings::merge_toml;

use crate::error::AppError;
use crate::images::config::ImagesConfig;

/// The table rows, as compiled in.
pub const TABLES_TOML: &str = include_str!("tables.toml");

/// The published numbers of one table row (`None` where the table has no such column).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaperRow {
    /// Best point estimate accuracy (%).
    pub bpe: Option<f64>,
    /// Model-average accuracy (%).
    pub bma: Option<f64>,
    /// Model-average test NLL summed over the test set.
    pub nll: Option<f64>,
    /// Table 6.1's Brier score on SVHN (per mille, all-zero target, mean over classes).
    pub svhn_brier: Option<f64>,
}

/// One table row as a preset.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableRow {
    /// Preset name.
    pub name: String,
    /// Table of the thesis.
    pub table: String,
    /// The method as printed.
    pub method: String,
    /// Where the row is printed.
    pub source: String,
    /// What the preset does not reproduce of the paper's protocol.
    #[serde(default)]
    pub note: Option<String>,
    /// The published numbers.
    pub paper: PaperRow,
    /// The row's settings over the generic `gpu` protocol of its sampler.
    pub config: toml::Table,
}

impl TableRow {
    fn get(&self, key: &str) -> &str {
        self.config
            .get(key)
            .and_then(toml::Value::as_str)
            .unwrap_or("")
    }

    /// Data set of the row.
    pub fn dataset(&self) -> &str {
        self.get("dataset")
    }

    /// Model of the row.
    pub fn model(&self) -> &str {
        self.get("model")
    }

    /// Sampler of the row.
    pub fn sampler(&self) -> &str {
        self.get("sampler")
    }
}

#[derive(Deserialize)]
struct Tables {
    row: Vec<TableRow>,
}

/// Every table row.
pub fn table_rows() -> &'static [TableRow] {
    static ROWS: OnceLock<Vec<TableRow>> = OnceLock::new();
    ROWS.get_or_init(|| {
        toml::from_str::<Tables>(TABLES_TOML)
            .expect("images/tables.toml parses (checked by a test)")
            .row
    })
}

/// The table row `name`.
pub fn table_row(name: &str) -> Option<&'static TableRow> {
    table_rows().iter().find(|p| p.name == name)
}

/// The published numbers of preset `name`, with its table, method and note, if it is a
/// table row.
pub fn paper_row(name: &str) -> Option<PaperColumns> {
    table_row(name).map(|r| PaperColumns {
        table: r.table.clone(),
        method: r.method.clone(),
        source: r.source.clone(),
        note: r.note.clone(),
        numbers: r.paper.clone(),
    })
}

/// The `paper` entry of `summary.json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PaperColumns {
    /// Table of the thesis.
    pub table: String,
    /// The method as printed.
    pub method: String,
    /// Where the row is printed.
    pub source: String,
    /// What the preset does not reproduce.
    pub note: Option<String>,
    /// The published numbers.
    #[serde(flatten)]
    pub numbers: PaperRow,
}

/// The configuration of table row `name` under `protocol` (`gpu` or `cpu`).
pub fn table_config(name: &str, protocol: &str) -> Result<ImagesConfig, AppError> {
    let row = table_row(name).ok_or_else(|| {
        AppError::Usage(format!(
            "unknown preset `{name}` (known: cpu, gpu and the table rows of --list)"
        ))
    })?;
    let generic = ImagesConfig::preset("gpu", row.dataset(), row.model(), row.sampler())?;
    let text =
        toml::to_string(&row.config).map_err(|e| AppError::Run(format!("preset {name}: {e}")))?;
    let mut gpu: ImagesConfig = merge_toml(&generic, &text, &format!("preset {name}"))?;
    gpu.preset = name.into();
    match protocol {
        "gpu" => Ok(gpu),
        "cpu" => Ok(ImagesConfig::cpu(gpu)),
        other => Err(AppError::Usage(format!(
            "unknown protocol `{other}` (known: gpu, cpu)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_row_resolves_to_a_valid_config_under_both_protocols() {
        let rows = table_rows();
        assert_eq!(rows.len(), 119);
        for row in rows {
            for protocol in ["gpu", "cpu"] {
                let c = table_config(&row.name, protocol)
                    .unwrap_or_else(|e| panic!("{} ({protocol}): {e}", row.name));
                c.validate()
                    .unwrap_or_else(|e| panic!("{} ({protocol}): {e}", row.name));
                assert_eq!(c.preset, row.name);
            }
            assert!(
                row.paper.bma.is_some(),
                "{}: every row reports a BMA accuracy",
                row.name
            );
        }
        let r = table_row("t61-icsghmc-p4-resnet20-c100").unwrap();
        assert_eq!(r.paper.bma, Some(76.39));
        assert_eq!(r.paper.nll, Some(8076.0));
        assert_eq!(r.paper.svhn_brier, Some(2.52));
        let c = table_config(&r.name, "gpu").unwrap();
        assert_eq!(
            (c.chains, c.bins, c.du, c.zeta, c.u_min),
            (4, 200, 200.0, 3e6, 2e4)
        );
        assert_eq!(
            (c.lr, c.temperature, c.epochs, c.batch),
            (2e-6, 3e-4, 500.0, 256)
        );
        // Table 6.1's ICSGHMC decays the lr by 0.2 at epochs 250 and 375 of 500 (E.4.2);
        // Table 5.2's SGHMC keeps it constant.
        assert_eq!(
            (c.lr_milestones.clone(), c.lr_gamma),
            (vec![0.5, 0.75], 0.2)
        );
        let s = c.settings(195);
        assert_eq!(s.annealing.lr_milestones, vec![250.0, 375.0]);
        let constant = table_config("t52-sghmc-resnet20-c10", "gpu").unwrap();
        assert!(constant.lr_milestones.is_empty());
        assert!(table_config("t61-nope", "gpu").is_err());
        assert!(table_config(&r.name, "tpu").is_err());
    }

    /// The cpu protocol's budget: at most eight chain-epochs, so that every row runs in the
    /// 10 to 19 minutes measured for one chain of four epochs and four of two (README).
    #[test]
    fn the_cpu_protocol_keeps_every_row_within_eight_chain_epochs() {
        for row in table_rows() {
            let c = table_config(&row.name, "cpu").unwrap();
            assert!(
                c.chains as f64 * c.epochs <= 8.0,
                "{}: {} chains x {} epochs",
                row.name,
                c.chains,
                c.epochs
            );
            assert!(c.burn_epochs < c.epochs && c.eval_every <= c.epochs / 6.0);
            // Networks are collected (at the first evaluation from `burn_epochs` on) at least
            // one evaluation interval after the last lr decay, once they have settled.
            let first = (c.burn_epochs / c.eval_every - 1e-9).ceil() * c.eval_every;
            assert!(
                c.lr_milestones
                    .iter()
                    .all(|m| m * c.epochs + c.eval_every <= first + 1e-9),
                "{}: collected at epoch {first} before settling",
                row.name
            );
        }
    }
}
