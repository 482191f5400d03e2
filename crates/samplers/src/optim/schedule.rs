//! The library's step-size schedules as burn learning-rate schedulers: any [`Schedule`]
//! through [`ScheduledLr`], with burn-style configs for the two of Deng's experiments:
//!
//! - [`CyclicalLrSchedulerConfig`]: cyclical SG-MCMC's cosine cycles (Zhang et al. 2020, eq. 1),
//!   `eta_k = eta_0 / 2 (cos(pi min(mod(k, C) / C, h)) + 1)`, `C = ceil(K / M)`;
//! - [`AnnealingLrSchedulerConfig`]: the papers' annealing, `eta_k = eta_0 / f^max(0, e - h)`
//!   at epoch `e = floor(k / steps_per_epoch)`.
//!
//! The scheduler's `k` counts its `step()` calls from 0, so the first step gets `eta_0`, and its
//! record holds `k`: burn's checkpoints resume it.

use burn::config::Config;
use burn::lr_scheduler::{LrScheduler, LrSchedulerRecord};
use burn::optim::LearningRate;

use crate::control::{Cyclical, Phase, Schedule};
use crate::error::SamplerError;

/// A [`Schedule`] as a burn [`LrScheduler`]: its value at steps 0, 1, 2, ...
#[derive(Clone, Debug)]
pub struct ScheduledLr {
    schedule: Schedule,
    /// Steps taken.
    step: u64,
}

impl ScheduledLr {
    /// The schedule from step 0, after checking it (its value must be positive).
    pub fn new(schedule: Schedule) -> Result<Self, SamplerError> {
        schedule.validate("lr", false)?;
        Ok(Self { schedule, step: 0 })
    }

    /// The schedule (step `k`'s value and phase).
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// The phase of the step the next `step()` call schedules: cyclical SG-MCMC collects
    /// samples only in [`Phase::Sampling`].
    pub fn phase(&self) -> Phase {
        self.schedule.phase(self.step)
    }
}

impl LrScheduler for ScheduledLr {
    fn step(&mut self) -> LearningRate {
        let value = self.schedule.value(self.step);
        self.step += 1;
        value
    }

    fn to_record(&self) -> LrSchedulerRecord {
        LrSchedulerRecord::new().with_scalar("step", self.step)
    }

    fn load_record(&mut self, record: LrSchedulerRecord) {
        if let Some(step) = record.scalar::<u64>("step") {
            self.step = step;
        }
    }
}

/// Cyclical cosine learning rates (Zhang et al. 2020, eq. 1; [`Cyclical`]).
#[derive(Config, Debug)]
pub struct CyclicalLrSchedulerConfig {
    /// Peak learning rate `eta_0` at the start of each cycle.
    pub initial_lr: f64,
    /// Total number of steps `K`.
    pub total_steps: u64,
    /// Number of cycles `M`.
    pub cycles: u64,
    /// Cycle position from which the sampling phase begins, in `[0, 1]` (reported by
    /// [`ScheduledLr::phase`]).
    #[config(default = 0.5)]
    pub sampling_threshold: f64,
    /// Cycle position `h` in `(0, 1]` from which the value is held (thesis E.4.4 uses 0.85).
    #[config(default = 1.0)]
    pub hold: f64,
}

impl CyclicalLrSchedulerConfig {
    /// The scheduler, after checking every field.
    pub fn init(&self) -> Result<ScheduledLr, SamplerError> {
        let c = Cyclical {
            initial: self.initial_lr,
            total_steps: self.total_steps,
            cycles: self.cycles,
            sampling_threshold: self.sampling_threshold,
            noise_free_exploration: false,
            hold: self.hold,
        };
        c.validate()?;
        ScheduledLr::new(Schedule::Cyclical(c))
    }
}

/// Annealing: the learning rate divided by `factor` at each epoch after `hold_epochs`.
#[derive(Config, Debug)]
pub struct AnnealingLrSchedulerConfig {
    /// Learning rate `eta_0` up to epoch `hold_epochs`.
    pub initial_lr: f64,
    /// Division factor per epoch (the papers' 1.01 or 1.02).
    pub factor: f64,
    /// Steps per epoch.
    pub steps_per_epoch: u64,
    /// Epochs before the first division (the papers' "fixed for 400 epochs" is 399).
    #[config(default = 0)]
    pub hold_epochs: u64,
}

impl AnnealingLrSchedulerConfig {
    /// The scheduler, after checking every field.
    pub fn init(&self) -> Result<ScheduledLr, SamplerError> {
        ScheduledLr::new(Schedule::ExpDecay {
            initial: self.initial_lr,
            factor: self.factor,
            steps_per_epoch: self.steps_per_epoch,
            hold_epochs: self.hold_epochs,
        })
    }
}
