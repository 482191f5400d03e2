//! Saving the kept models: the posterior as files.

use std::path::{Path, PathBuf};

use burn::module::Module;
use sgmcmc_samplers::ensemble::Ensemble;
use sgmcmc_samplers::sampler::Sampler;

use super::keep::{Keep, KeptModel, keep_all};
use crate::error::RunError;
use crate::fs::{create_dir, write_atomic};
use crate::observer::{Kept, Observer, Progress, decode, encode};
use crate::posterior::SampleRow;
use crate::safetensors::{self, Parameters};

/// The index file of a samples folder.
pub const SAMPLES_INDEX: &str = "index.csv";

/// The files a [`SampleSaver`] writes per kept model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SampleFormat {
    /// A burn record (burnpack, `.bpk`): the whole module.
    #[default]
    Burn,
    /// A safetensors file (`.safetensors`, [`crate::safetensors`]): the parameters by path,
    /// with the step, chain and log weight as metadata; numpy, PyTorch and JAX read it without
    /// burn.
    Safetensors(Parameters),
    /// Both; the index lists the burn record.
    Both(Parameters),
}

/// Saves every kept model of every target chain (by default as a burn record, burnpack,
/// `DIR/step-STEP-chain-C.bpk`; [`SampleSaver::format`] adds or substitutes safetensors files)
/// and lists it with its log importance weight in `DIR/index.csv`
/// (`step,chain,log_weight,file`). [`SavedPosterior`](crate::SavedPosterior) loads either
/// kind back for predictions without resampling.
///
/// Each record is written atomically; the index is rewritten atomically at checkpoints and at
/// the end, and its rows are the checkpointed state.
pub struct SampleSaver {
    dir: PathBuf,
    format: SampleFormat,
    rows: Vec<SampleRow>,
}

impl SampleSaver {
    /// Saves into `dir` (created if missing).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            format: SampleFormat::Burn,
            rows: Vec::new(),
        }
    }

    /// Which files to write per model.
    pub fn format(mut self, format: SampleFormat) -> Self {
        self.format = format;
        self
    }

    /// The samples saved so far.
    pub fn rows(&self) -> &[SampleRow] {
        &self.rows
    }

    /// The samples folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Removes the files of an earlier run from the folder: its index and its models
    /// (`step-*-chain-*.bpk` / `.safetensors`); other files stay.
    fn remove_earlier_samples(&self) -> Result<(), RunError> {
        let io =
            |e: std::io::Error| RunError::Observer(format!("clearing {}: {e}", self.dir.display()));
        for entry in std::fs::read_dir(&self.dir).map_err(io)? {
            let path = entry.map_err(io)?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let model = name.starts_with("step-")
                && (name.ends_with(".bpk") || name.ends_with(".safetensors"));
            if model || name == SAMPLES_INDEX {
                std::fs::remove_file(&path).map_err(io)?;
            }
        }
        Ok(())
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

    /// Creates the folder; for a fresh run (`fresh`, and nothing saved yet) removes an earlier
    /// run's samples from it, which would otherwise join this one's. A `Run` calls it at its
    /// start; [`Keep::keep`] at the first model it saves.
    pub fn open(&mut self, fresh: bool) -> Result<(), RunError> {
        create_dir(&self.dir)?;
        if fresh && self.rows.is_empty() {
            self.remove_earlier_samples()?;
        }
        Ok(())
    }
}

impl<M: Module> Keep<M> for SampleSaver {
    fn keep(&mut self, kept: KeptModel<'_, M>) -> Result<(), RunError> {
        if self.rows.is_empty() {
            // The first model: the folder, cleared of an earlier run's samples.
            self.open(true)?;
        }
        let KeptModel {
            model,
            step,
            chain,
            log_weight,
        } = kept;
        let stem = format!("step-{step:09}-chain-{chain}");
        let (burn, open) = match self.format {
            SampleFormat::Burn => (true, None),
            SampleFormat::Safetensors(p) => (false, Some(p)),
            SampleFormat::Both(p) => (true, Some(p)),
        };
        if let Some(which) = open {
            let tensors = safetensors::named_parameters(model, which)?;
            let metadata = [
                ("step", step.to_string()),
                ("chain", chain.to_string()),
                ("log_weight", log_weight.to_string()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
            let path = self.dir.join(format!("{stem}.safetensors"));
            safetensors::write(&path, &tensors, &metadata)?;
        }
        let file = if burn {
            let bytes = model
                .clone()
                .into_record()
                .into_bytes()
                .map_err(|e| RunError::Observer(format!("cannot encode a sample: {e:?}")))?;
            write_atomic(&self.dir.join(format!("{stem}.bpk")), &bytes)?;
            format!("{stem}.bpk")
        } else {
            format!("{stem}.safetensors")
        };
        self.rows.push(SampleRow {
            step,
            chain,
            log_weight,
            file,
        });
        Ok(())
    }

    fn flush(&mut self) -> Result<(), RunError> {
        self.write_index()
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

    fn on_start(&mut self, at: &Progress, _: &S) -> Result<(), RunError> {
        self.open(at.step == 0)
    }

    fn on_sample(&mut self, _: &Progress, kept: &Kept<'_, Vec<M>>) -> Result<(), RunError> {
        keep_all(self, kept)
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
