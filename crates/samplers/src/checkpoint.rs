//! Sampler checkpoints: everything a run needs to continue bit for bit.
//!
//! A [`SamplerState`] holds the step counter, the contour `theta` (contour samplers), and the
//! ensemble's state: each chain's parameter values and kernel state (momentum, pSGLD
//! preconditioner) in the module's parameter-visit order, and each chain's random stream.
//! Restoring it into a sampler built from the same configuration and the same module structure
//! continues the run exactly: the next step sees the same parameters, kernel state, random
//! numbers and `theta` as the uninterrupted run. Values are stored as `f32`, the tensors' own
//! precision, so the round trip is exact. Serialise it with serde (e.g. JSON).

use serde::{Deserialize, Serialize};

use crate::control::ContourTheta;
use crate::ensemble::Ensemble;
use crate::error::SamplerError;
use crate::rng::ChainRng;

/// A tensor's shape and values (row-major).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TensorState {
    /// Shape.
    pub dims: Vec<usize>,
    /// Values, row-major.
    pub values: Vec<f32>,
}

/// One module's chains: its parameters and the kernel state of each, in visit order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChainState {
    /// Parameter values.
    pub params: Vec<TensorState>,
    /// Kernel state slots per parameter (empty before the first step or for SGD/SGLD).
    pub kernel: Vec<Vec<TensorState>>,
}

/// The chains of an ensemble and their random streams.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EnsembleState {
    /// One entry per module.
    pub chains: Vec<ChainState>,
    /// One stream per chain.
    pub rngs: Vec<ChainRng>,
}

/// A sampler's full state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SamplerState {
    /// Steps done.
    pub step: u64,
    /// Negative-multiplier moves so far (contour samplers).
    pub bouncy_moves: u64,
    /// The contour `theta` (contour samplers only).
    pub theta: Option<ContourTheta>,
    /// The chains.
    pub ensemble: EnsembleState,
}

/// An ensemble whose state can be saved and restored.
pub trait StatefulEnsemble: Ensemble {
    /// The current state.
    fn state(&self) -> Result<EnsembleState, SamplerError>;
    /// Replaces the current state; errors when the shapes or counts do not match.
    fn restore(&mut self, state: EnsembleState) -> Result<(), SamplerError>;
}

/// The error for a checkpoint that does not fit the sampler it is restored into.
pub(crate) fn mismatch(what: impl Into<String>) -> SamplerError {
    SamplerError::Checkpoint(what.into())
}
