//! Dynamic importance samplers on any kernel: CSGLD / CSGHMC / pCSGLD, ICSGLD and AWSGLD.
//!
//! One step (CSGLD paper eq. 8-9; thesis Algorithm 7, eq. 6.8, 7.4-7.5), for every chain `p`:
//!
//! 1. `J_p = J(U~(x_p))`, the energy bin of the chain's current point;
//! 2. `theta <- theta + omega_k H(theta, J_1..J_P)` (the configured [`RandomField`]); the bins
//!    that feed it are those of the points produced by the previous move, as `J(x_(k+1))` in
//!    eq. 9, so the first step only reads `theta`;
//! 3. `psi_p = 1 + zeta tau / du (ln theta[J_p] - ln theta[J_p - 1])` and the kernel moves chain
//!    `p` with `StepSize { lr, tau, multiplier: psi_p }` (SGLD gives CSGLD, SGHMC gives CSGHMC,
//!    pSGLD gives pCSGLD).
//!
//! The sample `x_p` (before the move) carries the importance weight `theta[J_p]^zeta`, or with
//! [`WeightRule::Interpolated`] the exact `Psi_theta(U~(x_p))^zeta` of eq. 5
//! (times `exp(-U~ (1/T - 1/tau))` when a target temperature `T` below the sampling temperature
//! `tau` is set, AWSGLD's reweighting to `pi_T`). With `P > 1` chains all share one `theta`:
//! with the `interacting` field this is ICSGLD, and only the bins `J_p` cross between chains.
//!
//! **Which energy.** The bin `J_p`, the interpolated weight and AWSGLD's reweighting factor all
//! read one energy per chain: the stochastic `U~` the ensemble returns, or a variance-reduced
//! one the caller supplies ([`Contour::step_with_energy_offsets`]: the control-variate energy
//! `U~(B | x) + c (U~(B | x^) - U(x^))` of thesis eq. E.6 / 3.5, with the
//! [`crate::control::ControlVariate`] snapshots; or [`Contour::step_with_energies`]). The
//! reweighting is where the noise matters most: with `U~ = U + e`, `e ~ N(0, s^2(x))`,
//! `E[exp(-U~ (1/T - 1/tau)) | x] = exp(-U (1/T - 1/tau)) exp((1/T - 1/tau)^2 s^2(x) / 2)`. The
//! self-normalised weights cancel that factor only when the noise is homoscedastic (`s` the same
//! at every `x`); otherwise the weighted law is tilted by `exp(c^2 s^2(x) / 2)`, `c = 1/T -
//! 1/tau` (for `s^2(x) ∝ x^2` on a Gaussian: a wider law). [`Sampler::step`] assumes
//! homoscedastic energy noise; supply variance-reduced energies when it is not, or when it is
//! large against `1 / c` (the bins and `theta` see the noise too, the weights more steeply).
//! The report's `energies` stay the stochastic ones.

use serde::{Deserialize, Serialize};

use super::driver::Driver;
use super::{Sampler, SgmcmcConfig, StepReport, check_finite};
use crate::checkpoint::{AlgorithmState, SamplerState, mismatch};
use crate::comm::Placement;
use crate::control::{
    ContourTheta, EnergyPartition, MultiplierScheme, RandomField, SaStepSize, ThetaInit, WeightRule,
};
use crate::ensemble::Ensemble;
use crate::error::{SamplerError, check, positive};
use crate::kernel::StepSize;

/// Configuration of a [`Contour`] sampler.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContourConfig {
    /// Kernel and schedules of the underlying sampler (`tau` is the sampling temperature).
    pub base: SgmcmcConfig,
    /// Energy partition.
    pub partition: EnergyPartition,
    /// Random field driving theta.
    pub field: RandomField,
    /// Tuning parameter `zeta >= 0` (0 recovers the base kernel).
    pub zeta: f64,
    /// Stochastic-approximation steps `omega_k` (must stay below 1).
    pub omega: SaStepSize,
    /// Initial theta.
    pub init: ThetaInit,
    /// Multiplier differencing scheme.
    pub scheme: MultiplierScheme,
    /// Optional bounds on the multiplier.
    pub multiplier_clip: Option<(f64, f64)>,
    /// Target temperature `T <= tau` to reweight to (AWSGLD) by `exp(-U (1/T - 1/tau))`, with
    /// the step's energy (see the module docs on noisy energies); `None` = the sampling
    /// temperature.
    pub target_temperature: Option<f64>,
    /// How importance weights read theta.
    #[serde(default)]
    pub weights: WeightRule,
}

