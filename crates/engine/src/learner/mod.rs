//! SG-MCMC inside burn-train's `Learner` (feature `learner`).
//!
//! A `Learner` steps its model with the `ModuleOptimizer` it is given. With one of the kernel
//! optimizers of `sgmcmc_samplers::optim` (SGLD, SGHMC, pSGLD, SGNHT) those steps are SG-MCMC
//! steps, and with their `LrScheduler`s (cyclical, annealing) the schedules are the papers'.
//! What a sampler adds to a training loop is keeping the samples: [`Sampled`] wraps the user's
//! model (its `TrainStep` and `InferenceStep` unchanged) and, after every optimizer step, hands
//! the chain's model to a [`Keeper`], whose keepers are the library's own model averages and
//! sample saver, the same code a [`Run`](crate::Run) uses. burn-train keeps everything else:
//! its data loaders, metrics, checkpoints of the model, the optimizer (the noise streams and
//! momenta included) and the scheduler.
//!
//! In outline (`examples/learner_sghmc.rs` is the complete program):
//!
//! ```text
//! let bma = Arc::new(Mutex::new(ClassifierAverage::new(10, predict)));
//! let keeper = Keeper::new(burn_in, 10, 0)?.to(bma.clone()).to(SampleSaver::new(dir));
//! let model = Sampled::new(model, keeper);
//! let optim = SghmcConfig::new(n_train).with_seed(1).init()?;
//! let trained = SupervisedTraining::new(dir, train, valid)
//!     .num_epochs(20)
//!     .launch(Learner::new(model, optim, 0.05));
//! trained.model.finish()?; // the saver's index; the first error a step met, if any
//! let scores = lock(&bma).scores(&labels)?;
//! ```
//!
//! burn-train is re-exported ([`burn_train`]) at the version the wrapper is built for.
//!
//! Checkpoints: burn-train's resume restores the model, optimizer and scheduler, not the
//! keepers' state (the averages so far): a resumed `Learner` starts its averages afresh.

use std::any::Any;
use std::fmt;
use std::sync::{Arc, Mutex};

use burn::lr_scheduler::module_lr_scheduler::ModuleLearningRate;
use burn::module::{Module, ModuleDisplay};
use burn::optim::{GradientsParams, ModuleOptimizer, MultiGradientsParams};
use burn_train::{InferenceStep, TrainOutput, TrainStep};
use sgmcmc_samplers::control::{Phase, Schedule};

mod lines;

pub use lines::EpochLines;

use crate::error::RunError;
use crate::observers::{Keeper, lock};

pub use burn_train;

/// The keeper a [`Sampled`] model shares with its copies, the schedule of its phases, and the
/// first error a step met (a step cannot return one).
struct Shared<M> {
    keeper: Keeper<'static, M>,
    phases: Option<Schedule>,
    error: Option<RunError>,
}

/// [`Shared`] with its model type erased: burn's module derive skips only fields whose type
/// does not name the module's generics.
trait StepKeeper: Send {
    fn after_step(&mut self, model: &dyn Any);
    fn set_phases(&mut self, phases: Schedule);
    fn progress(&self) -> (u64, usize);
    fn finish(&mut self) -> Result<(), RunError>;
}

impl<M: 'static> StepKeeper for Shared<M> {
    fn after_step(&mut self, model: &dyn Any) {
        let Some(model) = model.downcast_ref::<M>() else {
            return;
        };
        let phase = self
            .phases
            .as_ref()
            .map_or(Phase::Sampling, |p| p.phase(self.keeper.steps()));
        if self.error.is_none()
            && let Err(e) = self.keeper.after_step(model, phase)
        {
            self.error = Some(e);
        }
    }

    fn set_phases(&mut self, phases: Schedule) {
        self.phases = Some(phases);
    }

    fn progress(&self) -> (u64, usize) {
        (self.keeper.steps(), self.keeper.kept())
    }

    fn finish(&mut self) -> Result<(), RunError> {
        match self.error.take() {
            Some(e) => Err(e),
            None => self.keeper.finish(),
        }
    }
}

/// The keeper of a [`Sampled`] model, shared by its copies; not a parameter and not in records.
#[derive(Clone)]
pub struct SharedKeeper(Arc<Mutex<Box<dyn StepKeeper>>>);

impl fmt::Debug for SharedKeeper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (steps, kept) = lock(&self.0).progress();
        write!(f, "Keeper({steps} steps, {kept} kept)")
    }
}

