//! From settings to a configured sampler.

use super::{AnySampler, Family, SamplerSettings, lookup};
use crate::comm::Placement;
use crate::control::{
    Cyclical, EnergyPartition, Ladder, RandomField, SaStepSize, Schedule, Smoothing, SwapScheme,
    ThetaInit,
};
use crate::ensemble::Ensemble;
use crate::error::SamplerError;
use crate::sampler::{
    Contour, ContourConfig, ReplicaConfig, ReplicaExchange, Sgmcmc, SgmcmcConfig, SwapRule,
    VarianceRefresh,
};

/// What the settings alone do not say about a run.
#[derive(Clone, Debug, PartialEq)]
pub struct BuildContext {
    /// Steps of the whole run (sets the length of a cyclical schedule's cycles).
    pub total_steps: u64,
    /// Chains (rungs of a replica ladder).
    pub chains: usize,
    /// The lowest energy expected (toys: the minimum on the target's support), where a contour
    /// partition starts when `contour.u_min` is not set.
    pub min_energy: Option<f64>,
}

impl BuildContext {
    /// A run of `total_steps` steps with one chain.
    pub fn steps(total_steps: u64) -> Self {
        Self {
            total_steps,
            chains: 1,
            min_energy: None,
        }
    }

    /// The same with `chains` chains.
    pub fn chains(self, chains: usize) -> Self {
        Self { chains, ..self }
    }

    /// The same with a known minimum energy.
    pub fn min_energy(self, u: f64) -> Self {
        Self {
            min_energy: Some(u),
            ..self
        }
    }
}

/// A sampler's configuration, ready to build over an ensemble.
#[derive(Clone, Debug, PartialEq)]
pub enum SamplerSpec {
    /// Independent chains of one kernel.
    Plain(SgmcmcConfig),
    /// A contour sampler (weights, shared theta).
    Contour(ContourConfig),
    /// Replica exchange (samples from rung 0).
    Replica(ReplicaConfig),
}

impl SamplerSpec {
    /// The sampler over `ensemble`; `seed` drives the swap tests of replica exchange.
    pub fn build<E: Ensemble>(self, ensemble: E, seed: u64) -> Result<AnySampler<E>, SamplerError> {
        let n = ensemble.n_chains();
        self.build_placed(ensemble, seed, Placement::local(n))
    }

    /// The sampler over this rank's part `ensemble` of the chains `placement` lays out over
    /// ranks ([`crate::comm`]).
    pub fn build_placed<E: Ensemble>(
        self,
        ensemble: E,
        seed: u64,
        placement: Placement,
    ) -> Result<AnySampler<E>, SamplerError> {
        Ok(match self {
            Self::Plain(c) => AnySampler::Plain(Box::new(Sgmcmc::placed(c, ensemble, placement)?)),
            Self::Contour(c) => {
                AnySampler::Contour(Box::new(Contour::placed(c, ensemble, placement)?))
            }
            Self::Replica(c) => AnySampler::Replica(Box::new(ReplicaExchange::placed(
                c, ensemble, seed, placement,
            )?)),
        })
    }
}

impl SamplerSettings {
    /// The configuration of the named sampler with these settings; every hyper-parameter is
    /// validated.
    pub fn spec(&self, ctx: &BuildContext) -> Result<SamplerSpec, SamplerError> {
        let entry = lookup(&self.name)?;
        let kernel = entry.kernel.kernel(self);
        let tau = if entry.kernel.samples() {
            self.temperature
        } else {
            0.0
        };
        let constant = |kernel| SgmcmcConfig {
            kernel,
            lr: Schedule::constant(self.lr),
            temperature: Schedule::constant(tau),
        };
        let spec = match entry.family {
            Family::Constant => SamplerSpec::Plain(constant(kernel)),
            Family::Cyclical => SamplerSpec::Plain(SgmcmcConfig {
                lr: Schedule::Cyclical(Cyclical {
                    initial: self.lr,
                    total_steps: ctx.total_steps,
                    cycles: self.cyclical.cycles,
                    sampling_threshold: self.cyclical.sampling_threshold,
                    noise_free_exploration: self.cyclical.noise_free_exploration,
                }),
                ..constant(kernel)
            }),
            Family::Annealed => SamplerSpec::Plain(SgmcmcConfig {
                temperature: Schedule::ExpDecay {
                    initial: tau,
                    factor: self.annealing.factor,
                    steps_per_epoch: self.annealing.steps_per_epoch,
                },
                ..constant(kernel)
            }),
            Family::Contour(field) => {
                SamplerSpec::Contour(self.contour(constant(kernel), field, ctx)?)
            }
            Family::Metropolis | Family::Deterministic => {
                SamplerSpec::Replica(self.replica(kernel, entry.family, ctx)?)
            }
        };
        match &spec {
            SamplerSpec::Plain(c) => c.validate()?,
            SamplerSpec::Contour(c) => c.validate()?,
            SamplerSpec::Replica(c) => c.validate()?,
        }
        Ok(spec)
    }

