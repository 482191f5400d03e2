//! Keeping models one at a time: what the observers that take kept models do with each (the
//! model averages, the sample saver), callable outside a [`Run`](crate::Run) as well, from a
//! burn training loop that steps with the SG-MCMC optimizers (`sgmcmc_samplers::optim`) through
//! a [`Keeper`].

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use sgmcmc_samplers::control::Phase;

use crate::error::RunError;
use crate::observer::Kept;

/// One kept model and where it was taken.
#[derive(Clone, Copy, Debug)]
pub struct KeptModel<'a, M> {
    /// The model.
    pub model: &'a M,
    /// The step it was taken before (a `Run`) or after (a training loop).
    pub step: u64,
    /// Its chain.
    pub chain: usize,
    /// `ln` of its importance weight (0 for plain samplers).
    pub log_weight: f64,
}

/// Something that takes kept models: a model average, a sample saver.
pub trait Keep<M> {
    /// Takes one kept model.
    fn keep(&mut self, kept: KeptModel<'_, M>) -> Result<(), RunError>;

    /// Writes out what is buffered (the saver's index).
    fn flush(&mut self) -> Result<(), RunError> {
        Ok(())
    }
}

/// A keeper borrowed for a training loop (`Keeper::to(&mut average)`).
impl<M, K: Keep<M> + ?Sized> Keep<M> for &mut K {
    fn keep(&mut self, kept: KeptModel<'_, M>) -> Result<(), RunError> {
        (**self).keep(kept)
    }

    fn flush(&mut self) -> Result<(), RunError> {
        (**self).flush()
    }
}

/// A keeper shared with a model that outlives the loop's borrows (burn-train's `Learner`
/// clones its model and keeps it): the caller keeps one handle and reads the average from it.
impl<M, K: Keep<M> + ?Sized> Keep<M> for Arc<Mutex<K>> {
    fn keep(&mut self, kept: KeptModel<'_, M>) -> Result<(), RunError> {
        lock(self).keep(kept)
    }

    fn flush(&mut self) -> Result<(), RunError> {
        lock(self).flush()
    }
}

/// The value behind a shared keeper, also after a panic elsewhere poisoned its lock.
pub fn lock<K: ?Sized>(shared: &Mutex<K>) -> MutexGuard<'_, K> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Each kept target chain's model at a step of a `Run`, in chain order; an error where the
/// ensemble does not host one chain per module (keeping models needs networks, not toy rows).
pub(super) fn kept_models<'k, M>(
    kept: &'k Kept<'_, Vec<M>>,
) -> impl Iterator<Item = Result<KeptModel<'k, M>, RunError>> + 'k {
    kept.chains.iter().map(move |&c| {
        let model = kept.points.get(kept.index(c)).ok_or_else(|| {
            RunError::Observer(format!(
                "keeping models needs one chain per module ({} modules, chain {c})",
                kept.points.len(),
            ))
        })?;
        Ok(KeptModel {
            model,
            step: kept.step,
            chain: c,
            log_weight: kept.log_weights[c],
        })
    })
}

/// [`Observer::on_sample`] of an observer that keeps every kept model.
pub(super) fn keep_all<M, K: Keep<M>>(
    keeper: &mut K,
    kept: &Kept<'_, Vec<M>>,
) -> Result<(), RunError> {
    kept_models(kept).try_for_each(|m| keeper.keep(m?))
}

/// The kept models of a training loop that steps one chain with an SG-MCMC optimizer: after
/// `burn_in` steps, every `thin`-th step in the sampling phase (all of them, or the sampling
/// part of each cycle of a cyclical schedule) gives its model to each keeper (model averages,
/// a sample saver). The loop calls [`Keeper::after_step`] after every optimizer step.
pub struct Keeper<'k, M> {
    burn_in: u64,
    thin: u64,
    chain: usize,
    step: u64,
    kept: usize,
    keepers: Vec<Box<dyn Keep<M> + Send + 'k>>,
}