impl ContourConfig {
    /// A contour sampler on `base` with the given partition, field and `zeta`, and the common
    /// defaults: `omega_k = min(0.01, 1 / (k^0.6 + 100))` (thesis 6.4), uniform initial theta,
    /// the backward multiplier of eq. 8 without clipping, bin weights, no reweighting.
    pub fn new(
        base: SgmcmcConfig,
        partition: EnergyPartition,
        field: RandomField,
        zeta: f64,
    ) -> Self {
        Self {
            base,
            partition,
            field,
            zeta,
            omega: SaStepSize {
                omega_max: 0.01,
                a: 1.0,
                alpha: 0.6,
                b: 100.0,
            },
            init: if field == RandomField::Cumulative {
                ThetaInit::Increasing
            } else {
                ThetaInit::Uniform
            },
            scheme: MultiplierScheme::Backward,
            multiplier_clip: None,
            target_temperature: None,
            weights: WeightRule::Bin,
        }
    }

    /// Checks every hyper-parameter.
    pub fn validate(&self) -> Result<(), SamplerError> {
        self.base.validate()?;
        self.partition.validate()?;
        self.omega.validate()?;
        let w1 = self.omega.omega(1);
        check(
            w1 < 1.0,
            "omega_max",
            w1,
            "omega_k must stay below 1 to keep theta positive",
        )?;
        check(
            !(self.weights == WeightRule::Interpolated && self.multiplier_clip.is_some()),
            "multiplier_clip",
            self.multiplier_clip.map_or(0.0, |c| c.0),
            "interpolated weights integrate the unclipped multiplier; use bin weights with clipping",
        )?;
        if let Some(t) = self.target_temperature {
            positive("target_temperature", t)?;
        }
        Ok(())
    }
}

/// A contour sampler over the chains of an [`Ensemble`], all sharing one `theta`.
pub struct Contour<E: Ensemble> {
    config: ContourConfig,
    theta: ContourTheta,
    driver: Driver<E>,
    /// The energies of the current step that bins and weights read.
    energies: Vec<f64>,
}

impl<E: Ensemble> Contour<E> {
    /// A contour sampler; errors on invalid hyper-parameters or initial theta.
    pub fn new(config: ContourConfig, ensemble: E) -> Result<Self, SamplerError> {
        let n = ensemble.n_chains();
        Self::placed(config, ensemble, Placement::local(n))
    }

    /// A contour sampler over this rank's part `ensemble` of chains laid out by `placement`
    /// ([`crate::comm`]): every step the ranks gather the chains' energies (`P` values), and
    /// every rank updates its copy of `theta` from the same bins.
    pub fn placed(
        config: ContourConfig,
        ensemble: E,
        placement: Placement,
    ) -> Result<Self, SamplerError> {
        config.validate()?;
        let theta = ContourTheta::new(
            config.partition.m,
            config.field,
            config.zeta,
            &config.init,
            config.scheme,
            config.multiplier_clip,
        )?;
        Ok(Self {
            config,
            theta,
            driver: Driver::new(ensemble, true, placement)?,
            energies: Vec::new(),
        })
    }

    /// The shared `theta`.
    pub fn theta(&self) -> &ContourTheta {
        &self.theta
    }

    /// To first order, how far the gradient multiplier can move from its current value over
    /// the next `steps` updates: `|psi - psi_0| <= 2 zeta tau / du * sum_k omega_k * s`, with
    /// `s` the relative rate of [`ContourTheta::field_scale`] (`psi` differences two `ln
    /// theta`). Far below 1 (the power field at a large `zeta` from a spread-out `theta`),
    /// `theta` stays where it started, `psi` stays at its start (1 from a uniform `theta`), the
    /// weights stay equal, and the sampler moves as its base kernel.
    pub fn multiplier_reach(&self, steps: u64) -> f64 {
        // Step k updates theta with omega_k (k >= 1; step 0 only places the chains in bins).
        let k0 = self.driver.step;
        let omega: f64 = (k0.max(1)..k0 + steps)
            .map(|k| self.config.omega.omega(k))
            .sum();
        let tau = self.config.base.step_size(k0).0.temperature;
        2.0 * self.config.zeta * tau / self.config.partition.du * omega * self.theta.field_scale()
    }

    /// The configuration.
    pub fn config(&self) -> &ContourConfig {
        &self.config
    }

    /// One step that reads `energies` (one per chain of this rank, e.g. variance-reduced
    /// energies of the same minibatch, thesis eq. E.6) instead of the stochastic energies, for
    /// the bins, the interpolated weights and the reweighting to the target temperature.
    pub fn step_with_energies(
        &mut self,
        batch: &E::Batch,
        energies: &[f64],
    ) -> Result<&StepReport, SamplerError> {
        self.check_supplied(energies)?;
        self.advance(batch, Supplied::Energies(energies))
    }

