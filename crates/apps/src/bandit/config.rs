//! The settings of `sgmcmc bandit` and its presets.

use serde::{Deserialize, Serialize};

use super::agents::{AGENTS, AgentConfig, LANGEVIN_AGENTS, THOMPSON_SUFFIX, agent};
use crate::error::AppError;

/// The settings of a run (written to `config.toml`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BanditConfig {
    /// Preset name.
    pub preset: String,
    /// Bandit steps.
    pub steps: u64,
    /// Mushrooms per bandit step.
    pub pulls: usize,
    /// Pulls with random actions before the first training round.
    pub initial_pulls: usize,
    /// Replay buffer capacity.
    pub buffer: usize,
    /// Minibatch size.
    pub batch: usize,
    /// Sampler steps per bandit step (times an agent's `iters_factor`).
    pub iters: u64,
    /// Hidden ReLU layers.
    pub hidden: Vec<usize>,
    /// Gaussian noise precision of the rewards: 2 makes the data term `N` times the mean
    /// squared error, the reference code's loss.
    pub noise_precision: f64,
    /// Prior precision (the reference's weight decay 1e-2 on the energy's gradient).
    pub prior_precision: f64,
    /// Seeds `1..=seeds`.
    pub seeds: u64,
    /// The agents.
    pub agents: Vec<AgentConfig>,
}

/// Preset names.
pub const PRESETS: &[&str] = &["quick", "paper", "tiny"];

impl BanditConfig {
    /// The named preset with `agents` (every agent when empty).
    ///
    /// * `paper`: thesis E.4.3, 2000 steps of 20 pulls, 1024 initial pulls, buffer 4096,
    ///   batch 512, 16 iterations, MLP (100, 100).
    /// * `quick`: 500 steps, 512 initial pulls, buffer 4096, batch 256, 8 iterations, MLP
    ///   (100, 100).
    /// * `tiny`: a smoke test of seconds.
    pub fn preset(name: &str, agents: &[String], seeds: u64) -> Result<Self, AppError> {
        let (steps, initial_pulls, buffer, batch, iters, hidden) = match name {
            "paper" => (2000, 1024, 4096, 512, 16, vec![100, 100]),
            "quick" => (500, 512, 4096, 256, 8, vec![100, 100]),
            "tiny" => (8, 40, 200, 32, 2, vec![8]),
            _ => {
                return Err(AppError::Usage(format!(
                    "unknown bandit preset `{name}` (known: {})",
                    PRESETS.join(", ")
                )));
            }
        };
        // The likelihood's constant `ln(2 pi / lambda) / 2 = ln(pi) / 2` per point at a full
        // buffer: the energy's floor, where the contour partition starts.
        let u_min = 0.5 * std::f64::consts::PI.ln() * buffer as f64;
        let names: Vec<String> = if agents.is_empty() {
            AGENTS.iter().map(|s| s.to_string()).collect()
        } else {
            agents.to_vec()
        };
        let agents = names
            .iter()
            .map(|n| {
                agent(n, u_min).ok_or_else(|| {
                    let thompson: Vec<String> = LANGEVIN_AGENTS
                        .iter()
                        .map(|a| format!("{a}{THOMPSON_SUFFIX}"))
                        .collect();
                    AppError::Usage(format!(
                        "unknown bandit agent `{n}` (known: {}, and {} acting by Thompson \
                         sampling)",
                        AGENTS.join(", "),
                        thompson.join(", ")
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let config = Self {
            preset: name.to_string(),
            steps,
            pulls: 20,
            initial_pulls,
            buffer,
            batch,
            iters,
            hidden,
            noise_precision: 2.0,
            prior_precision: 1e-2,
            seeds,
            agents,
        };
        config.validate()?;
        Ok(config)
    }

    /// Checks the settings.
    pub fn validate(&self) -> Result<(), AppError> {
        let bad = |what: String| Err(AppError::Usage(format!("bandit: {what}")));
        if self.steps == 0 || self.pulls == 0 || self.iters == 0 || self.seeds == 0 {
            return bad("steps, pulls, iters and seeds must be positive".into());
        }
        if self.batch == 0 || self.batch > self.buffer || self.initial_pulls > self.buffer {
            return bad(format!(
                "need 0 < batch {} <= buffer {} and initial pulls {} <= buffer",
                self.batch, self.buffer, self.initial_pulls
            ));
        }
        if self.hidden.contains(&0) {
            return bad(format!(
                "hidden layers must be >= 1 unit wide (got {:?})",
                self.hidden
            ));
        }
        if self.agents.is_empty() {
            return bad("no agent".into());
        }
        // One agent named twice would be one run counted as two (same seeds, same streams).
        for (i, a) in self.agents.iter().enumerate() {
            if self.agents[..i].iter().any(|b| b.name == a.name) {
                return bad(format!("agent {} is listed twice", a.name));
            }
        }
        if self.seeds > 100_000 {
            return bad(format!("seeds must be at most 100000, got {}", self.seeds));
        }
        for a in &self.agents {
            if a.chains == 0 || a.iters_factor == 0 || !(0.0..=1.0).contains(&a.epsilon) {
                return bad(format!(
                    "agent {}: chains and iters_factor must be positive, epsilon in [0, 1]",
                    a.name
                ));
            }
            if let Some(d) = &a.dropout {
                d.validate(self.hidden.len())
                    .or_else(|e| bad(format!("agent {}: {e}", a.name)))?;
            }
        }
        Ok(())
    }
}