    fn contour(
        &self,
        base: SgmcmcConfig,
        field: RandomField,
        ctx: &BuildContext,
    ) -> Result<ContourConfig, SamplerError> {
        let c = &self.contour;
        let field = c.field.unwrap_or(field);
        let cumulative = field == RandomField::Cumulative;
        // One energy unit of headroom below the minimum for the power and interacting fields
        // (reference CSGLD code); none for the cumulative field, whose increasing theta would
        // collapse on the empty bins below the minimum and give the lowest occupied bin a
        // huge multiplier.
        let u_min = match (c.u_min, ctx.min_energy) {
            (Some(u), _) => u,
            (None, Some(u)) if cumulative => u,
            (None, Some(u)) => u - 1.0,
            (None, None) => {
                return Err(SamplerError::InvalidSetting(format!(
                    "{}: set contour.u_min, the lowest energy of the partition (e.g. from a \
                     pilot run: the engine's tuning::partition_from_pilot)",
                    self.name
                )));
            }
        };
        Ok(ContourConfig {
            base,
            partition: EnergyPartition::new(u_min, c.du, c.bins)?,
            field,
            zeta: c.zeta,
            omega: SaStepSize {
                omega_max: c.omega_max,
                a: c.omega_a,
                alpha: c.omega_alpha,
                b: c.omega_b,
            },
            init: c.theta_init.clone().unwrap_or(if cumulative {
                ThetaInit::Increasing
            } else {
                ThetaInit::Decreasing
            }),
            scheme: c.multiplier_scheme,
            multiplier_clip: c.multiplier_clip,
            target_temperature: c.target_temperature,
            weights: c.weights,
        })
    }

    fn replica(
        &self,
        kernel: crate::kernel::Kernel,
        family: Family,
        ctx: &BuildContext,
    ) -> Result<ReplicaConfig, SamplerError> {
        let s = &self.replica;
        let chains = ctx.chains;
        let deterministic = family == Family::Deterministic;
        // One rung per chain: a ladder given in the settings must have one value per chain.
        let mut given = vec![("replica.lrs", s.lrs.len())];
        if !deterministic {
            given.push(("replica.temperatures", s.temperatures.len()));
        }
        for (key, len) in given {
            if len > 0 && len != chains {
                return Err(SamplerError::InvalidSetting(format!(
                    "{}: {key} has {len} values but there are {chains} chains (one rung per \
                     chain)",
                    self.name
                )));
            }
        }
        if !deterministic && s.temperatures.is_empty() && chains > 2 {
            return Err(SamplerError::InvalidSetting(format!(
                "{}: replica.temperatures is empty, which means [temperature, 10 x temperature] \
                 for two chains; give {chains} temperatures for {chains} chains",
                self.name
            )));
        }
        let lrs = if !s.lrs.is_empty() {
            s.lrs.clone()
        } else if deterministic {
            Ladder::geometric(self.lr, s.lr_max, chains)
        } else {
            vec![self.lr; chains]
        };
        let cfg = if deterministic {
            ReplicaConfig {
                kernel,
                ladder: Ladder::learning_rates(lrs, self.temperature)?,
                scheme: s.scheme.unwrap_or(SwapScheme::Optimal {
                    target_rate: s.target_rate,
                }),
                rule: SwapRule::Deterministic {
                    buffer: s.buffer,
                    target_rate: s.target_rate,
                    adapt: s.adapt.then_some(SaStepSize {
                        omega_max: f64::INFINITY,
                        a: s.gamma_a,
                        alpha: s.gamma_alpha,
                        b: s.gamma_b,
                    }),
                },
                refresh: None,
            }
        } else {
            let temperatures = if s.temperatures.is_empty() {
                vec![self.temperature, 10.0 * self.temperature]
            } else {
                s.temperatures.clone()
            };
            ReplicaConfig {
                kernel,
                ladder: Ladder::tempered(temperatures, lrs)?,
                scheme: s.scheme.unwrap_or(SwapScheme::Adjacent),
                rule: SwapRule::Metropolis {
                    correction: s.correction,
                    initial_variance: s.initial_variance,
                    smoothing: s
                        .variance_gamma
                        .map_or(Smoothing::RunningMean, Smoothing::Fixed),
                    cooling: s.cooling,
                },
                refresh: (s.variance_period > 0 && s.variance_draws >= 2).then_some(
                    VarianceRefresh {
                        period: s.variance_period,
                        draws: s.variance_draws,
                    },
                ),
            }
        };
        Ok(cfg)
    }
}