impl<'k, M> Keeper<'k, M> {
    /// Keeps chain `chain`'s models after `burn_in` steps, every `thin` steps (`thin >= 1`).
    pub fn new(burn_in: u64, thin: u64, chain: usize) -> Result<Self, RunError> {
        if thin == 0 {
            return Err(RunError::Setting("thin must be at least 1".into()));
        }
        Ok(Self {
            burn_in,
            thin,
            chain,
            step: 0,
            kept: 0,
            keepers: Vec::new(),
        })
    }

    /// Adds a keeper: borrowed (`&mut average`) or shared (`Arc<Mutex<_>>`).
    pub fn to(mut self, keeper: impl Keep<M> + Send + 'k) -> Self {
        self.keepers.push(Box::new(keeper));
        self
    }

    /// After an optimizer step taken in `phase`: whether `model` (the chain after the step) was
    /// kept, which it is when the step is past the burn-in, a multiple of `thin` steps after it,
    /// and in [`Phase::Sampling`].
    pub fn after_step(&mut self, model: &M, phase: Phase) -> Result<bool, RunError> {
        self.step += 1;
        let keep = phase == Phase::Sampling
            && self.step > self.burn_in
            && (self.step - self.burn_in).is_multiple_of(self.thin);
        if keep {
            self.keep(model)?;
        }
        Ok(keep)
    }

    /// Keeps `model` now, whatever the schedule (e.g. in the sampling phase of a cycle).
    pub fn keep(&mut self, model: &M) -> Result<(), RunError> {
        for k in &mut self.keepers {
            k.keep(KeptModel {
                model,
                step: self.step,
                chain: self.chain,
                log_weight: 0.0,
            })?;
        }
        self.kept += 1;
        Ok(())
    }

    /// Steps taken.
    pub fn steps(&self) -> u64 {
        self.step
    }

    /// Models kept.
    pub fn kept(&self) -> usize {
        self.kept
    }

    /// Writes out what the keepers buffer (the saver's index); call it at the end.
    pub fn finish(&mut self) -> Result<(), RunError> {
        self.keepers.iter_mut().try_for_each(|k| k.flush())
    }
}

/// The `Observer` of a keeper inside a `Run`: every kept model of every target chain, its
/// state (`self.state`) checkpointed with the run.
macro_rules! observe_by_keeping {
    ($ty:ident) => {
        impl<S, M, F> $crate::observer::Observer<S> for $ty<F>
        where
            S: sgmcmc_samplers::sampler::Sampler,
            S::Ensemble: sgmcmc_samplers::ensemble::Ensemble<Snapshot = Vec<M>>,
            F: FnMut(&M) -> Result<Vec<f64>, String>,
        {
            fn wants_points(&self) -> bool {
                true
            }

            fn on_sample(
                &mut self,
                _: &$crate::observer::Progress,
                kept: &$crate::observer::Kept<'_, Vec<M>>,
            ) -> Result<(), RunError> {
                super::keep::keep_all(self, kept)
            }

            fn save(&self) -> Result<Vec<u8>, RunError> {
                $crate::observer::encode(&self.state)
            }

            fn restore(&mut self, state: &[u8]) -> Result<(), RunError> {
                self.state = $crate::observer::decode(state)?;
                Ok(())
            }
        }
    };
}
pub(super) use observe_by_keeping;

#[cfg(test)]
mod tests {
    use super::*;

    /// Records the steps it was given.
    struct Steps(Vec<u64>);

    impl Keep<()> for Steps {
        fn keep(&mut self, kept: KeptModel<'_, ()>) -> Result<(), RunError> {
            self.0.push(kept.step);
            Ok(())
        }
    }

    #[test]
    fn keeps_every_thin_th_sampling_step_after_the_burn_in() {
        let mut steps = Steps(Vec::new());
        let mut keeper = Keeper::new(3, 2, 0).unwrap().to(&mut steps);
        for k in 1..=12u64 {
            // Steps 9 and 10 are exploration (a cycle's first part): never kept.
            let phase = if (9..=10).contains(&k) {
                Phase::Exploration
            } else {
                Phase::Sampling
            };
            keeper.after_step(&(), phase).unwrap();
        }
        assert_eq!((keeper.steps(), keeper.kept()), (12, 3));
        drop(keeper);
        assert_eq!(steps.0, [5, 7, 11]);
        assert!(Keeper::<()>::new(0, 0, 0).is_err());
    }
}
