//! Energies at stored points: what the control variates of variance-reduced replica exchange
//! need (thesis Algorithm 2, eq. 3.5).

use super::{Ensemble, HostEnsemble, HostPoints, HostTarget};
use crate::error::SamplerError;

/// An [`Ensemble`] that can evaluate energies at points it stored with
/// [`Ensemble::snapshot_into`]: the minibatch energy `L(B | x^_p)` of every chain's snapshot on
/// a batch, and the exact full-data energy `L(x^_p)`. Evaluations are deterministic (no
/// injected noise) and leave the chains and their gradients untouched.
pub trait SnapshotEnergy: Ensemble {
    /// `out[p] = L(B | x^_p)` at full-data scale.
    fn batch_energies_at(
        &self,
        points: &Self::Snapshot,
        batch: &Self::Batch,
        out: &mut [f64],
    ) -> Result<(), SamplerError>;

    /// `out[p] = L(x^_p)` on all the data.
    fn full_energies_at(
        &self,
        points: &Self::Snapshot,
        out: &mut [f64],
    ) -> Result<(), SamplerError>;

    /// The points as flat values, for checkpoints.
    fn points_to_values(&self, points: &Self::Snapshot) -> Vec<f64>;

    /// Points from [`SnapshotEnergy::points_to_values`]; errors when the count does not fit.
    fn points_from_values(&self, values: Vec<f64>) -> Result<Self::Snapshot, SamplerError>;
}

/// A host target with exact, noise-free energies: the data posteriors whose minibatch noise
/// a control variate can cancel.
pub trait ExactHostTarget: HostTarget {
    /// `L(B | x)` at full-data scale.
    fn batch_energy(&self, x: &[f64], batch: &Self::Batch) -> f64;
    /// `L(x)` on all the data.
    fn full_energy(&self, x: &[f64]) -> f64;
}

impl<T: ExactHostTarget> SnapshotEnergy for HostEnsemble<T> {
    fn batch_energies_at(
        &self,
        points: &HostPoints,
        batch: &T::Batch,
        out: &mut [f64],
    ) -> Result<(), SamplerError> {
        for (p, o) in out.iter_mut().enumerate() {
            *o = self.target().batch_energy(points.chain(p), batch);
        }
        Ok(())
    }

    fn full_energies_at(&self, points: &HostPoints, out: &mut [f64]) -> Result<(), SamplerError> {
        for (p, o) in out.iter_mut().enumerate() {
            *o = self.target().full_energy(points.chain(p));
        }
        Ok(())
    }

    fn points_to_values(&self, points: &HostPoints) -> Vec<f64> {
        points.x.clone()
    }

    fn points_from_values(&self, x: Vec<f64>) -> Result<HostPoints, SamplerError> {
        if x.len() != self.n_chains() * self.dim() {
            return Err(crate::checkpoint::mismatch(format!(
                "{} snapshot values saved, the chains hold {}",
                x.len(),
                self.n_chains() * self.dim()
            )));
        }
        Ok(HostPoints { dim: self.dim(), x })
    }
}
