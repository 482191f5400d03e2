//! `Sgmcmc`: independent chains of one kernel under learning-rate and temperature schedules.
//!
//! Covers SGD, momentum SGD, SGLD (thesis eq. 2.7), SGHMC, pSGLD, SGNHT, BAOAB and, with a cyclical
//! learning-rate schedule, cyclical SG-MCMC (Zhang et al. 2020) including its noise-free
//! exploration phase; with a decaying temperature schedule, simulated annealing.
//! At step `k` every chain moves with `StepSize { lr: lr(k), temperature: tau(k), multiplier: 1 }`
//! (`tau(k) = 0` in a noise-free exploration phase).

use serde::{Deserialize, Serialize};

use super::driver::Driver;
use super::{Sampler, StepReport};
use crate::checkpoint::{AlgorithmState, SamplerState};
use crate::comm::Placement;
use crate::control::{Phase, Schedule};
use crate::ensemble::Ensemble;
use crate::error::SamplerError;
use crate::kernel::{Kernel, StepSize};

/// Configuration of an [`Sgmcmc`] sampler.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SgmcmcConfig {
    /// The kernel.
    pub kernel: Kernel,
    /// Learning-rate schedule (full-data scale).
    pub lr: Schedule,
    /// Temperature schedule.
    pub temperature: Schedule,
}

impl SgmcmcConfig {
    /// Constant `lr` and temperature.
    pub fn constant(kernel: Kernel, lr: f64, temperature: f64) -> Self {
        Self {
            kernel,
            lr: Schedule::constant(lr),
            temperature: Schedule::constant(temperature),
        }
    }

    /// Checks every hyper-parameter.
    pub fn validate(&self) -> Result<(), SamplerError> {
        self.kernel.validate()?;
        self.lr.validate("lr", false)?;
        self.temperature.validate("temperature", true)?;
        // Check the first step's coefficients too (e.g. SGHMC's beta <= 1 - mu).
        self.kernel
            .coefficients(&StepSize::new(self.lr.value(0), self.temperature.value(0)))
            .map(|_| ())
    }

    /// The step size of step `k`.
    pub fn step_size(&self, k: u64) -> (StepSize, Phase) {
        let phase = self.lr.phase(k);
        let noise_free = matches!(&self.lr, Schedule::Cyclical(c) if c.noise_free_exploration);
        let tau = if phase == Phase::Exploration && noise_free {
            0.0
        } else {
            self.temperature.value(k)
        };
        (StepSize::new(self.lr.value(k), tau), phase)
    }
}

/// Independent chains of one kernel.
pub struct Sgmcmc<E: Ensemble> {
    config: SgmcmcConfig,
    driver: Driver<E>,
}

impl<E: Ensemble> Sgmcmc<E> {
    /// A sampler over `ensemble`; errors on invalid hyper-parameters.
    pub fn new(config: SgmcmcConfig, ensemble: E) -> Result<Self, SamplerError> {
        let n = ensemble.n_chains();
        Self::placed(config, ensemble, Placement::local(n))
    }

    /// A sampler over this rank's part `ensemble` of chains laid out by `placement`
    /// ([`crate::comm`]). Independent chains exchange nothing while they run.
    pub fn placed(
        config: SgmcmcConfig,
        ensemble: E,
        placement: Placement,
    ) -> Result<Self, SamplerError> {
        config.validate()?;
        Ok(Self {
            config,
            driver: Driver::new(ensemble, false, placement)?,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &SgmcmcConfig {
        &self.config
    }

    /// Gives the chains back.
    pub fn into_ensemble(self) -> E {
        self.driver.ensemble
    }
}

impl<E: Ensemble> Sampler for Sgmcmc<E> {
    type Batch = E::Batch;
    type Ensemble = E;

    fn ensemble(&self) -> &E {
        &self.driver.ensemble
    }

    fn n_chains(&self) -> usize {
        self.driver.n_chains()
    }

    fn local_chains(&self) -> std::ops::Range<usize> {
        self.driver.local()
    }

    fn steps_done(&self) -> u64 {
        self.driver.step
    }

    fn step(&mut self, batch: &E::Batch) -> Result<&StepReport, SamplerError> {
        // The step size does not depend on the energies: estimate and move in one pass.
        let (step_size, phase) = self.config.step_size(self.driver.step);
        self.driver.set_all(&self.config.kernel, step_size)?;
        self.driver
            .step_independent(batch, &self.config.kernel, phase)
    }

    fn report(&self) -> &StepReport {
        &self.driver.report
    }

    fn state(&self) -> Result<SamplerState, SamplerError> {
        self.driver.state(AlgorithmState::Sgmcmc)
    }

    fn restore(&mut self, state: SamplerState) -> Result<(), SamplerError> {
        self.driver.restore(state, "sgmcmc").map(|_| ())
    }
}
