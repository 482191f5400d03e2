//! Energies at stored points: what the control variates of variance-reduced replica exchange
//! need (thesis Algorithm 2, eq. 3.5).

use burn::module::Module;

use super::{
    Ensemble, HostEnsemble, HostPoints, HostTarget, ModuleEnsemble, module_values,
    with_module_values,
};
use crate::checkpoint::{SnapshotValues, mismatch};
use crate::density::Target;
use crate::error::SamplerError;
use crate::rng::ChainRng;

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

    /// Whether minibatch energies are exact given the batch (no injected energy noise), as
    /// control variates need: the snapshots' energies carry no fresh noise of their own.
    fn exact_energies(&self) -> bool;

    /// The points' values, for checkpoints.
    fn points_to_values(&self, points: &Self::Snapshot) -> Result<SnapshotValues, SamplerError>;

    /// Points from [`SnapshotEnergy::points_to_values`]; errors when they do not fit the chains.
    fn points_from_values(&self, values: SnapshotValues) -> Result<Self::Snapshot, SamplerError>;
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
    fn exact_energies(&self) -> bool {
        true
    }

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

    fn points_to_values(&self, points: &HostPoints) -> Result<SnapshotValues, SamplerError> {
        Ok(if points.x.is_empty() {
            SnapshotValues::Empty
        } else {
            SnapshotValues::Host {
                x: points.x.clone(),
            }
        })
    }

    fn points_from_values(&self, values: SnapshotValues) -> Result<HostPoints, SamplerError> {
        match values {
            SnapshotValues::Empty => Ok(HostPoints::default()),
            SnapshotValues::Host { x } if x.len() == self.n_chains() * self.dim() => {
                Ok(HostPoints { dim: self.dim(), x })
            }
            _ => Err(mismatch("the snapshots do not fit these host chains")),
        }
    }
}

/// Module chains: snapshots are module handles (cheap clones of reference-counted tensors);
/// energies come from [`Target::batch_energies`] and [`Target::full_energy`] (deterministic for
/// data posteriors; a toy target with injected noise draws it from fixed streams, and
/// [`SnapshotEnergy::exact_energies`] says so when that noise reaches the energies). With two or
/// more modules the snapshots are scored on the pool's threads, one module per task, as the
/// chains step ([`ModuleEnsemble`]): the same numbers as one after another, since each module's
/// energies depend on it alone and running state is settled on the thread that updated it.
impl<M: Module, T: Target<M>> SnapshotEnergy for ModuleEnsemble<M, T> {
    fn exact_energies(&self) -> bool {
        !self.target().noisy_energies()
    }

    fn batch_energies_at(
        &self,
        points: &Vec<M>,
        batch: &T::Batch,
        out: &mut [f64],
    ) -> Result<(), SamplerError> {
        let target = self.target();
        self.energies_of(points, out, |m| {
            let mut rngs = ChainRng::streams(u64::MAX, target.chains_per_module(m));
            Ok(target.batch_energies(m, batch, &mut rngs)?)
        })
    }

    fn full_energies_at(&self, points: &Vec<M>, out: &mut [f64]) -> Result<(), SamplerError> {
        let target = self.target();
        self.energies_of(points, out, |m| Ok(target.full_energy(m)?.into()))
    }

    fn points_to_values(&self, points: &Vec<M>) -> Result<SnapshotValues, SamplerError> {
        if points.is_empty() {
            return Ok(SnapshotValues::Empty);
        }
        Ok(SnapshotValues::Modules {
            modules: points.iter().map(module_values).collect::<Result<_, _>>()?,
        })
    }

    fn points_from_values(&self, values: SnapshotValues) -> Result<Vec<M>, SamplerError> {
        match values {
            SnapshotValues::Empty => Ok(Vec::new()),
            SnapshotValues::Modules { modules } if modules.len() == self.modules().count() => self
                .modules()
                .zip(modules)
                .map(|(m, v)| with_module_values(self.copy_of(m), v))
                .collect(),
            _ => Err(mismatch("the snapshots do not fit these module chains")),
        }
    }
}
