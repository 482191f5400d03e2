//! Typed errors of a run.

use std::path::PathBuf;

use sgmcmc_samplers::SamplerError;
use thiserror::Error;

/// What can stop a run.
#[derive(Debug, Error)]
pub enum RunError {
    /// The sampler failed: a chain diverged, a hyper-parameter is invalid, the target failed.
    #[error(transparent)]
    Sampler(#[from] SamplerError),
    /// A guard saw a chain leave its valid range.
    #[error("chain {chain} diverged at step {step}: {what}")]
    Diverged {
        /// The chain.
        chain: usize,
        /// The step (0-based).
        step: u64,
        /// What was seen.
        what: String,
    },
    /// Reading or writing a file failed.
    #[error("{action} {}: {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A checkpoint or saved posterior is malformed or does not fit this run.
    #[error("{}: {reason}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The run's own settings are invalid (e.g. zero steps, a thinning past the end).
    #[error("{0}")]
    Setting(String),
    /// An input a command reads or a folder it writes cannot be used (a run folder that is a
    /// file or cannot be written, data that changed since the run started).
    #[error("{0}")]
    Input(String),
    /// The batch source failed (e.g. a dataset item is missing).
    #[error("batches: {0}")]
    Batch(String),
    /// An observer failed (e.g. a prediction could not be read back).
    #[error("{0}")]
    Observer(String),
    /// The machine did not give the run what it needs (e.g. its compute threads).
    #[error("{0}")]
    Resources(String),
}

impl RunError {
    /// An I/O error on `path`.
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            action,
            path: path.into(),
            source,
        }
    }

    /// The conventional process exit code: 1 for a run that failed (a divergence, an
    /// observer that could not finish, missing resources), 2 for bad input (settings, files,
    /// batches).
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::Sampler(e) if !e.is_divergence() => 2,
            Self::Io { .. }
            | Self::Malformed { .. }
            | Self::Setting(_)
            | Self::Input(_)
            | Self::Batch(_) => 2,
            _ => 1,
        }
    }

    /// Whether the run failed by divergence (rather than by bad input or I/O): a chain's
    /// energy, or the swap correction's variance estimate, became NaN or infinite.
    pub fn is_divergence(&self) -> bool {
        match self {
            Self::Diverged { .. } => true,
            Self::Sampler(e) => e.is_divergence(),
            _ => false,
        }
    }
}
