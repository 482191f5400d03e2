//! Continuing a checkpointed run: the checkpoint file of a one-process run, or this rank's part
//! of a distributed one ([`crate::checkpoint_parts`]), on as many ranks as wrote it.

use std::path::{Path, PathBuf};

use sgmcmc_samplers::comm::ChainLayout;
use sgmcmc_samplers::sampler::Sampler;

use crate::checkpoint_parts::{Manifest, read_part};
use crate::error::RunError;
use crate::ranks::{JobError, Ranks};
use crate::run_dir::lock_run_dir;
use crate::{Checkpoint, Run};

/// The checkpoint a run continues from, with this rank's part of a distributed one.
pub struct Resume {
    /// The checkpoint (this rank's part of a distributed one): sampler, observers, meta.
    pub checkpoint: Checkpoint,
    part: Option<(PathBuf, Manifest)>,
}

impl Resume {
    /// A one-process checkpoint.
    pub fn whole(checkpoint: Checkpoint) -> Self {
        Self {
            checkpoint,
            part: None,
        }
    }

    /// Reads the checkpoint at `path` for `ranks`: in one process the file itself (a
    /// distributed run's manifest is refused with the command that resumes it, `sgmcmc
    /// COMMAND --resume DIR` on its ranks), over several ranks this rank's part (the manifest
    /// read on rank 0 and broadcast; another number of ranks is refused with the one that
    /// works). A failure on any rank ends the job. Rank 0 first takes the run folder `dir`'s
    /// lock ([`lock_run_dir`]): a running run is not continued twice; on a file system without
    /// locks `warn` receives the warning.
    pub fn read<E: JobError>(
        (path, dir): (&Path, &Path),
        ranks: &Ranks,
        command: &str,
        warn: &dyn Fn(&str),
    ) -> Result<Self, E> {
        ranks.on_leader(|| {
            lock_run_dir(dir)?.warn(warn);
            Ok::<(), E>(())
        })?;
        if !ranks.is_distributed() {
            let c = Checkpoint::read(path).map_err(|e| one_process_error(path, e, command, dir))?;
            return Ok(Self::whole(c));
        }
        let read = read_part(path, ranks.comm().as_ref()).map_err(E::from);
        let (checkpoint, part, manifest) = ranks.agree(read)?;
        Ok(Self {
            checkpoint,
            part: Some((part, manifest)),
        })
    }

    /// [`Resume::read`] of a command's run folder `dir` whose checkpoints (`path`) carry the
    /// command's settings `M` in their meta; `chains` says how many chains those settings run
    /// (checked against the checkpoint's layout) and `what` describes a checkpoint that is not
    /// the command's.
    pub fn read_meta<M: serde::de::DeserializeOwned, E: JobError>(
        (path, dir): (&Path, &Path),
        ranks: &Ranks,
        (command, what): (&str, &str),
        chains: impl Fn(&M) -> usize,
        warn: &dyn Fn(&str),
    ) -> Result<(M, Self), E> {
        let r = Self::read::<E>((path, dir), ranks, command, warn)?;
        let meta = crate::observer::decode(&r.checkpoint.meta).map_err(|e| {
            E::from(RunError::Input(format!(
                "{}: {what} ({e}); start the run again with --force",
                path.display()
            )))
        });
        let meta = ranks.agree(meta)?;
        ranks.agree(r.check_chains(path, chains(&meta), ranks))?;
        Ok((meta, r))
    }

    /// Errors (on every rank alike) unless the checkpoint lays out `chains` chains over the
    /// ranks as this run does.
    pub fn check_chains(&self, path: &Path, chains: usize, ranks: &Ranks) -> Result<(), RunError> {
        let Some((_, manifest)) = &self.part else {
            return Ok(());
        };
        let layout = ChainLayout::even(chains, ranks.size())?;
        manifest.check_chains(path, layout.counts())
    }

    /// `run` continuing from this checkpoint.
    pub fn apply<'a, S: Sampler>(self, run: Run<'a, S>) -> Run<'a, S> {
        match self.part {
            Some((part, _)) => run.resume_part(self.checkpoint, part),
            None => run.resume(self.checkpoint),
        }
    }
}

/// The command that continues the run of `sgmcmc COMMAND` in `dir`: in one process, or
/// (`ranks`) under `mpirun` on that many ranks.
pub fn resume_command(command: &str, dir: &Path, ranks: Option<usize>) -> String {
    let one = format!("sgmcmc {command} --resume {}", dir.display());
    match ranks {
        Some(n) => format!("mpirun -np {n} {one} --distributed"),
        None => one,
    }
}

/// A one-process resume of a distributed run's manifest at `path` (the run of `sgmcmc COMMAND`
/// in `dir`) says how to resume it; other errors stay as they are.
pub fn one_process_error(path: &Path, e: RunError, command: &str, dir: &Path) -> RunError {
    let manifest = std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Manifest>(&b).ok());
    match manifest {
        Some(m) => RunError::Setting(format!(
            "{}: a checkpoint of {} ranks; resume it with `{}`",
            path.display(),
            m.ranks,
            resume_command(command, dir, Some(m.ranks))
        )),
        None => e,
    }
}

/// `files` (what a command writes into its run folder) and the checkpoint parts of a
/// distributed run: what a fresh run with `--force` deletes first
/// ([`crate::run_dir::fresh_run_dir`]).
pub fn with_parts(files: &[&'static str]) -> Vec<&'static str> {
    files.iter().copied().chain(["checkpoint.rank-*"]).collect()
}
