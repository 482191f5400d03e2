//! Checkpoints of `sgmcmc toy`: `--checkpoint-every`, `--stop-after` and `--resume DIR`, in one
//! process or over the ranks of `mpirun` (the engine's [`Persist`]: each rank its part, rank 0
//! a manifest, the configuration in every checkpoint, so a resumed run is the run that
//! stopped).

use std::path::Path;

use sgmcmc_engine::experiment::toy::{Persist, run_toy_on};
use sgmcmc_engine::experiment::{Console, leader_only, resume_command, run_job};

use super::cli::{ToyArgs, report_toy};
use super::{ToyConfig, ToyOutcome};
use crate::error::AppError;
use crate::progress::Terminal;

/// The checkpoints the flags ask for (`None` without `--checkpoint-every` or `--stop-after`).
pub fn persist(a: &ToyArgs, out: &Path, cfg: &ToyConfig) -> Result<Option<Persist>, AppError> {
    if a.checkpoint_every.is_none() && a.stop_after.is_none() {
        return Ok(None);
    }
    let every = a.checkpoint_every.unwrap_or(0);
    Ok(Some(Persist::fresh(out, every, a.stop_after, cfg)?))
}

/// A finished run's outputs, or the line saying where a stopped one can continue (`ranks`:
/// of a distributed run).
fn report_or_stop(
    cfg: &ToyConfig,
    outcome: Option<ToyOutcome>,
    out: &Path,
    ranks: Option<usize>,
) -> Result<(), AppError> {
    let Some(outcome) = outcome else {
        return Ok(());
    };
    if outcome.stopped {
        let command = resume_command("toy", out, ranks);
        println!("stopped at a checkpoint; continue with `{command}`");
        return Ok(());
    }
    report_toy(cfg, &outcome, out, ranks)
}

/// A fresh run of `cfg` into `out` over the ranks `--distributed` asks for: rank 0 prepares
/// the folder, every rank runs its part, rank 0 reports.
pub fn run_fresh(
    a: &ToyArgs,
    cfg: &ToyConfig,
    out: &Path,
    persist: Option<Persist>,
) -> Result<(), AppError> {
    run_job(
        a.job.distributed,
        leader_only(|| a.output.fresh(out, super::report::FILES).map(drop)),
        |(), ranks| {
            super::with_progress(cfg, a.output.progress(), |p| {
                run_toy_on(cfg, p, ranks, persist)
            })
        },
        |(), outcome, over| report_or_stop(cfg, outcome, out, over),
    )
}

/// `sgmcmc toy --resume DIR [--distributed] [--stop-after N]`.
pub fn run_cli(a: &ToyArgs, dir: &Path) -> Result<(), AppError> {
    run_job(
        a.job.distributed,
        leader_only(|| Ok(())),
        |(), ranks| {
            let (cfg, persist) =
                Persist::resume::<AppError>(dir, ranks, a.stop_after, "toy", &Terminal::warn)?;
            let outcome = super::with_progress(&cfg, a.output.progress(), |p| {
                run_toy_on(&cfg, p, ranks, Some(persist))
            })?;
            Ok((cfg, outcome))
        },
        |(), (cfg, outcome), over| report_or_stop(&cfg, outcome, dir, over),
    )
}
