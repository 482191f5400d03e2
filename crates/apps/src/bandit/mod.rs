//! `sgmcmc bandit`: the mushroom contextual bandit of thesis sec. 6.4.3 / E.4.3 (after
//! Riquelme et al. 2018), on the reference ICSGLD code's protocol: agents learn the expected
//! reward of eating or passing a mushroom with an MLP over a replay buffer and act greedily on
//! it: on the weighted mean of their chains' predictions, as the thesis' agents do, or, for
//! the Langevin agents named `NAME-ts`, on one chain drawn by weight for every decision
//! (Thompson sampling; [`agents::Acting`]).
//! Outputs the cumulative expected regret per agent and seed (`regret.csv`), its mean with
//! +- one standard error bands (`regret.png`) and the final regret per agent with its chains'
//! convergence diagnostics (`summary.json`).
//!
//! The protocol is in [`mod@run`] (loop), [`sgmcmc_data::mushroom_bandit`] (rewards, regret,
//! inputs), [`agents`] (samplers, acting) and [`config`] (presets). Where it departs from the
//! reference code (`contextual_bandits/` of the ICSGLD repository: one network output per
//! (mushroom, action), the likelihood's `N` the buffer's size, regret in expectation, shared
//! minibatches, the registry's contour samplers as they are, EpsGreedy as the reference's SGD
//! command, Dropout as the reference's dropout code) and why: `docs/experiments/bandit.md`.

pub mod agents;
pub mod config;
pub mod report;
pub mod run;

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use sgmcmc_data::Mushrooms;
use sgmcmc_engine::settings::ConfigFile;

use crate::error::AppError;
use crate::output;
use crate::run_flags::{DataDir, DeviceFlag, OutputFlags};
pub use config::BanditConfig;
pub use report::FILES;

/// Options of `sgmcmc bandit`.
#[derive(Debug, Args)]
pub struct BanditArgs {
    /// `quick` (minutes on 2 cores), `paper` (thesis E.4.3) or `tiny` (a smoke test)
    /// [default: quick].
    #[arg(long)]
    pub preset: Option<String>,
    /// The `config.toml` a run wrote (or any subset of its settings over its preset): repeats
    /// the run; `--seeds` and where and how to run it may stand beside it.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Comma-separated agents (default: the thesis' six): epsgreedy, constsgd, dropout (SGD on
    /// a dropout MLP, rate 0.5, 5 masked passes), psgld, pcsgld (single chain x T4), picsgld
    /// (x P4), which act on their chains' weighted mean; psgld-ts, pcsgld-ts and picsgld-ts act
    /// by Thompson sampling (one chain, drawn by weight, per decision).
    #[arg(long, value_delimiter = ',')]
    pub agents: Vec<String>,
    /// Seeds per agent (1..=N) [default: 5].
    #[arg(long)]
    pub seeds: Option<u64>,
    /// `--data-dir` (holding `mushroom/agaricus-lepiota.data`).
    #[command(flatten)]
    pub data: DataDir,
    /// Compute threads (chains step in parallel; 0: one per core).
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// `--device`.
    #[command(flatten)]
    pub device: DeviceFlag,
    /// `--out` (default `runs/bandit`), `--force` and `--quiet`.
    #[command(flatten)]
    pub output: OutputFlags,
}

/// Runs `sgmcmc bandit`.
pub fn run(a: &BanditArgs) -> Result<(), AppError> {
    let device = a.device.tensor().tensor_device("bandit")?;
    let file = a.config.as_deref().map(ConfigFile::read).transpose()?;
    let preset = a
        .preset
        .as_deref()
        .or(file.as_ref().and_then(|f| f.string("preset")))
        .unwrap_or("quick");
    let mut config = BanditConfig::preset(preset, &a.agents, a.seeds.unwrap_or(5))?;
    if let Some(f) = &file {
        config = f.over(&config)?;
        if let Some(n) = a.seeds {
            config.seeds = n;
        }
    }
    config.validate()?;
    let file = a.data.root().join("mushroom/agaricus-lepiota.data");
    let data = Mushrooms::load(&file).map_err(|e| AppError::Input(e.to_string()))?;
    sgmcmc_engine::limits::check_threads(a.threads)?;
    let out = a.output.dir_or(|| PathBuf::from("runs/bandit"));
    a.output.fresh(&out, FILES)?;
    output::write_toml(&out.join("config.toml"), &config)?;
    let clock = Instant::now();
    let mut curves = Vec::new();
    for agent in &config.agents {
        for seed in 1..=config.seeds {
            let started = Instant::now();
            let (curve, diagnostics) = sgmcmc_engine::jobs::with_threads(a.threads, || {
                run::run_agent(&config, agent, &data, seed, &device)
            })??;
            if a.output.progress() {
                eprintln!(
                    "{} seed {seed}: regret {:.0} ({:.1} s)",
                    agent.name,
                    curve.last().copied().unwrap_or(0.0),
                    started.elapsed().as_secs_f64()
                );
            }
            curves.push(report::Curve {
                agent: agent.name.clone(),
                seed,
                regret: curve,
                diagnostics,
            });
        }
    }
    let summary = report::write(&out, &config, &curves, clock.elapsed().as_secs_f64())?;
    for s in &summary.agents {
        println!(
            "{}: final regret {:.1} +- {:.1} (se over {} seeds)",
            s.agent, s.final_regret_mean, s.final_regret_se, s.seeds
        );
    }
    println!("wrote {}", out.join("summary.json").display());
    Ok(())
}
