//! `sgmcmc mnist --compare RUN ...`: several finished runs in one figure each (Fig. 7.4 a-d):
//! training-loss paths, multiplier vs loss, test accuracy of the model average, and the CDF of
//! held-out predictive entropy; plus `compare.csv` / `compare.json` / `compare.md` with the
//! runs' summary figures side by side.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::AppError;
use crate::output::{write_atomic, write_csv, write_json};

/// What a comparison writes into its folder.
pub const FILES: &[&str] = &[
    "compare_loss.png",
    "compare_multiplier.png",
    "compare_accuracy.png",
    "compare_entropy.png",
    "compare.csv",
    "compare.json",
    "compare.md",
];

/// A CSV file as a header and numeric rows.
struct Table {
    header: Vec<String>,
    rows: Vec<Vec<f64>>,
}

impl Table {
    fn read(path: &Path) -> Result<Self, AppError> {
        let text = fs::read_to_string(path)
            .map_err(|e| AppError::Input(format!("cannot read {}: {e}", path.display())))?;
        let mut lines = text.lines();
        let header: Vec<String> = lines
            .next()
            .ok_or_else(|| AppError::Input(format!("{} is empty", path.display())))?
            .split(',')
            .map(str::to_string)
            .collect();
        let rows = lines
            .enumerate()
            .map(|(i, l)| {
                l.split(',')
                    .map(|c| c.parse::<f64>())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| AppError::Input(format!("{} line {}: {e}", path.display(), i + 2)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { header, rows })
    }

    fn col(&self, name: &str) -> Result<usize, AppError> {
        self.header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| AppError::Input(format!("column `{name}` missing")))
    }

    /// `(x, y)` pairs of rows passing `keep`.
    fn pairs(
        &self,
        x: &str,
        y: &str,
        keep: impl Fn(&[f64]) -> bool,
    ) -> Result<Vec<(f64, f64)>, AppError> {
        let (i, j) = (self.col(x)?, self.col(y)?);
        Ok(self
            .rows
            .iter()
            .filter(|r| keep(r))
            .map(|r| (r[i], r[j]))
            .collect())
    }
}

/// The summary figures the comparison table shows.
const FIELDS: &[&str] = &[
    "final_accuracy",
    "bma_accuracy",
    "bma_nll",
    "bma_effective_models",
    "heldout_entropy_above_half",
    "fashion_entropy_above_half",
    "seconds_per_epoch",
];

/// Overlays the runs in `dirs` into `out`.
pub fn compare(dirs: &[PathBuf], out: &Path) -> Result<(), AppError> {
    let mut loss = Vec::new();
    let mut mult = Vec::new();
    let mut acc = Vec::new();
    let mut ent = Vec::new();
    let mut rows = Vec::new();
    let mut md = format!(
        "| run | {} |\n|---|{}\n",
        FIELDS.join(" | "),
        "---|".repeat(FIELDS.len())
    );
    let mut json = Vec::new();
    for d in dirs {
        let summary_path = d.join("summary.json");
        let text = fs::read_to_string(&summary_path).map_err(|e| {
            AppError::Input(format!(
                "{} is not a finished run ({}: {e})",
                d.display(),
                summary_path.display()
            ))
        })?;
        let summary: Value = serde_json::from_str(&text)
            .map_err(|e| AppError::Input(format!("{}: {e}", summary_path.display())))?;
        let name = summary["sampler"].as_str().unwrap_or("?").to_string();
        let l = Table::read(&d.join("loss.csv"))?;
        let chain = l.col("chain")?;
        loss.push((name.clone(), l.pairs("step", "loss", |r| r[chain] == 0.0)?));
        mult.push((name.clone(), l.pairs("loss", "multiplier", |_| true)?));
        let a = Table::read(&d.join("accuracy.csv"))?;
        acc.push((
            name.clone(),
            a.pairs("epoch", "bma_accuracy", |r| r.iter().all(|v| v.is_finite()))?,
        ));
        let e = Table::read(&d.join("entropy.csv"))?;
        ent.push((name.clone(), e.pairs("entropy", "cdf", |r| r[0] == 0.0)?));
        let values: Vec<f64> = FIELDS
            .iter()
            .map(|f| summary[*f].as_f64().unwrap_or(f64::NAN))
            .collect();
        md.push_str(&format!(
            "| {name} | {} |\n",
            values
                .iter()
                .map(|v| format!("{v:.4}"))
                .collect::<Vec<_>>()
                .join(" | ")
        ));
        rows.push(values);
        json.push(summary);
    }
    sgmcmc_plot::lines(
        &out.join("compare_loss.png"),
        "(a) training loss (chain 0)",
        "step",
        "U~ / N",
        &refs_of(&loss),
    )?;
    sgmcmc_plot::scatter(
        &out.join("compare_multiplier.png"),
        "(b) gradient multiplier vs loss",
        "U~ / N",
        "multiplier",
        &refs_of(&mult),
    )?;
    sgmcmc_plot::lines(
        &out.join("compare_accuracy.png"),
        "(c) test accuracy of the model average",
        "epoch",
        "accuracy",
        &refs_of(&acc),
    )?;
    sgmcmc_plot::lines(
        &out.join("compare_entropy.png"),
        "(d) CDF of predictive entropy on held-out digits",
        "entropy (nats)",
        "CDF",
        &refs_of(&ent),
    )?;
    let mut header = vec!["run"];
    header.extend_from_slice(FIELDS);
    let csv_rows: Vec<Vec<f64>> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| std::iter::once(i as f64).chain(r.iter().copied()).collect())
        .collect();
    write_csv(&out.join("compare.csv"), &header, &csv_rows)?;
    write_json(&out.join("compare.json"), &json)?;
    write_atomic(&out.join("compare.md"), md.as_bytes())?;
    print!("{md}");
    println!(
        "figures: {}/compare_{{loss,multiplier,accuracy,entropy}}.png",
        out.display()
    );
    Ok(())
}

fn refs_of(v: &[(String, Vec<(f64, f64)>)]) -> Vec<(&str, Vec<(f64, f64)>)> {
    v.iter().map(|(n, p)| (n.as_str(), p.clone())).collect()
}
