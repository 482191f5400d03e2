//! Checkpoints of a toy run: a fresh run's (`--checkpoint-every`, `--stop-after`) and the
//! continuation of a checkpointed one from its folder alone, in one process or over the ranks
//! that wrote it (each rank its part, rank 0 a manifest; [`crate::checkpoint_parts`]). The
//! settings travel in every checkpoint, so a continued run is the run that stopped.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ToyConfig;
use crate::error::RunError;
use crate::experiment::Resume;
use crate::ranks::{JobError, Ranks};

/// The checkpoint file (the manifest of a distributed run) in a run folder.
const CHECKPOINT: &str = "checkpoint.cbor";

/// What a toy checkpoint records beside the sampler: the run's settings.
#[derive(Serialize, Deserialize)]
struct Meta {
    /// Steps between checkpoints.
    checkpoint_every: u64,
    /// The configuration.
    config: ToyConfig,
}

/// Checkpoints of a toy run: where, how often, where to stop, and what to continue from.
pub struct Persist {
    /// The checkpoint file (the manifest of a distributed run).
    pub path: PathBuf,
    /// Steps between checkpoints (0: only at `stop_after`).
    pub every: u64,
    /// Stop after this many steps in all (a checkpoint is written there).
    pub stop_after: Option<u64>,
    /// The checkpoint to continue from, with this rank's part of a distributed one.
    pub resume: Option<Resume>,
    /// The caller's record of the run, stored in every checkpoint ([`crate::Checkpoint::meta`]).
    pub meta: Vec<u8>,
}

impl Persist {
    /// The checkpoints of a fresh run of `cfg` in the folder `dir`: every `every` steps (0:
    /// only at `stop_after`), `cfg` recorded in each.
    pub fn fresh(
        dir: &Path,
        every: u64,
        stop_after: Option<u64>,
        cfg: &ToyConfig,
    ) -> Result<Self, RunError> {
        let meta = Meta {
            checkpoint_every: every,
            config: cfg.clone(),
        };
        Ok(Self {
            path: dir.join(CHECKPOINT),
            every,
            stop_after,
            resume: None,
            meta: crate::observer::encode(&meta)?,
        })
    }

    /// The checkpointed run in the folder `dir`, continued on this rank's part of `ranks` (as
    /// many as wrote it): its settings, and its checkpoints with a new `stop_after`. `command`
    /// names the run's command in the refusal of another's checkpoint; `warn` gets what the
    /// reader notices and goes on with.
    pub fn resume<E: JobError>(
        dir: &Path,
        ranks: &Ranks,
        stop_after: Option<u64>,
        command: &str,
        warn: &dyn Fn(&str),
    ) -> Result<(ToyConfig, Self), E> {
        let path = dir.join(CHECKPOINT);
        let not_ours = format!("not a checkpoint of `sgmcmc {command}`");
        let (meta, resume) = Resume::read_meta::<Meta, E>(
            (&path, dir),
            ranks,
            (command, &not_ours),
            |m| m.config.chains,
            warn,
        )?;
        let persist = Self {
            path,
            every: meta.checkpoint_every,
            stop_after,
            meta: resume.checkpoint.meta.clone(),
            resume: Some(resume),
        };
        Ok((meta.config, persist))
    }
}