    /// One step that reads each chain's stochastic energy plus `offsets[p]` (one per chain of
    /// this rank): with `offsets[p] =
    /// c (U~(B | x^_p) - U(x^_p))` (a [`crate::control::ControlVariate`]'s offset) the
    /// control-variate energy of thesis eq. E.6, without evaluating `U~(B | x_p)` twice. Used for
    /// the bins, the interpolated weights and the reweighting to the target temperature.
    pub fn step_with_energy_offsets(
        &mut self,
        batch: &E::Batch,
        offsets: &[f64],
    ) -> Result<&StepReport, SamplerError> {
        self.check_supplied(offsets)?;
        self.advance(batch, Supplied::Offsets(offsets))
    }

    /// Checks the length of supplied values (their finiteness is checked once gathered).
    fn check_supplied(&self, values: &[f64]) -> Result<(), SamplerError> {
        let n = self.driver.coefs.len();
        if values.len() != n {
            return Err(SamplerError::InvalidSetting(format!(
                "{} energies supplied for {n} chains",
                values.len()
            )));
        }
        Ok(())
    }

    fn advance(
        &mut self,
        batch: &E::Batch,
        supplied: Supplied<'_>,
    ) -> Result<&StepReport, SamplerError> {
        let d = &mut self.driver;
        let k = d.step;
        d.estimate(batch)?;
        let partition = &self.config.partition;
        let energies = &mut self.energies;
        energies.clear();
        match supplied {
            Supplied::None => energies.extend_from_slice(&d.report.energies),
            Supplied::Energies(e) => energies.extend(d.gather(e)?),
            Supplied::Offsets(o) => {
                let o = d.gather(o)?;
                energies.extend(d.report.energies.iter().zip(o).map(|(u, o)| u + o));
            }
        }
        check_finite(energies, k)?;
        for (b, u) in d.report.bins.iter_mut().zip(energies.iter()) {
            *b = partition.bin(*u);
        }
        if k > 0 {
            self.theta
                .update(self.config.omega.omega(k), &d.report.bins);
        }
        let (base, phase) = self.config.base.step_size(k);
        let reweight = self.config.target_temperature.map_or(0.0, |t| {
            1.0 / t - 1.0 / base.temperature.max(f64::MIN_POSITIVE)
        });
        for (p, &u) in energies.iter().enumerate() {
            let j = d.report.bins[p];
            let psi = self.theta.multiplier(j, base.temperature, partition.du);
            if psi < 0.0 {
                d.report.bouncy_moves += 1;
            }
            d.set_step(
                p,
                &self.config.base.kernel,
                StepSize {
                    multiplier: psi,
                    ..base
                },
            )?;
            d.report.log_weights[p] = match self.config.weights {
                WeightRule::Bin => self.theta.log_weight(j) - reweight * u,
                WeightRule::Interpolated => {
                    self.theta.log_flattening(j, partition.offset(j, u)) - reweight * u
                }
                WeightRule::Reference if j + 1 == partition.m => f64::NEG_INFINITY,
                WeightRule::Reference => self.theta.theta()[j].ln(),
            };
            d.report.weights[p] = d.report.log_weights[p].exp();
        }
        Ok(d.apply(&self.config.base.kernel, phase))
    }
}

/// The energies a step reads besides the ensemble's stochastic ones.
#[derive(Clone, Copy)]
enum Supplied<'a> {
    /// The stochastic energies.
    None,
    /// These instead.
    Energies(&'a [f64]),
    /// The stochastic energies plus these.
    Offsets(&'a [f64]),
}

impl<E: Ensemble> Sampler for Contour<E> {
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
        self.advance(batch, Supplied::None)
    }

    fn report(&self) -> &StepReport {
        &self.driver.report
    }

    fn state(&self) -> Result<SamplerState, SamplerError> {
        self.driver.state(AlgorithmState::Contour {
            theta: self.theta.clone(),
        })
    }

    fn restore(&mut self, state: SamplerState) -> Result<(), SamplerError> {
        if let AlgorithmState::Contour { theta } = &state.algorithm
            && theta.theta().len() != self.theta.theta().len()
        {
            return Err(mismatch(format!(
                "theta has {} bins, the sampler {}",
                theta.theta().len(),
                self.theta.theta().len()
            )));
        }
        if let AlgorithmState::Contour { theta } = self.driver.restore(state, "contour")? {
            self.theta = theta;
        }
        Ok(())
    }
}