/// A model whose optimizer steps are SG-MCMC steps and whose samples are kept: after each step
/// the new model goes to the [`Keeper`] (burn-in, thinning, and the sampling phase of an
/// optional cyclical [`Schedule`]).
#[derive(Module, Debug)]
pub struct Sampled<M: Module> {
    /// The user's model.
    pub model: M,
    #[module(skip)]
    keeper: SharedKeeper,
}

impl<M: Module + 'static> Sampled<M> {
    /// `model`, its samples kept by `keeper`; every step is in the sampling phase.
    pub fn new(model: M, keeper: Keeper<'static, M>) -> Self {
        let shared = Shared {
            keeper,
            phases: None,
            error: None,
        };
        Self {
            model,
            keeper: SharedKeeper(Arc::new(Mutex::new(Box::new(shared)))),
        }
    }

    /// Steps `k = 0, 1, ...` take the phase `phases.phase(k)`: with the cyclical schedule the
    /// `Learner`'s scheduler follows (`ScheduledLr::schedule`), samples are kept in the
    /// sampling part of each cycle only.
    pub fn with_phases(self, phases: Schedule) -> Self {
        lock(&self.keeper.0).set_phases(phases);
        self
    }

    /// Steps taken and models kept.
    pub fn progress(&self) -> (u64, usize) {
        lock(&self.keeper.0).progress()
    }

    /// After training: the first error a step met (a prediction that failed, a sample that
    /// could not be written), else writes out what the keepers buffer (the saver's index).
    pub fn finish(&self) -> Result<(), RunError> {
        lock(&self.keeper.0).finish()
    }

    /// Hands the model after a step to the keeper.
    fn after_step(self) -> Self {
        lock(&self.keeper.0).after_step(&self.model);
        self
    }
}

impl<M: Module + ModuleDisplay + TrainStep + 'static> TrainStep for Sampled<M> {
    type Input = M::Input;
    type Output = M::Output;

    fn step(&self, item: Self::Input) -> TrainOutput<Self::Output> {
        self.model.step(item)
    }

    fn optimize(
        self,
        optim: &mut ModuleOptimizer,
        lr: ModuleLearningRate,
        grads: GradientsParams,
    ) -> Self {
        optim.step(lr, self, grads).after_step()
    }

    fn optimize_multi(
        self,
        optim: &mut ModuleOptimizer,
        lr: ModuleLearningRate,
        grads: MultiGradientsParams,
    ) -> Self {
        optim.step_multi(lr, self, grads).after_step()
    }
}

impl<M: Module + ModuleDisplay + InferenceStep> InferenceStep for Sampled<M> {
    type Input = M::Input;
    type Output = M::Output;

    fn step(&self, item: Self::Input) -> Self::Output {
        self.model.step(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observers::{Keep, KeptModel};
    use burn::nn::{Linear, LinearConfig};
    use burn::tensor::Device;
    use sgmcmc_samplers::control::Cyclical;

    /// Records the steps of the models it is given.
    struct Steps(Arc<Mutex<Vec<u64>>>);

    impl Keep<Linear> for Steps {
        fn keep(&mut self, kept: KeptModel<'_, Linear>) -> Result<(), RunError> {
            lock(&self.0).push(kept.step);
            Ok(())
        }
    }

    #[test]
    fn copies_share_one_keeper_that_keeps_only_the_sampling_phase() {
        let steps = Arc::new(Mutex::new(Vec::new()));
        let keeper = Keeper::new(0, 1, 0).unwrap().to(Steps(steps.clone()));
        let model = LinearConfig::new(2, 1).init(&Device::flex());
        // Cycles of 5 steps whose last 2 (positions 0.6 and 0.8) are the sampling phase.
        let cycles = Schedule::Cyclical(Cyclical {
            initial: 1.0,
            total_steps: 10,
            cycles: 2,
            sampling_threshold: 0.6,
            noise_free_exploration: false,
            hold: 1.0,
        });
        let mut sampled = Sampled::new(model, keeper).with_phases(cycles);
        for _ in 0..10 {
            // burn-train steps a clone of the model each time.
            sampled = sampled.clone().after_step();
        }
        assert_eq!(sampled.progress(), (10, 4));
        // Steps k = 3, 4, 8, 9 (0-based) are kept, as the models after 4, 5, 9 and 10 steps.
        assert_eq!(*lock(&steps), [4, 5, 9, 10]);
        assert!(sampled.finish().is_ok());
    }
}
