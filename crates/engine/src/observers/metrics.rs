//! `metrics.csv`: what every chain did at every step.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::PathBuf;

use sgmcmc_samplers::sampler::{Sampler, StepReport};

use crate::error::RunError;
use crate::observer::{Observer, Progress, decode, encode};

/// Writes one row per chain every `every` steps (and at the last step):
/// `step,chain,energy,lr,temperature,multiplier,log_weight,rung` (`rung` empty unless the
/// sampler is replica exchange; `energy` is the stochastic energy at the pre-move point).
///
/// The file is buffered and flushed at checkpoints; its length is the checkpointed state, so a
/// resumed run cuts off rows written after the checkpoint and writes them again: the file ends
/// the same bytes as an uninterrupted run's.
pub struct MetricsCsv {
    path: PathBuf,
    every: u64,
    file: Option<BufWriter<File>>,
    written: u64,
    line: String,
}

/// The header row.
const METRICS_HEADER: &str = "step,chain,energy,lr,temperature,multiplier,log_weight,rung";

impl MetricsCsv {
    /// Rows into `path` every `every` steps (`every >= 1`).
    pub fn new(path: impl Into<PathBuf>, every: u64) -> Self {
        Self {
            path: path.into(),
            every: every.max(1),
            file: None,
            written: 0,
            line: String::new(),
        }
    }

    fn io(&self, action: &'static str, e: std::io::Error) -> RunError {
        RunError::io(action, &self.path, e)
    }

    fn open(&mut self) -> Result<(), RunError> {
        let file = if self.written == 0 {
            let mut f = File::create(&self.path).map_err(|e| self.io("cannot create", e))?;
            writeln!(f, "{METRICS_HEADER}").map_err(|e| self.io("cannot write", e))?;
            self.written = METRICS_HEADER.len() as u64 + 1;
            f
        } else {
            let mut f = OpenOptions::new()
                .write(true)
                .open(&self.path)
                .map_err(|e| self.io("cannot reopen", e))?;
            f.set_len(self.written)
                .and_then(|()| f.seek(SeekFrom::End(0)).map(|_| ()))
                .map_err(|e| self.io("cannot rewind", e))?;
            f
        };
        self.file = Some(BufWriter::new(file));
        Ok(())
    }
}

impl<S: Sampler> Observer<S> for MetricsCsv {
    fn on_start(&mut self, _: &Progress, _: &S) -> Result<(), RunError> {
        self.open()
    }

    fn on_step(&mut self, at: &Progress, _: &S, r: &StepReport) -> Result<(), RunError> {
        if !(at.step.is_multiple_of(self.every) || at.is_last()) {
            return Ok(());
        }
        use std::fmt::Write as _;
        self.line.clear();
        for (p, e) in r.energies.iter().enumerate() {
            let s = r.step_sizes[p];
            let lw = r.log_weights.get(p).copied().unwrap_or(0.0);
            let _ = write!(
                self.line,
                "{},{p},{e},{},{},{},{lw},",
                r.step, s.lr, s.temperature, s.multiplier
            );
            if let Some(rung) = r.rungs.get(p) {
                let _ = write!(self.line, "{rung}");
            }
            self.line.push('\n');
        }
        let path = &self.path;
        let file = self.file.as_mut().ok_or_else(|| {
            RunError::io(
                "cannot write",
                path,
                std::io::Error::other("metrics file not open"),
            )
        })?;
        file.write_all(self.line.as_bytes())
            .map_err(|e| RunError::io("cannot write", path, e))?;
        self.written += self.line.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), RunError> {
        if let Some(f) = self.file.as_mut() {
            f.flush()
                .and_then(|()| f.get_ref().sync_data())
                .map_err(|e| RunError::io("cannot write", &self.path, e))?;
        }
        Ok(())
    }

    fn save(&self) -> Result<Vec<u8>, RunError> {
        encode(&self.written)
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RunError> {
        self.written = decode(state)?;
        self.file = None;
        Ok(())
    }
}
