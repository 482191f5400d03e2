//! A saved posterior: the models a run kept ([`SampleSaver`](crate::observers::SampleSaver)),
//! loaded back to predict with their weighted average, without sampling again.

use std::path::{Path, PathBuf};

use burn::module::Module;
use burn::store::ModuleRecord;
use burn::tensor::Bytes;
use serde::{Deserialize, Serialize};
use sgmcmc_samplers::collect::LogWeightedMean;

use crate::error::RunError;
use crate::observers::SAMPLES_INDEX;

/// One saved model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SampleRow {
    /// The step whose pre-move point it is.
    pub step: u64,
    /// The chain.
    pub chain: usize,
    /// `ln` of its importance weight.
    pub log_weight: f64,
    /// Its record file, relative to the samples folder.
    pub file: String,
}

/// The samples of a run, as listed in a samples folder's `index.csv`.
#[derive(Clone, Debug, PartialEq)]
pub struct SavedPosterior {
    dir: PathBuf,
    rows: Vec<SampleRow>,
}

impl SavedPosterior {
    /// Reads the index of the samples folder `dir`.
    pub fn open(dir: &Path) -> Result<Self, RunError> {
        let path = dir.join(SAMPLES_INDEX);
        let text =
            std::fs::read_to_string(&path).map_err(|e| RunError::io("cannot read", &path, e))?;
        let bad = |line: usize, reason: &str| RunError::Malformed {
            path: path.clone(),
            reason: format!("line {line}: {reason}"),
        };
        let mut lines = text.lines().enumerate();
        match lines.next() {
            Some((_, "step,chain,log_weight,file")) => {}
            _ => return Err(bad(1, "expected the header `step,chain,log_weight,file`")),
        }
        let mut rows = Vec::new();
        for (i, line) in lines {
            let f: Vec<&str> = line.split(',').collect();
            let [step, chain, lw, file] = f.as_slice() else {
                return Err(bad(i + 1, "expected 4 fields"));
            };
            let lw: f64 = lw
                .parse()
                .map_err(|_| bad(i + 1, "log weight is not a number"))?;
            if lw.is_nan() || lw == f64::INFINITY {
                return Err(bad(i + 1, "log weight must be finite or -inf"));
            }
            if file.contains('/') || file.contains('\\') || file.starts_with('.') {
                return Err(bad(i + 1, "file must name a file in the samples folder"));
            }
            rows.push(SampleRow {
                step: step
                    .parse()
                    .map_err(|_| bad(i + 1, "step is not an integer"))?,
                chain: chain
                    .parse()
                    .map_err(|_| bad(i + 1, "chain is not an integer"))?,
                log_weight: lw,
                file: (*file).to_string(),
            });
        }
        if rows.is_empty() {
            return Err(bad(1, "no sample is listed"));
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            rows,
        })
    }

    /// The samples, in the order they were kept.
    pub fn rows(&self) -> &[SampleRow] {
        &self.rows
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether no sample is listed (never, once opened).
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Sample `i` loaded into a copy of `template` (a module of the same structure, on the
    /// device to predict on): a burn record, or a safetensors file (whose parameters replace
    /// the template's by path; those it does not hold keep the template's values).
    pub fn load<M: Module>(&self, i: usize, template: &M) -> Result<M, RunError> {
        let row = self
            .rows
            .get(i)
            .ok_or_else(|| RunError::Setting(format!("no sample {i}")))?;
        let path = self.dir.join(&row.file);
        if path.extension().is_some_and(|e| e == "safetensors") {
            let (tensors, _) = crate::safetensors::read(&path)?;
            return crate::safetensors::load_into(template, &tensors).map_err(|e| {
                RunError::Malformed {
                    path: path.clone(),
                    reason: e.to_string(),
                }
            });
        }
        let bytes = std::fs::read(&path).map_err(|e| RunError::io("cannot read", &path, e))?;
        let malformed = |e: String| RunError::Malformed {
            path: path.clone(),
            reason: e,
        };
        let record = ModuleRecord::from_bytes(Bytes::from_bytes_vec(bytes))
            .map_err(|e| malformed(format!("not a burn record ({e:?})")))?;
        template
            .clone()
            .try_load_record(record)
            .map_err(|e| malformed(format!("does not fit the model ({e:?})")))
    }

    /// The weighted average of `predict` over every saved model (each loaded into a copy of
    /// `template`), in the order they were kept: the same numbers as the run's own
    /// [`ModelAverage`](crate::observers::ModelAverage) of `predict`.
    pub fn average<M: Module>(
        &self,
        template: &M,
        mut predict: impl FnMut(&M) -> Result<Vec<f64>, String>,
    ) -> Result<LogWeightedMean, RunError> {
        let mut mean = LogWeightedMean::new();
        for (i, row) in self.rows.iter().enumerate() {
            let model = self.load(i, template)?;
            let p = predict(&model).map_err(RunError::Observer)?;
            mean.add_log(row.log_weight, &p);
        }
        Ok(mean)
    }
}
