//! Checkpoint files: a run's sampler state, its observers' states and the caller's own
//! settings, written atomically every so many steps; [`Run::resume`](crate::Run::resume)
//! continues from one bit for bit.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sgmcmc_samplers::checkpoint::SamplerState;
use sgmcmc_samplers::comm::Communicator;

use crate::error::RunError;
use crate::fs::write_atomic;

/// Format version of [`Checkpoint`] files (4: the experiment skeleton's run loop counts the
/// steps' time itself and `images` evaluates through the engine's `Evaluate`, so `mnist` and
/// `images` checkpoint other observers; a checkpoint of an earlier format is refused with both
/// numbers).
pub const VERSION: u32 = 4;

/// One checkpoint file (CBOR).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// [`VERSION`] of the writer.
    pub version: u32,
    /// The first step the resumed run takes.
    pub next_step: u64,
    /// Steps of the whole run.
    pub total_steps: u64,
    /// The sampler.
    pub sampler: SamplerState,
    /// Each observer's state, in the order the observers were added.
    pub observers: Vec<Vec<u8>>,
    /// The caller's own settings (e.g. its encoded configuration), returned as given.
    pub meta: Vec<u8>,
}

impl Checkpoint {
    /// Reads a checkpoint file.
    pub fn read(path: &Path) -> Result<Self, RunError> {
        let bytes = std::fs::read(path).map_err(|e| RunError::io("cannot read", path, e))?;
        let c: Self = ciborium::from_reader(bytes.as_slice()).map_err(|e| RunError::Malformed {
            path: path.to_path_buf(),
            reason: format!("not a checkpoint ({e})"),
        })?;
        if c.version != VERSION {
            return Err(RunError::Malformed {
                path: path.to_path_buf(),
                reason: format!(
                    "checkpoint format {} (this build reads format {VERSION})",
                    c.version
                ),
            });
        }
        Ok(c)
    }

    /// Writes the checkpoint atomically.
    pub fn write(&self, path: &Path) -> Result<(), RunError> {
        let mut bytes = Vec::new();
        ciborium::into_writer(self, &mut bytes)
            .map_err(|e| RunError::Observer(format!("cannot encode a checkpoint: {e}")))?;
        write_atomic(path, &bytes)
    }
}

/// When and where a run writes checkpoints.
#[derive(Clone)]
pub struct Checkpoints {
    /// The checkpoint file (replaced at every checkpoint); with ranks, the manifest
    /// ([`crate::checkpoint_parts`]).
    pub path: PathBuf,
    /// Steps between checkpoints (0: only when the run stops early).
    pub every: u64,
    /// The caller's settings, stored in every checkpoint ([`Checkpoint::meta`]).
    pub meta: Vec<u8>,
    /// The ranks of a distributed run: each writes its part, rank 0 the manifest.
    pub ranks: Option<Arc<dyn Communicator>>,
}

impl std::fmt::Debug for Checkpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoints")
            .field("path", &self.path)
            .field("every", &self.every)
            .field("meta", &self.meta.len())
            .field("ranks", &self.ranks.as_ref().map(|c| c.size()))
            .finish()
    }
}

impl Checkpoints {
    /// A checkpoint at `path` every `every` steps.
    pub fn new(path: impl Into<PathBuf>, every: u64) -> Self {
        Self {
            path: path.into(),
            every,
            meta: Vec::new(),
            ranks: None,
        }
    }

    /// Checkpoints of a run over the ranks of `comm`: each rank writes its part, rank 0 the
    /// manifest at [`Checkpoints::path`] ([`crate::checkpoint_parts`]).
    pub fn over_ranks(self, comm: Arc<dyn Communicator>) -> Self {
        Self {
            ranks: Some(comm),
            ..self
        }
    }

    /// Stores `meta` in every checkpoint.
    pub fn with_meta(self, meta: Vec<u8>) -> Self {
        Self { meta, ..self }
    }
}
