//! The files of a bandit run: `regret.csv`, `regret.png`, `summary.json` (and `config.toml`,
//! written before the run).

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;
use sgmcmc_engine::observers::TraceSummary;

use super::config::BanditConfig;
use crate::error::AppError;
use crate::output;

/// What a run writes into its folder.
pub const FILES: &[&str] = &["config.toml", "regret.csv", "regret.png", "summary.json"];

/// One agent's cumulative regret on one seed, after each bandit step.
#[derive(Clone, Debug)]
pub struct Curve {
    /// Agent name.
    pub agent: String,
    /// Seed.
    pub seed: u64,
    /// Cumulative expected regret after steps 1, 2, ...
    pub regret: Vec<f64>,
    /// Its chains' diagnostics ([`crate::bandit::run::run_agent`]).
    pub diagnostics: TraceSummary,
}

/// One agent's final regret over seeds.
#[derive(Clone, Debug, Serialize)]
pub struct AgentSummary {
    /// Agent name.
    pub agent: String,
    /// Seeds.
    pub seeds: usize,
    /// Mean final cumulative regret.
    pub final_regret_mean: f64,
    /// Its standard error `s / sqrt(seeds)` (0 for one seed).
    pub final_regret_se: f64,
    /// Per seed: the rank-normalised R-hat, ESS and MCSE of the chains' energies at the end of
    /// every bandit step in the run's second half, and the Pareto k-hat of their log weights
    /// when these vary ([`crate::bandit::run::run_agent`]).
    pub diagnostics: Vec<TraceSummary>,
}

/// `summary.json`.
#[derive(Clone, Debug, Serialize)]
pub struct BanditSummary {
    /// Preset.
    pub preset: String,
    /// Bandit steps.
    pub steps: u64,
    /// Wall time of all agents and seeds.
    pub wall_seconds: f64,
    /// Per agent, in the order run.
    pub agents: Vec<AgentSummary>,
}

/// Mean and standard error of the mean (`s / sqrt(n)`, `s` with `n - 1`; 0 when `n < 2`).
pub fn mean_se(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    if v.len() < 2 {
        return (mean, 0.0);
    }
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

/// The agents in first-seen order, each with its curves.
fn by_agent(curves: &[Curve]) -> Vec<(&str, Vec<&Curve>)> {
    let mut out: Vec<(&str, Vec<&Curve>)> = Vec::new();
    for c in curves {
        match out.iter_mut().find(|(a, _)| *a == c.agent) {
            Some((_, v)) => v.push(c),
            None => out.push((&c.agent, vec![c])),
        }
    }
    out
}

/// Writes `regret.csv`, `regret.png` and `summary.json`; returns the summary.
pub fn write(
    out: &Path,
    config: &BanditConfig,
    curves: &[Curve],
    wall_seconds: f64,
) -> Result<BanditSummary, AppError> {
    let mut csv = String::from("step,agent,seed,cumulative_regret\n");
    for c in curves {
        for (t, r) in c.regret.iter().enumerate() {
            writeln!(csv, "{},{},{},{r}", t + 1, c.agent, c.seed).expect("writing to a String");
        }
    }
    output::write_atomic(&out.join("regret.csv"), csv.as_bytes())?;
    let groups = by_agent(curves);
    let mut series = Vec::new();
    let mut bands = Vec::new();
    let mut agents = Vec::new();
    for (agent, cs) in &groups {
        let steps = cs.iter().map(|c| c.regret.len()).min().unwrap_or(0);
        let stats: Vec<(f64, f64)> = (0..steps)
            .map(|t| mean_se(&cs.iter().map(|c| c.regret[t]).collect::<Vec<_>>()))
            .collect();
        series.push((
            *agent,
            stats
                .iter()
                .enumerate()
                .map(|(t, s)| ((t + 1) as f64, s.0))
                .collect::<Vec<_>>(),
        ));
        bands.push(
            stats
                .iter()
                .enumerate()
                .map(|(t, s)| ((t + 1) as f64, s.0 - s.1, s.0 + s.1))
                .collect::<Vec<_>>(),
        );
        let finals: Vec<f64> = cs.iter().filter_map(|c| c.regret.last().copied()).collect();
        let (mean, se) = mean_se(&finals);
        agents.push(AgentSummary {
            agent: agent.to_string(),
            seeds: finals.len(),
            final_regret_mean: mean,
            final_regret_se: se,
            diagnostics: cs.iter().map(|c| c.diagnostics.clone()).collect(),
        });
    }
    sgmcmc_plot::lines_with_bands(
        &out.join("regret.png"),
        &format!("mushroom bandit ({}): mean +- 1 se", config.preset),
        "bandit step",
        "cumulative regret",
        &series,
        &bands,
    )?;
    let summary = BanditSummary {
        preset: config.preset.clone(),
        steps: config.steps,
        wall_seconds,
        agents,
    };
    output::write_json(&out.join("summary.json"), &summary)?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_standard_error_by_hand() {
        // 1, 2, 3, 6: mean 3, s^2 = (4 + 1 + 0 + 9) / 3 = 14 / 3, se = sqrt(14 / 12).
        let (m, se) = mean_se(&[1.0, 2.0, 3.0, 6.0]);
        assert_eq!(m, 3.0);
        assert!((se - (14.0f64 / 12.0).sqrt()).abs() < 1e-15);
        assert_eq!(mean_se(&[4.0]), (4.0, 0.0));
    }
}
