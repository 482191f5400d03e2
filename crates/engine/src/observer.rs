//! What a run tells the code around it: the [`Observer`] trait.
//!
//! A run calls its observers in the order they were added: at the start, after every step with
//! the step's [`StepReport`], at every kept sample with the chains' points *before* that step
//! ([`Kept`]: the point a contour sampler's importance weight and a replica's rung refer to),
//! and at the end. Observers with state (a model average, a file's length) save and restore it
//! with the run's checkpoints, so a resumed run writes the same bytes as an uninterrupted one.

use sgmcmc_samplers::ensemble::Ensemble;
use sgmcmc_samplers::sampler::{Sampler, StepReport};

use crate::error::RunError;
use crate::ranks::Ranks;

/// Where a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// The step just taken (0-based); at the start, the first step to take.
    pub step: u64,
    /// Steps of the whole run.
    pub total: u64,
    /// Batches per epoch (`None` for an endless source).
    pub per_epoch: Option<u64>,
}

impl Progress {
    /// The epoch of [`Progress::step`] (0 for an endless source).
    pub fn epoch(&self) -> u64 {
        self.per_epoch.map_or(0, |e| self.step / e.max(1))
    }

    /// Whether [`Progress::step`] is the first step of its epoch.
    pub fn starts_epoch(&self) -> bool {
        self.per_epoch
            .is_some_and(|e| self.step.is_multiple_of(e.max(1)))
    }

    /// Whether [`Progress::step`] is the last step of its epoch.
    pub fn ends_epoch(&self) -> bool {
        self.per_epoch
            .is_some_and(|e| (self.step + 1).is_multiple_of(e.max(1)))
    }

    /// Whether [`Progress::step`] is the last step of the run.
    pub fn is_last(&self) -> bool {
        self.step + 1 == self.total
    }
}

/// The chains' points at a kept step: the samples.
pub struct Kept<'a, X> {
    /// The step whose pre-move points these are.
    pub step: u64,
    /// The point before the step of every chain this process steps ([`Ensemble::Snapshot`]:
    /// modules for burn chains, positions for host chains): chain `c` at index `c -
    /// first_chain`.
    pub points: &'a X,
    /// Global index of the first chain in `points` (0 in one process; a rank's first chain
    /// when the chains are spread over ranks, [`sgmcmc_samplers::comm`]).
    pub first_chain: usize,
    /// The global indices of the chains whose points are samples of the target, among this
    /// process's: all of them, or for replica exchange the one on rung 0 after the step's swaps
    /// (if this process steps it).
    pub chains: &'a [usize],
    /// `ln` importance weight of every chain's point, by global index (0 for plain samplers).
    pub log_weights: &'a [f64],
    /// The step's report.
    pub report: &'a StepReport,
}

impl<X> Kept<'_, X> {
    /// The index in [`Kept::points`] of global chain `chain`.
    pub fn index(&self, chain: usize) -> usize {
        chain - self.first_chain
    }
}

/// The snapshot type of a sampler's chains.
pub type Points<S> = <<S as Sampler>::Ensemble as Ensemble>::Snapshot;

/// Something a run reports to. Every method has a default that does nothing.
pub trait Observer<S: Sampler> {
    /// Whether [`Observer::on_sample`] needs the chains' points (the run only copies them
    /// when some observer does).
    fn wants_points(&self) -> bool {
        false
    }

    /// The ranks the run is spread over ([`crate::Run::over`]), before its first step: an
    /// observer that gathers its chains' values over them (an
    /// [`crate::observers::Evaluate`]) takes them.
    fn over_ranks(&mut self, _ranks: &Ranks) {}

    /// Before the first step of this session (`at.step` is the first step to take).
    fn on_start(&mut self, _at: &Progress, _sampler: &S) -> Result<(), RunError> {
        Ok(())
    }

    /// Before every step (`at.step` is the step about to be taken), e.g. to keep the chains'
    /// current points on a schedule of one's own.
    fn before_step(&mut self, _at: &Progress, _sampler: &S) -> Result<(), RunError> {
        Ok(())
    }

    /// After every step.
    fn on_step(
        &mut self,
        _at: &Progress,
        _sampler: &S,
        _report: &StepReport,
    ) -> Result<(), RunError> {
        Ok(())
    }

    /// At every kept step, after [`Observer::on_step`].
    fn on_sample(&mut self, _at: &Progress, _kept: &Kept<'_, Points<S>>) -> Result<(), RunError> {
        Ok(())
    }

    /// After the last step (not when the run stops early at a checkpoint).
    fn on_end(&mut self, _at: &Progress, _sampler: &S) -> Result<(), RunError> {
        Ok(())
    }

    /// Writes out anything buffered (before a checkpoint records the observer's state).
    fn flush(&mut self) -> Result<(), RunError> {
        Ok(())
    }

    /// The observer's state for a checkpoint.
    fn save(&self) -> Result<Vec<u8>, RunError> {
        Ok(Vec::new())
    }

    /// Restores a state from [`Observer::save`].
    fn restore(&mut self, _state: &[u8]) -> Result<(), RunError> {
        Ok(())
    }
}

/// Encodes an observer's state (CBOR: every float keeps its bits).
pub fn encode<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, RunError> {
    let mut bytes = Vec::new();
    ciborium::into_writer(value, &mut bytes)
        .map_err(|e| RunError::Observer(format!("cannot encode an observer's state: {e}")))?;
    Ok(bytes)
}

/// Decodes an observer's state from [`encode`].
pub fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, RunError> {
    ciborium::from_reader(bytes)
        .map_err(|e| RunError::Observer(format!("cannot read an observer's state: {e}")))
}
