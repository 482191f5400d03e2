//! Sampler checkpoints: everything a run needs to continue bit for bit.
//!
//! A [`SamplerState`] holds the step counter, the algorithm's own state ([`AlgorithmState`]: the
//! contour `theta`; the replica ladder, index process, swap statistics, variance estimates,
//! buffer and swap stream) and the ensemble's state: for burn chains each module's parameter
//! values and kernel state (momentum, pSGLD preconditioner, thermostat) in the module's
//! parameter-visit order, for host chains the `f64` positions and kernel state, and every
//! chain's random stream. Restoring it into a sampler built from the same configuration and the
//! same module structure continues the run exactly: the next step sees the same parameters,
//! kernel state, random numbers and adaptive state as the uninterrupted run. Tensor values are
//! stored as `f32`, the tensors' own precision, host values as `f64`, so the round trip is
//! exact. Serialise it with serde (the engine writes CBOR, which keeps every float's bits).

use serde::{Deserialize, Serialize};

use crate::control::{
    ContourTheta, ControlVariate, EnergyVariance, IndexProcess, SwapSchedule, SwapStats,
};
use crate::error::SamplerError;
use crate::rng::ChainRng;
use crate::sampler::ReductionStats;

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
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EnsembleState {
    /// Chains as burn modules.
    Modules {
        /// One entry per module.
        chains: Vec<ChainState>,
        /// One stream per chain.
        rngs: Vec<ChainRng>,
    },
    /// Chains in host memory.
    Host {
        /// Dimension of a chain.
        dim: usize,
        /// Positions, row-major `[P, d]`.
        x: Vec<f64>,
        /// Kernel state slots, slot-major `[slots, P, d]`.
        state: Vec<f64>,
        /// State slots per element.
        slots: usize,
        /// One stream per chain.
        rngs: Vec<ChainRng>,
    },
}

/// What a sampler keeps beyond its chains.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AlgorithmState {
    /// Independent chains ([`crate::sampler::Sgmcmc`]): nothing. (Checkpoints written before
    /// the name followed the sampler's say `plain`.)
    #[serde(alias = "plain")]
    Sgmcmc,
    /// A contour sampler's shared `theta`.
    Contour {
        /// The shared `theta`.
        theta: ContourTheta,
    },
    /// Replica exchange.
    Replica(Box<ReplicaState>),
}

/// The adaptive state of a replica-exchange sampler.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplicaState {
    /// Learning rates of the rungs (they adapt under DEO*).
    pub lrs: Vec<f64>,
    /// Rung of every replica, directions and round trips.
    pub index: IndexProcess,
    /// Swap windows.
    pub schedule: SwapSchedule,
    /// Swap attempts and acceptances.
    pub stats: SwapStats,
    /// Energy-variance estimates (Metropolis rule).
    pub variance: Option<EnergyVariance>,
    /// Correction buffer `C` (deterministic rule).
    pub buffer: f64,
    /// The swap tests' stream.
    pub rng: ChainRng,
    /// First step at which swaps may happen again (cooling).
    pub cooling_until: u64,
    /// Control variates and variance refreshes of [`crate::sampler::VarianceReduced`].
    #[serde(default)]
    pub reduction: Option<ReductionState>,
}

/// Stored points of an ensemble ([`crate::ensemble::SnapshotEnergy`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SnapshotValues {
    /// None stored yet.
    Empty,
    /// Host positions, row-major `[P, d]`.
    Host {
        /// The positions.
        x: Vec<f64>,
    },
    /// One module per entry, its float parameters in visit order.
    Modules {
        /// The parameters.
        modules: Vec<Vec<TensorState>>,
    },
}

/// The state [`crate::sampler::VarianceReduced`] keeps beside its replica exchange.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReductionState {
    /// Snapshot energies `L^` and the coefficient `c`.
    pub control: Option<ControlVariate>,
    /// The snapshots `x^` (empty before the first).
    pub snapshots: SnapshotValues,
    /// The stream that places refreshes.
    pub rng: ChainRng,
    /// Step of the next refresh.
    pub next_refresh: u64,
    /// Variances measured so far.
    pub stats: ReductionStats,
}

/// Which chains a state holds: `local` chains from global index `first`, of `total` over all
/// ranks of a distributed run (`first = 0`, `local = total` in one process).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainSpan {
    /// Global index of the first chain.
    pub first: usize,
    /// Chains held.
    pub local: usize,
    /// Chains over all ranks.
    pub total: usize,
}

/// A sampler's full state. In a distributed run each rank's state holds its own chains and a
/// copy of the replicated algorithm state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SamplerState {
    /// The chains this state holds (`None` in checkpoints written before runs could be
    /// distributed: all of them).
    #[serde(default)]
    pub chains: Option<ChainSpan>,
    /// Steps done.
    pub step: u64,
    /// Negative-multiplier moves so far (contour samplers).
    pub bouncy_moves: u64,
    /// The algorithm's own state.
    pub algorithm: AlgorithmState,
    /// The chains.
    pub ensemble: EnsembleState,
}

/// The error for a checkpoint that does not fit the sampler it is restored into.
pub(crate) fn mismatch(what: impl Into<String>) -> SamplerError {
    SamplerError::Checkpoint(what.into())
}
