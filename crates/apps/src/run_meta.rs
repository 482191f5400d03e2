//! What a command's checkpoints record beside the sampler (the engine's `meta` bytes): the
//! run's settings, the data it read and its device, so that `--resume DIR` continues the run
//! from the folder alone.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sgmcmc_engine::Checkpoint;

use crate::data_record::DataRecord;
use crate::device::DeviceChoice;
use crate::error::AppError;

/// The record of a run with settings `C`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunMeta<C> {
    /// The settings.
    pub config: C,
    /// The data folder read and the digest of what was read.
    pub data: DataRecord,
    /// The device the run computes on.
    pub device: DeviceChoice,
}

/// The checkpoint file of a run directory (the engine's format; its `meta` is the run's
/// [`RunMeta`] in CBOR).
pub fn checkpoint_path(dir: &Path) -> PathBuf {
    dir.join("checkpoint.cbor")
}

/// Reads a run directory's checkpoint and the record `command` stored in it.
pub fn read_checkpoint<C: DeserializeOwned>(
    dir: &Path,
    command: &str,
) -> Result<(RunMeta<C>, Checkpoint), AppError> {
    let path = checkpoint_path(dir);
    let c = Checkpoint::read(&path)?;
    let meta = sgmcmc_engine::observer::decode(&c.meta).map_err(|e| {
        AppError::Input(format!(
            "{}: not a `{command}` checkpoint with its data record, or one from an older \
             sgmcmc ({e}); start the run again with --force",
            path.display()
        ))
    })?;
    Ok((meta, c))
}
