//! From settings to a configured sampler.

use super::{AnySampler, Family, SamplerSettings, lookup};
use crate::comm::Placement;
use crate::control::{
    Cyclical, EnergyPartition, Ladder, RandomField, SaStepSize, Schedule, Smoothing, SwapScheme,
    ThetaInit,
};
use crate::ensemble::Ensemble;
use crate::ensemble::SnapshotEnergy;
use crate::error::SamplerError;
use crate::sampler::{
    BatchDraw, Contour, ContourConfig, ControlSettings, FullPass, ReplicaConfig, ReplicaExchange,
    Sgmcmc, SgmcmcConfig, SwapRule, VarianceReduced, VarianceRefresh, VrConfig, VrRefresh,
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
    Sgmcmc(SgmcmcConfig),
    /// A contour sampler (weights, shared theta).
    Contour(ContourConfig),
    /// Replica exchange (samples from rung 0).
    Replica(ReplicaConfig),
    /// Variance-reduced replica exchange ([`SamplerSpec::build_with_data`]).
    VarianceReduced(VrConfig),
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
            Self::Sgmcmc(c) => {
                AnySampler::Sgmcmc(Box::new(Sgmcmc::placed(c, ensemble, placement)?))
            }
            Self::Contour(c) => {
                AnySampler::Contour(Box::new(Contour::placed(c, ensemble, placement)?))
            }
            Self::Replica(c) => AnySampler::Replica(Box::new(ReplicaExchange::placed(
                c, ensemble, seed, placement,
            )?)),
            Self::VarianceReduced(_) => {
                return Err(SamplerError::InvalidSetting(
                    "variance-reduced replica exchange needs fresh minibatches and a full-data \
                     pass: build it with SamplerSpec::build_with_data (in one process)"
                        .into(),
                ));
            }
        })
    }

    /// The sampler over `ensemble`, for any spec: variance-reduced replica exchange draws the
    /// `j`-th fresh minibatch of the refresh at step `k` as `batches(k, j)` and the snapshots'
    /// exact energies from `full_pass` (equal minibatches covering the data once; `None`: the
    /// ensemble's own [`SnapshotEnergy::full_energies_at`]); the other specs ignore both.
    pub fn build_with_data<E>(
        self,
        ensemble: E,
        seed: u64,
        batches: BatchDraw<E::Batch>,
        full_pass: Option<FullPass<E::Batch>>,
    ) -> Result<AnySampler<E>, SamplerError>
    where
        E: SnapshotEnergy + Send + 'static,
        E::Snapshot: Send,
    {
        let Self::VarianceReduced(c) = self else {
            return self.build(ensemble, seed);
        };
        let vr = VarianceReduced::new(c, ensemble, batches, seed)?;
        Ok(AnySampler::VarianceReduced(Box::new(match full_pass {
            Some(pass) => vr.with_full_pass(pass),
            None => vr,
        })))
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
        let decay = |initial, factor, hold_epochs| Schedule::ExpDecay {
            initial,
            factor,
            steps_per_epoch: self.annealing.steps_per_epoch,
            hold_epochs,
        };
        let tau_factor = self
            .annealing
            .temperature_factor
            .unwrap_or(self.annealing.factor);
        // The `sa` variants anneal every schedule; the others run at a constant lr and tau.
        let constant = |kernel| match self.annealing.lr_hold_epochs {
            Some(hold) => SgmcmcConfig {
                kernel,
                lr: decay(self.lr, self.annealing.factor, hold),
                temperature: decay(tau, tau_factor, 0),
            },
            None => SgmcmcConfig {
                kernel,
                lr: self
                    .milestones(self.lr)
                    .unwrap_or(Schedule::constant(self.lr)),
                temperature: Schedule::constant(tau),
            },
        };
        let cyclical = entry.family == Family::Cyclical || self.replica.cyclical_lr;
        if !self.annealing.lr_milestones.is_empty()
            && (cyclical || self.annealing.lr_hold_epochs.is_some())
        {
            return Err(SamplerError::InvalidSetting(format!(
                "{}: annealing.lr_milestones (a step decay of the lr) does not combine with a \
                 cyclical lr or annealing.lr_hold_epochs, which set the lr themselves",
                self.name
            )));
        }
        let spec = match entry.family {
            Family::Constant => SamplerSpec::Sgmcmc(constant(kernel)),
            Family::Cyclical => SamplerSpec::Sgmcmc(SgmcmcConfig {
                lr: Schedule::Cyclical(self.cycle(self.lr, ctx)),
                ..constant(kernel)
            }),
            Family::Annealed => SamplerSpec::Sgmcmc(SgmcmcConfig {
                temperature: decay(tau, tau_factor, 0),
                ..constant(kernel)
            }),
            Family::Contour(field) => {
                SamplerSpec::Contour(self.contour(constant(kernel), field, ctx)?)
            }
            Family::Metropolis | Family::Deterministic | Family::VarianceReduced => {
                if self.annealing.lr_hold_epochs.is_some() {
                    return Err(SamplerError::InvalidSetting(format!(
                        "{}: annealing.lr_hold_epochs (the `sa` variants) applies to plain and \
                         contour samplers, not to replica exchange, whose rungs set their own lr \
                         and temperature",
                        self.name
                    )));
                }
                let replica = self.replica(kernel, entry.family, ctx)?;
                if entry.family == Family::VarianceReduced {
                    SamplerSpec::VarianceReduced(self.variance_reduced(replica))
                } else {
                    SamplerSpec::Replica(replica)
                }
            }
        };
        match &spec {
            SamplerSpec::Sgmcmc(c) => c.validate()?,
            SamplerSpec::Contour(c) => c.validate()?,
            SamplerSpec::Replica(c) => c.validate()?,
            SamplerSpec::VarianceReduced(c) => c.validate()?,
        }
        Ok(spec)
    }

    /// The step decay of `annealing.lr_milestones` from `initial`, if any milestone is set.
    fn milestones(&self, initial: f64) -> Option<Schedule> {
        let a = &self.annealing;
        let per_epoch = a.steps_per_epoch.max(1) as f64;
        (!a.lr_milestones.is_empty()).then(|| Schedule::Milestones {
            initial,
            gamma: a.lr_gamma,
            at_steps: a
                .lr_milestones
                .iter()
                .map(|e| (e * per_epoch).round().max(0.0) as u64)
                .collect(),
        })
    }

    /// The cosine cycles of the `cyclical` settings with peak `initial` over the run.
    fn cycle(&self, initial: f64, ctx: &BuildContext) -> Cyclical {
        Cyclical {
            initial,
            total_steps: ctx.total_steps,
            cycles: self.cyclical.cycles,
            sampling_threshold: self.cyclical.sampling_threshold,
            noise_free_exploration: self.cyclical.noise_free_exploration,
            hold: self.cyclical.hold,
        }
    }

    /// `vr-*`: the Metropolis replica exchange with control variates (none with
    /// `control_period = 0`: plain reSGLD / reSGHMC) and refreshes of `sigma2_hat` from fresh
    /// minibatches, which replace the replica's own refresh (on one batch, a network's
    /// energies do not vary).
    fn variance_reduced(&self, replica: ReplicaConfig) -> VrConfig {
        let s = &self.replica;
        VrConfig {
            replica: ReplicaConfig {
                refresh: None,
                ..replica
            },
            control: (s.control_period > 0).then_some(ControlSettings {
                period: s.control_period,
                coefficient: s.control_coefficient,
                adapt: s.control_adapt,
            }),
            refresh: (s.variance_period > 0).then_some(VrRefresh {
                every: s.variance_period,
                draws: s.variance_draws,
            }),
        }
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
                     pilot run: the engine's tuning::pilot_energies and tuning::partition)",
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
        let lr_scale = if s.cyclical_lr {
            Some(Schedule::Cyclical(self.cycle(1.0, ctx)))
        } else {
            self.milestones(1.0)
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
                lr_scale,
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
                lr_scale,
            }
        };
        Ok(cfg)
    }
}
