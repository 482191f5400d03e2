//! What a command's checkpoints record beside the sampler (the engine's `meta` bytes): the
//! run's settings, the data it read and its device ([`RunMeta`]), so that a resume continues
//! the run from its folder alone.
//!
//! The data is recorded as its folder and a SHA-256 digest of the values read from it
//! ([`DataRecord`]; also in a command's `config.toml`), so that a resume continues on the same
//! data and refuses data that changed.
//!
//! The digest covers the values the run uses (rows, targets, splits, images, labels; each
//! slice prefixed by its length), not the bytes of the files: a compressed copy of the same
//! images or an unrelated file in the folder leaves it unchanged, an edited row changes it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::device::DeviceChoice;
use crate::error::RunError;

/// The record of a run with settings `C`: what its checkpoints carry as their meta.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunMeta<C> {
    /// The settings.
    pub config: C,
    /// The data folder read and the digest of what was read.
    pub data: DataRecord,
    /// The device the run computes on.
    pub device: DeviceChoice,
}

/// The checkpoint file of a run folder (the engine's format; its `meta` is the run's
/// [`RunMeta`] in CBOR).
pub fn checkpoint_path(dir: &Path) -> PathBuf {
    dir.join("checkpoint.cbor")
}

/// The data a run read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataRecord {
    /// The folder read (absolute).
    pub dir: PathBuf,
    /// SHA-256 of the values read, hex.
    pub sha256: String,
}

/// Feeds values to SHA-256, each slice prefixed with its length (so `[a, b] [c]` and
/// `[a] [b, c]` differ).
#[derive(Default)]
pub struct DataDigest(Sha256);

impl DataDigest {
    /// Feeds bytes.
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.0.update((v.len() as u64).to_le_bytes());
        self.0.update(v);
        self
    }

    /// Feeds reals (their bits).
    pub fn reals(&mut self, v: &[f64]) -> &mut Self {
        self.0.update((v.len() as u64).to_le_bytes());
        for x in v {
            self.0.update(x.to_bits().to_le_bytes());
        }
        self
    }

    /// Feeds counts or indices.
    pub fn counts(&mut self, v: &[usize]) -> &mut Self {
        self.0.update((v.len() as u64).to_le_bytes());
        for x in v {
            self.0.update((*x as u64).to_le_bytes());
        }
        self
    }

    /// Feeds a UCI data set: rows, targets and splits.
    pub fn uci(&mut self, d: &sgmcmc_data::UciDataset) -> &mut Self {
        for row in &d.x {
            self.reals(row);
        }
        self.reals(&d.y);
        for s in &d.splits {
            self.counts(&s.train).counts(&s.test);
        }
        self
    }

    /// Feeds an image set: its shape, pixels and labels.
    pub fn images(&mut self, s: &sgmcmc_data::ImageSet) -> &mut Self {
        self.counts(&[s.rows, s.cols])
            .bytes(&s.images)
            .bytes(&s.labels)
    }

    /// The hex digest.
    pub fn finish(self) -> String {
        self.0
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

impl DataRecord {
    /// The record of `digest` read from `dir` (made absolute).
    pub fn new(dir: &Path, digest: DataDigest) -> Result<Self, RunError> {
        let dir = std::fs::canonicalize(dir)
            .map_err(|e| RunError::Input(format!("cannot resolve {}: {e}", dir.display())))?;
        Ok(Self {
            dir,
            sha256: digest.finish(),
        })
    }

    /// Checks that `now`, the data `--resume` read from the recorded folder, is the data the
    /// run started on.
    pub fn check(&self, now: &DataRecord) -> Result<(), RunError> {
        self.same_as(now, |then, found| {
            format!(
                "--resume: the data in {} changed since the run started (SHA-256 {then} then, \
                 {found} now); start a new run",
                self.dir.display(),
            )
        })
    }

    /// Checks that `now`, the data a repeat of a run's `config.toml` (`path`) read, is the data
    /// that file records: a run repeated on other data would report its energies beside the
    /// recorded data set's figures.
    pub fn check_repeat(&self, now: &DataRecord, path: &Path) -> Result<(), RunError> {
        self.same_as(now, |then, found| {
            format!(
                "{}: its [data] records SHA-256 {then} (read from {}), but {} holds {found}: \
                 the run would not repeat; give the recorded data, or remove the [data] table \
                 to run on other data",
                path.display(),
                self.dir.display(),
                now.dir.display(),
            )
        })
    }

    /// `Ok` when `now` has this record's digest, else the input error `message(recorded,
    /// found)` with both digests shortened.
    fn same_as(
        &self,
        now: &DataRecord,
        message: impl FnOnce(&str, &str) -> String,
    ) -> Result<(), RunError> {
        let short = |sha: &str| sha[..12.min(sha.len())].to_string();
        if self.sha256 == now.sha256 {
            Ok(())
        } else {
            Err(RunError::Input(message(
                &short(&self.sha256),
                &short(&now.sha256),
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_are_delimited_and_every_value_counts() {
        let digest = |parts: &[&[f64]]| {
            let mut d = DataDigest::default();
            for p in parts {
                d.reals(p);
            }
            d.finish()
        };
        let base = digest(&[&[1.0, 2.0], &[3.0]]);
        assert_eq!(base.len(), 64);
        assert_eq!(base, digest(&[&[1.0, 2.0], &[3.0]]));
        assert_ne!(base, digest(&[&[1.0], &[2.0, 3.0]]));
        assert_ne!(base, digest(&[&[1.0, 2.0], &[3.0000000000000004]]));
        assert_ne!(base, digest(&[&[1.0, 2.0], &[-3.0]]));
    }
}
