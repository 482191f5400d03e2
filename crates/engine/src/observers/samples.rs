//! Saving the kept models: the posterior as files.

use std::path::{Path, PathBuf};

use burn::module::Module;
use sgmcmc_samplers::ensemble::Ensemble;
use sgmcmc_samplers::sampler::Sampler;

use crate::error::RunError;
use crate::fs::{create_dir, write_atomic};
use crate::observer::{Kept, Observer, Progress, decode, encode};
use crate::posterior::SampleRow;

/// The index file of a samples folder.
pub const SAMPLES_INDEX: &str = "index.csv";

/// Saves every kept model of every target chain as a burn record (burnpack,
/// `DIR/step-STEP-chain-C.bpk`) and lists it with its log importance weight in
/// `DIR/index.csv` (`step,chain,log_weight,file`). [`SavedPosterior`](crate::SavedPosterior)
/// loads them back for predictions without resampling.
///
/// Each record is written atomically; the index is rewritten atomically at checkpoints and at
/// the end, and its rows are the checkpointed state.
pub struct SampleSaver {
    dir: PathBuf,
    rows: Vec<SampleRow>,
}

impl SampleSaver {
    /// Saves into `dir` (created if missing).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            rows: Vec::new(),
        }
    }

    /// The samples saved so far.
    pub fn rows(&self) -> &[SampleRow] {
        &self.rows
    }

    /// The samples folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn write_index(&self) -> Result<(), RunError> {
        let mut text = String::from("step,chain,log_weight,file\n");
        for r in &self.rows {
            text.push_str(&format!(
                "{},{},{},{}\n",
                r.step, r.chain, r.log_weight, r.file
            ));
        }
        write_atomic(&self.dir.join(SAMPLES_INDEX), text.as_bytes())
    }
}

impl<S, M> Observer<S> for SampleSaver
where
    S: Sampler,
    S::Ensemble: Ensemble<Snapshot = Vec<M>>,
    M: Module,
{
    fn wants_points(&self) -> bool {
        true
    }

    fn on_start(&mut self, _: &Progress, _: &S) -> Result<(), RunError> {
        create_dir(&self.dir)
    }

    fn on_sample(&mut self, _: &Progress, kept: &Kept<'_, Vec<M>>) -> Result<(), RunError> {
        for &c in kept.chains {
            if kept.index(c) >= kept.points.len() {
                return Err(RunError::Observer(
                    "saving samples needs one chain per module".into(),
                ));
            }
            let file = format!("step-{:09}-chain-{c}.bpk", kept.step);
            let path = self.dir.join(&file);
            let bytes = kept.points[kept.index(c)]
                .clone()
                .into_record()
                .into_bytes()
                .map_err(|e| RunError::Observer(format!("cannot encode a sample: {e:?}")))?;
            write_atomic(&path, &bytes)?;
            self.rows.push(SampleRow {
                step: kept.step,
                chain: c,
                log_weight: kept.log_weights[c],
                file,
            });
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), RunError> {
        self.write_index()
    }

    fn save(&self) -> Result<Vec<u8>, RunError> {
        encode(&self.rows)
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RunError> {
        self.rows = decode(state)?;
        Ok(())
    }
}
