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

    /// [`Resume::read`] of the checkpoint at `path` if rank 0 finds one there (`None`: the run
    /// starts afresh, e.g. a seed that had not reached its first checkpoint), checked on every
    /// rank against the run: its layout of `chains` chains over the ranks, then its meta by
    /// `check` (e.g. the settings it was written with). A failure on any rank ends the job.
    pub fn if_present<E: JobError>(
        (path, dir): (&Path, &Path),
        ranks: &Ranks,
        (command, chains): (&str, usize),
        check: impl FnOnce(&[u8]) -> Result<(), E>,
        warn: &dyn Fn(&str),
    ) -> Result<Option<Self>, E> {
        // Rank 0 looks for the file (a distributed run's manifest; each rank's part beside it).
        if !ranks.broadcast(path.exists())? {
            return Ok(None);
        }
        let r = Self::read::<E>((path, dir), ranks, command, warn)?;
        ranks.agree(r.check_chains(path, chains, ranks).map_err(E::from))?;
        ranks.agree(check(&r.checkpoint.meta))?;
        Ok(Some(r))
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

#[cfg(test)]
mod tests {
    use sgmcmc_samplers::ensemble::HostEnsemble;
    use sgmcmc_samplers::kernel::Kernel;
    use sgmcmc_samplers::sampler::{Sgmcmc, SgmcmcConfig};

    use super::*;
    use crate::{Checkpoints, Repeat};

    #[test]
    fn a_checkpoint_is_continued_only_where_one_exists_and_its_meta_fits() {
        let dir = std::env::temp_dir().join(format!("sgmcmc-if-present-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("checkpoint.cbor");
        let local = Ranks::local();
        let ok = |_: &[u8]| Ok::<(), RunError>(());
        let quiet = |_: &str| {};
        let found = Resume::if_present::<RunError>((&path, &dir), &local, ("t", 1), ok, &quiet);
        assert!(found.unwrap().is_none());
        let ens = HostEnsemble::new(
            sgmcmc_testfunctions::by_name("normal").unwrap(),
            &[vec![0.0]],
            1,
        )
        .unwrap();
        let config = SgmcmcConfig::constant(Kernel::Sgld, 0.1, 1.0);
        let mut sampler = Sgmcmc::new(config, ens).unwrap();
        Run::steps(4)
            .checkpoints(Checkpoints::new(&path, 2).with_meta(b"settings".to_vec()))
            .run(&mut sampler, &mut Repeat(()))
            .unwrap();
        let seen = |meta: &[u8]| {
            assert_eq!(meta, b"settings");
            Ok::<(), RunError>(())
        };
        let found = Resume::if_present::<RunError>((&path, &dir), &local, ("t", 1), seen, &quiet);
        assert_eq!(found.unwrap().unwrap().checkpoint.next_step, 4);
        let refuse = |_: &[u8]| Err(RunError::Setting("other settings".into()));
        let found = Resume::if_present((&path, &dir), &local, ("t", 1), refuse, &quiet);
        assert_eq!(found.err().unwrap().to_string(), "other settings");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
