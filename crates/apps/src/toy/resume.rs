//! Checkpoints of `sgmcmc toy`: `--checkpoint-every`, `--stop-after` and `--resume DIR`, in one
//! process or over the ranks of `mpirun` (each rank its part, rank 0 a manifest;
//! `sgmcmc_engine::checkpoint_parts`). The configuration travels in every checkpoint, so a
//! resumed run is the run that stopped.

use std::path::Path;

use serde::{Deserialize, Serialize};
use sgmcmc_engine::experiment::Console;
use sgmcmc_engine::experiment::toy::{Persist, run_toy_on};

use super::cli::{ToyArgs, report_toy};
use super::{ToyConfig, ToyOutcome};
use crate::distributed::{Ranks, Resume, resume_command};
use crate::error::AppError;
use crate::progress::Terminal;

/// The checkpoint file (the manifest of a distributed run) in a run folder.
pub const CHECKPOINT: &str = "checkpoint.cbor";

/// What a toy checkpoint records beside the sampler: the run's settings.
#[derive(Serialize, Deserialize)]
struct Meta {
    /// Steps between checkpoints.
    checkpoint_every: u64,
    /// The configuration.
    config: ToyConfig,
}

/// What a checkpoint of another command is called in the refusal.
const NOT_OURS: &str = "not a checkpoint of `sgmcmc toy`";

fn encode(every: u64, cfg: &ToyConfig) -> Result<Vec<u8>, AppError> {
    let m = Meta {
        checkpoint_every: every,
        config: cfg.clone(),
    };
    Ok(sgmcmc_engine::observer::encode(&m)?)
}

/// The checkpoints the flags ask for (`None` without `--checkpoint-every` or `--stop-after`).
pub fn persist(a: &ToyArgs, out: &Path, cfg: &ToyConfig) -> Result<Option<Persist>, AppError> {
    if a.checkpoint_every.is_none() && a.stop_after.is_none() {
        return Ok(None);
    }
    let every = a.checkpoint_every.unwrap_or(0);
    Ok(Some(Persist {
        path: out.join(CHECKPOINT),
        every,
        stop_after: a.stop_after,
        resume: None,
        meta: encode(every, cfg)?,
    }))
}

/// A finished run's outputs, or the line saying where a stopped one can continue.
pub fn report_or_stop(
    cfg: &ToyConfig,
    outcome: &ToyOutcome,
    out: &Path,
    ranks: Option<usize>,
) -> Result<(), AppError> {
    if outcome.stopped {
        let command = resume_command("toy", out, ranks);
        println!("stopped at a checkpoint; continue with `{command}`");
        return Ok(());
    }
    report_toy(cfg, outcome, out, ranks)
}

/// Runs this rank's part of `cfg` (the whole run in one process); rank 0 reports. Over ranks a
/// failure on any rank ends the job.
pub fn finish(
    ranks: &Ranks,
    cfg: &ToyConfig,
    out: &Path,
    show_progress: bool,
    persist: Option<Persist>,
) -> Result<(), AppError> {
    let bar = super::progress_bar(cfg, show_progress && ranks.is_leader());
    let outcome = run_toy_on(cfg, |done, _| bar.set_position(done), ranks, persist);
    bar.finish_and_clear();
    let outcome = ranks.check(outcome)?;
    let on = ranks.is_distributed().then(|| ranks.size());
    match outcome {
        Some(o) => ranks.check(report_or_stop(cfg, &o, out, on)),
        None => Ok(()),
    }
}

/// `sgmcmc toy --resume DIR [--distributed] [--stop-after N]`.
pub fn run_cli(a: &ToyArgs, dir: &Path) -> Result<(), AppError> {
    let path = dir.join(CHECKPOINT);
    let ranks = crate::distributed::ranks_of(a.distributed)?;
    let (meta, resume) = Resume::read_meta::<Meta, AppError>(
        (&path, dir),
        &ranks,
        ("toy", NOT_OURS),
        |m| m.config.chains,
        &Terminal::warn,
    )?;
    let persist = Persist {
        path: path.clone(),
        every: meta.checkpoint_every,
        stop_after: a.stop_after,
        meta: resume.checkpoint.meta.clone(),
        resume: Some(resume),
    };
    finish(&ranks, &meta.config, dir, !a.quiet, Some(persist))
}
