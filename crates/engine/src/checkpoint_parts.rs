//! Checkpoints of a run whose chains are spread over ranks ([`sgmcmc_samplers::comm`]): every
//! rank writes its own part (its chains, a copy of the replicated sampler state, its
//! observers), then rank 0 writes a manifest naming the parts.
//!
//! ```text
//! checkpoint.cbor                       manifest (rank 0): ranks, chains per rank, step, parts
//! checkpoint.rank-R.step-K.cbor         rank R's part at step K
//! ```
//!
//! A checkpoint at step `K`: each rank writes its part atomically; a barrier; rank 0 replaces
//! the manifest atomically; a barrier; each rank deletes its previous part. The manifest only
//! ever names parts that are all on disk, so a rank killed at any point leaves the last
//! complete checkpoint intact. Resuming reads the manifest on rank 0 and broadcasts it (the
//! parts may sit on each machine's own disk), and refuses another number of ranks or another
//! layout of the chains.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sgmcmc_samplers::SamplerError;
use sgmcmc_samplers::comm::Communicator;

use crate::checkpoint::Checkpoint;
use crate::error::RunError;
use crate::fs::write_atomic;

/// Format version of [`Manifest`] files.
pub const MANIFEST_VERSION: u32 = 1;

/// What rank 0 writes once every rank's part of a checkpoint is on disk.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`MANIFEST_VERSION`] of the writer.
    pub manifest: u32,
    /// Ranks of the run.
    pub ranks: usize,
    /// Chains of each rank.
    pub chains: Vec<usize>,
    /// The first step the resumed run takes.
    pub next_step: u64,
    /// Each rank's part, a file name beside the manifest.
    pub parts: Vec<String>,
}

/// Rank `rank`'s part at step `step` of the checkpoint at `path`.
pub fn part_path(path: &Path, rank: usize, step: u64) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!("{stem}.rank-{rank}.step-{step}.cbor"))
}

fn comm_error(e: impl Into<SamplerError>) -> RunError {
    RunError::Sampler(e.into())
}

/// Writes this rank's part of `checkpoint` and, on rank 0, the manifest at `path`; then deletes
/// `previous` (this rank's part of the checkpoint before) and returns the new part's path.
/// Every rank must call it at the same step. `chains` is this rank's number of chains.
pub fn write_part(
    checkpoint: &Checkpoint,
    path: &Path,
    comm: &dyn Communicator,
    chains: usize,
    previous: Option<&Path>,
) -> Result<PathBuf, RunError> {
    let rank = comm.rank();
    let part = part_path(path, rank, checkpoint.next_step);
    checkpoint.write(&part)?;
    let name = part
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut mine = Vec::new();
    ciborium::into_writer(&(chains, name), &mut mine)
        .map_err(|e| RunError::Observer(format!("cannot encode a checkpoint part: {e}")))?;
    // Gathering the parts' names is the barrier after which every part is on disk.
    let all = comm.gather_bytes(&mine).map_err(comm_error)?;
    if let Some(all) = all {
        let mut manifest = Manifest {
            manifest: MANIFEST_VERSION,
            ranks: comm.size(),
            chains: Vec::new(),
            next_step: checkpoint.next_step,
            parts: Vec::new(),
        };
        for bytes in all {
            let (n, name): (usize, String) = ciborium::from_reader(bytes.as_slice())
                .map_err(|e| RunError::Observer(format!("a checkpoint part is unreadable: {e}")))?;
            manifest.chains.push(n);
            manifest.parts.push(name);
        }
        let mut text = serde_json::to_vec_pretty(&manifest)
            .map_err(|e| RunError::Observer(format!("cannot encode a manifest: {e}")))?;
        text.push(b'\n');
        write_atomic(path, &text)?;
    }
    comm.barrier().map_err(comm_error)?;
    if let Some(p) = previous.filter(|p| *p != part) {
        // The manifest names the new parts now; the old one is garbage.
        let _ = std::fs::remove_file(p);
    }
    Ok(part)
}

impl Manifest {
    /// Errors unless the checkpoint lays out `chains_per_rank` chains (the same on every rank).
    pub fn check_chains(&self, path: &Path, chains_per_rank: &[usize]) -> Result<(), RunError> {
        if self.chains == chains_per_rank {
            return Ok(());
        }
        Err(RunError::Malformed {
            path: path.to_path_buf(),
            reason: format!(
                "the checkpoint holds {:?} chains per rank, this run lays out {chains_per_rank:?}",
                self.chains
            ),
        })
    }
}

/// Reads this rank's part of the checkpoint whose manifest is at `path` (read on rank 0 and
/// broadcast): the checkpoint, the part's path and the manifest. Errors, on every rank alike,
/// when the run has another number of ranks than the one that wrote it; check the layout of
/// the chains with [`Manifest::check_chains`] (a sampler also refuses a part of other chains).
pub fn read_part(
    path: &Path,
    comm: &dyn Communicator,
) -> Result<(Checkpoint, PathBuf, Manifest), RunError> {
    let mut bytes = if comm.rank() == 0 {
        std::fs::read(path).unwrap_or_default()
    } else {
        Vec::new()
    };
    comm.broadcast_bytes(&mut bytes).map_err(comm_error)?;
    let bad = |reason: String| RunError::Malformed {
        path: path.to_path_buf(),
        reason,
    };
    if bytes.is_empty() {
        return Err(bad("no checkpoint manifest (missing or empty)".into()));
    }
    let m: Manifest = serde_json::from_slice(&bytes)
        .map_err(|e| bad(format!("not a checkpoint manifest ({e})")))?;
    if m.manifest != MANIFEST_VERSION {
        return Err(bad(format!(
            "manifest format {} (this build reads format {MANIFEST_VERSION})",
            m.manifest
        )));
    }
    if m.ranks != comm.size() || m.parts.len() != m.ranks || m.chains.len() != m.ranks {
        return Err(bad(format!(
            "the checkpoint was written by {} ranks and this run has {}: resume with `mpirun -np \
             {}`",
            m.ranks,
            comm.size(),
            m.ranks
        )));
    }
    let part = path.with_file_name(&m.parts[comm.rank()]);
    let c = Checkpoint::read(&part)?;
    if c.next_step != m.next_step {
        return Err(RunError::Malformed {
            path: part,
            reason: format!(
                "part at step {}, the manifest at step {}",
                c.next_step, m.next_step
            ),
        });
    }
    Ok((c, part, m))
}
