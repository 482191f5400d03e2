//! Application errors and their exit codes.

use sgmcmc_samplers::{SamplerError, TargetError};
use thiserror::Error;

/// What can go wrong in a command.
#[derive(Debug, Error)]
pub enum AppError {
    /// Bad command line, config or hyper-parameter (exit code 2).
    #[error("{0}")]
    Usage(String),
    /// Unreadable or malformed input file, or an output that cannot be written (exit code 2).
    #[error("{0}")]
    Input(String),
    /// The run itself failed, e.g. a chain diverged (exit code 1).
    #[error("{0}")]
    Run(String),
}

impl AppError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::Usage(_) | Self::Input(_) => 2,
            Self::Run(_) => 1,
        }
    }
}

impl From<SamplerError> for AppError {
    fn from(e: SamplerError) -> Self {
        if e.is_divergence() {
            Self::Run(e.to_string())
        } else {
            Self::Usage(e.to_string())
        }
    }
}

impl From<sgmcmc_engine::RunError> for AppError {
    fn from(e: sgmcmc_engine::RunError) -> Self {
        use sgmcmc_engine::RunError as R;
        match e {
            R::Sampler(e) => e.into(),
            // Files that cannot be read or written (a checkpoint, saved samples).
            R::Io { .. } | R::Malformed { .. } | R::Input(_) | R::Batch(_) => {
                Self::Input(e.to_string())
            }
            R::Setting(_) => Self::Usage(e.to_string()),
            R::Diverged { .. } | R::Observer(_) | R::Resources(_) => Self::Run(e.to_string()),
        }
    }
}

impl sgmcmc_engine::ranks::JobError for AppError {
    fn exit_code(&self) -> i32 {
        AppError::exit_code(self)
    }
}

impl From<TargetError> for AppError {
    fn from(e: TargetError) -> Self {
        Self::Usage(e.to_string())
    }
}

impl From<sgmcmc_testfunctions::SpecError> for AppError {
    fn from(e: sgmcmc_testfunctions::SpecError) -> Self {
        Self::Usage(e.to_string())
    }
}

impl From<sgmcmc_engine::settings::SettingsError> for AppError {
    fn from(e: sgmcmc_engine::settings::SettingsError) -> Self {
        use sgmcmc_engine::settings::SettingsError as S;
        match e {
            S::Read { .. } | S::Malformed { .. } => Self::Input(e.to_string()),
            S::Set(_) => Self::Usage(e.to_string()),
            S::Encode(_) => Self::Run(e.to_string()),
        }
    }
}

impl From<sgmcmc_plot::PlotError> for AppError {
    fn from(e: sgmcmc_plot::PlotError) -> Self {
        match e {
            sgmcmc_plot::PlotError::Write(e) => e.into(),
            e => Self::Run(e.to_string()),
        }
    }
}

impl From<sgmcmc_data::DataError> for AppError {
    fn from(e: sgmcmc_data::DataError) -> Self {
        Self::Input(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use sgmcmc_engine::RunError;

    use super::*;

    #[test]
    fn a_run_error_keeps_its_exit_code_as_an_app_error() {
        let diverged = SamplerError::Diverged {
            chain: 0,
            step: 3,
            energy: f64::NAN,
        };
        let io = std::io::Error::other("disk full");
        let variance = SamplerError::NonFiniteVariance {
            pair: 0,
            value: f64::INFINITY,
        };
        for e in [
            RunError::Sampler(diverged),
            RunError::Sampler(variance),
            RunError::Sampler(SamplerError::InvalidSetting("bad".into())),
            RunError::Sampler(SamplerError::Communication("lost".into())),
            RunError::Diverged {
                chain: 1,
                step: 2,
                what: "energy 1e300".into(),
            },
            RunError::io("writing", "x", io),
            RunError::Malformed {
                path: PathBuf::from("c"),
                reason: "short".into(),
            },
            RunError::Setting("zero steps".into()),
            RunError::Batch("item 3".into()),
            RunError::Observer("nan".into()),
            RunError::Resources("no threads".into()),
        ] {
            let code = e.exit_code();
            assert_eq!(AppError::from(e).exit_code(), code);
        }
    }
}
