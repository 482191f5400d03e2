//! Replica exchange over any kernel: reSGLD / reSGHMC with corrected swaps (thesis Algorithm 1),
//! P-chain parallel tempering with the ADJ, SEO, DEO, DEO_W and DEO* schemes (chapter 4), and
//! DEO*-SGD / -mSGD / -pSGD with deterministic swaps and adaptive ladder and buffer
//! (Algorithm 4).
//!
//! One step `k`:
//!
//! 1. every replica estimates `U~(x)` and its gradient at its current point `x_k`;
//! 2. the scheme names the pairs of rungs that may swap; for each, in rung order, the swap test
//!    runs on the energies of the replicas now on those rungs:
//!    * Metropolis: swap if `u < exp(d (U~_r - U~_(r+1) - d sigma2_hat / F))`, `d = 1/tau_r -
//!      1/tau_(r+1)` (eq. 2.12; `F = inf` is the naive rule), or
//!    * deterministic: swap if `U~_(r+1) + C < U~_r` (eq. 4.8), then the learning rates of the
//!      interior rungs move toward equal acceptance (eq. 4.12) and `C <- C + gamma_k (mean_r
//!      A_r - S)` (eq. 4.13);
//! 3. every replica moves with its rung's learning rate and temperature, from the gradient of
//!    step 1.
//!
//! A swap exchanges rung assignments, not parameters: each parameter set keeps its position,
//! gradient, pSGLD preconditioner and, for variance-reduced energies, its snapshot. A velocity
//! (momentum SGD, SGHMC) stays with its rung instead: its stationary law `N(0, ~lr tau)`
//! is the rung's, and a replica arriving on rung 0 with a hot rung's velocity would sample rung
//! 0's target too wide until it re-equilibrated (1-D N(0, 1), tau (1, 10), lr 0.01, mu 0.9:
//! rung-0 variance 1.39 with travelling momenta). With the velocity on its rung the swap of
//! positions is a Metropolis move on the product of the rungs' `(x, v)` laws, whose velocities
//! are independent of the positions in continuous time. The discrete velocity `v_k = x_k -
//! x_(k-1)` lags half a step (`E[v | x] = lr / (1 + mu) grad U(x)`), so the velocity is shifted
//! by that lag to the position it now drives ([`Kernel::velocity_lag`]); without the shift
//! rung 0's variance was 1-7% low at swap rates of 0.4-0.7 per step, whatever the step size
//! (`tests/replica_momentum.rs`). When the two replicas of a swap live on two ranks, those
//! ranks exchange the replicas' kernel states and each applies its half of the same update
//! ([`crate::ensemble::KernelRow`]). Samples of the target come from the replica on rung 0
//! ([`StepReport::rungs`]).

use serde::{Deserialize, Serialize};

use super::driver::Driver;
use super::{Sampler, StepReport, check_finite};
use crate::checkpoint::{AlgorithmState, ReplicaState, SamplerState, mismatch};
use crate::comm::Placement;
use crate::control::swap::log_swap_rate;
use crate::control::{
    EnergyVariance, IndexProcess, Ladder, Phase, SaStepSize, Schedule, Smoothing, SwapSchedule,
    SwapScheme, SwapStats,
};
use crate::ensemble::Ensemble;
use crate::error::{SamplerError, check};
use crate::kernel::{Kernel, StepSize};
use crate::rng::ChainRng;

/// How a pair decides to swap.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SwapRule {
    /// The corrected Metropolis test (reSGLD).
    Metropolis {
        /// Correction factor `F >= 1` (`inf`: naive swaps).
        correction: f64,
        /// Initial `sigma2_hat` of every rung.
        initial_variance: f64,
        /// How refreshes of `sigma2_hat` are averaged.
        smoothing: Smoothing,
        /// Steps without swaps after an accepted swap (0: none).
        cooling: u64,
    },
    /// The deterministic test with correction buffer `C` (DEO*-SGD).
    Deterministic {
        /// Initial buffer `C_0`.
        buffer: f64,
        /// Target swap rate `S` in (0, 1).
        target_rate: f64,
        /// Step sizes `gamma_k` of the buffer and ladder adaptation (`None`: fixed).
        adapt: Option<SaStepSize>,
    },
}

/// Configuration of a [`ReplicaExchange`] sampler.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplicaConfig {
    /// The kernel every replica runs (SGLD at temperature 0 is SGD).
    pub kernel: Kernel,
    /// Temperatures and learning rates of the rungs.
    pub ladder: Ladder,
    /// Which pairs may swap when.
    pub scheme: SwapScheme,
    /// The swap test.
    pub rule: SwapRule,
    /// Refreshes of `sigma2_hat` from fresh energies during the run (Metropolis rule).
    #[serde(default)]
    pub refresh: Option<VarianceRefresh>,
    /// A factor on every rung's learning rate: at step `k` rung `r` moves with `lr_r c(k)`,
    /// `c = lr_scale.value(k)` (a schedule starting at 1). Cosine cycles give cyclical
    /// replica exchange (the cVR-reSGHMC of thesis 3.5.2): steps before a cycle's sampling
    /// threshold are exploration steps (no samples; no noise if `noise_free_exploration`);
    /// milestones give the step decay of thesis E.4.2 (x0.2 at epochs 250 and 375). The swap
    /// tests are unchanged.
    #[serde(default)]
    pub lr_scale: Option<Schedule>,
}

/// Refresh `sigma2_hat` every `period` steps from `draws` fresh estimates of every replica's
/// energy at its current point on the step's batch (before the step): for targets with injected
/// noise (the toys) those are independent draws. On a network target energies on one batch do
/// not vary, so use [`ReplicaExchange::refresh_variance`] with separate minibatches instead.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct VarianceRefresh {
    /// Steps between refreshes (`>= 1`).
    pub period: u64,
    /// Estimates per refresh (`>= 2`).
    pub draws: usize,
}

impl ReplicaConfig {
    /// Checks every hyper-parameter.
    pub fn validate(&self) -> Result<(), SamplerError> {
        let p = self.ladder.len();
        match &self.rule {
            SwapRule::Metropolis {
                correction,
                initial_variance,
                smoothing,
                ..
            } => {
                Ladder::tempered(self.ladder.temperatures.clone(), self.ladder.lrs.clone())?;
                check(
                    *correction >= 1.0,
                    "correction",
                    *correction,
                    "F must be >= 1 (inf for naive swaps)",
                )?;
                EnergyVariance::new(p, *initial_variance, *smoothing)?;
            }
            SwapRule::Deterministic {
                buffer,
                target_rate,
                adapt,
            } => {
                Ladder::learning_rates(self.ladder.lrs.clone(), self.ladder.temperatures[0])?;
                check(buffer.is_finite(), "buffer", *buffer, "must be finite")?;
                check(
                    *target_rate > 0.0 && *target_rate < 1.0,
                    "target_rate",
                    *target_rate,
                    "must lie in (0, 1)",
                )?;
                if let Some(a) = adapt {
                    a.validate()?;
                }
            }
        }
        SwapSchedule::new(self.scheme, p)?;
        if let Some(c) = &self.lr_scale {
            c.validate("lr_scale", false)?;
        }
        if let Some(r) = &self.refresh {
            check(
                r.period >= 1,
                "variance_period",
                r.period as f64,
                "must be >= 1",
            )?;
            check(
                r.draws >= 2,
                "variance_draws",
                r.draws as f64,
                "must be >= 2",
            )?;
        }
        if self.kernel.velocity_lag(1.0).is_none() {
            return Err(SamplerError::InvalidSetting(format!(
                "replica exchange does not run the {} kernel: a swap carries a rung's velocity to \
                 another position by the lag lr / (2 - xi), and its thermostat gives every element \
                 its own xi (use sghmc or msgd)",
                self.kernel.name()
            )));
        }
        for (lr, t) in self.ladder.lrs.iter().zip(&self.ladder.temperatures) {
            self.kernel.coefficients(&StepSize::new(*lr, *t))?;
        }
        Ok(())
    }
}

/// Replica exchange over the chains of an [`Ensemble`] (chain `i` is replica `i`).
pub struct ReplicaExchange<E: Ensemble> {
    config: ReplicaConfig,
    driver: Driver<E>,
    index: IndexProcess,
    schedule: SwapSchedule,
    stats: SwapStats,
    variance: Option<EnergyVariance>,
    buffer: f64,
    rng: ChainRng,
    pairs: Vec<usize>,
    /// Per-step scratch: the energies the swap tests read, and the test indicators `A_r`.
    swap_energies: Vec<f64>,
    indicator: Vec<f64>,
    accepted: Vec<bool>,
    cooling_until: u64,
}

impl<E: Ensemble> ReplicaExchange<E> {
    /// A replica-exchange sampler; the ensemble must have one chain per rung. `seed` drives the
    /// swap tests and the SEO parities.
    pub fn new(config: ReplicaConfig, ensemble: E, seed: u64) -> Result<Self, SamplerError> {
        let n = ensemble.n_chains();
        Self::placed(config, ensemble, seed, Placement::local(n))
    }

    /// A replica-exchange sampler over this rank's part `ensemble` of chains laid out by
    /// `placement` ([`crate::comm`]), one chain per rung over all ranks. Every step the ranks
    /// gather the chains' energies (`P` values; for a variance refresh, `P x draws`), and every
    /// rank runs the same swap tests and adaptation from the same seeded stream: swaps exchange
    /// rungs, never parameters. With a kernel whose velocity stays with its rung (momentum SGD,
    /// SGHMC) an accepted swap between chains of two ranks also sends each chain's
    /// kernel state to the other rank (one point-to-point exchange between those two).
    pub fn placed(
        config: ReplicaConfig,
        ensemble: E,
        seed: u64,
        placement: Placement,
    ) -> Result<Self, SamplerError> {
        config.validate()?;
        let p = config.ladder.len();
        check(
            placement.total() == p,
            "chains",
            placement.total() as f64,
            "the ensemble needs one chain per rung",
        )?;
        let (variance, buffer) = match &config.rule {
            SwapRule::Metropolis {
                initial_variance,
                smoothing,
                ..
            } => (
                Some(EnergyVariance::new(p, *initial_variance, *smoothing)?),
                0.0,
            ),
            SwapRule::Deterministic { buffer, .. } => (None, *buffer),
        };
        let mut driver = Driver::new(ensemble, false, placement)?;
        driver.report.rungs = (0..p).collect();
        Ok(Self {
            schedule: SwapSchedule::new(config.scheme, p)?,
            index: IndexProcess::new(p),
            stats: SwapStats::new(p - 1),
            variance,
            buffer,
            rng: ChainRng::new(seed, u64::MAX - 1),
            pairs: Vec::with_capacity(p),
            swap_energies: vec![0.0; p],
            indicator: vec![0.0; p - 1],
            accepted: vec![false; p - 1],
            cooling_until: 0,
            config,
            driver,
        })
    }

    /// The configuration (its ladder follows the adaptation).
    pub fn config(&self) -> &ReplicaConfig {
        &self.config
    }

    /// The index process (rung of every replica, round trips).
    pub fn index(&self) -> &IndexProcess {
        &self.index
    }

    /// Swap attempts and acceptances per pair.
    pub fn stats(&self) -> &SwapStats {
        &self.stats
    }

    /// Pairs that swapped at the last step.
    pub fn accepted(&self) -> &[bool] {
        &self.accepted
    }

    /// The correction buffer `C` (deterministic rule).
    pub fn buffer(&self) -> f64 {
        self.buffer
    }

    /// The window `W` of the scheme.
    pub fn window(&self) -> u64 {
        self.schedule.window()
    }

    /// The chains, mutably (energy draws of [`super::VarianceReduced`] between steps).
    pub(crate) fn ensemble_mut(&mut self) -> &mut E {
        &mut self.driver.ensemble
    }

    /// `sigma2_hat` per pair of adjacent rungs (Metropolis rule).
    pub fn variance(&self) -> Option<&EnergyVariance> {
        self.variance.as_ref()
    }

    /// Refreshes `sigma2_hat` from fresh stochastic energies: one estimate per batch of every
    /// replica at its current point (pass at least two independent minibatches; for toys, `()`
    /// repeated draws fresh noise). Call it between steps, e.g. every 100 steps.
    pub fn refresh_variance(&mut self, batches: &[E::Batch]) -> Result<(), SamplerError> {
        self.refresh_from_estimates(batches.iter())
    }

    /// [`Self::refresh_variance`] from `draws` estimates on one batch.
    fn refresh_on(&mut self, batch: &E::Batch, draws: usize) -> Result<(), SamplerError> {
        self.refresh_from_estimates(std::iter::repeat_n(batch, draws))
    }

    /// Refreshes `sigma2_hat` from one estimate of every replica per batch.
    fn refresh_from_estimates<'b>(
        &mut self,
        batches: impl ExactSizeIterator<Item = &'b E::Batch>,
    ) -> Result<(), SamplerError>
    where
        E::Batch: 'b,
    {
        if self.variance.is_none() {
            return Ok(());
        }
        // This rank's draws chain-major, then every rank's in one exchange.
        let (local, n) = (self.driver.coefs.len(), batches.len());
        let mut mine = vec![0.0; local * n];
        for (j, b) in batches.enumerate() {
            let e = self.driver.ensemble.estimate(b)?;
            for (c, v) in e.iter().enumerate() {
                mine[c * n + j] = *v;
            }
        }
        let mut all = vec![0.0; self.driver.n_chains() * n];
        self.driver.placement.gather_rows(&mine, n, &mut all)?;
        check_finite(&all, self.driver.step).map_err(|_| self.non_finite_draw(&all, n))?;
        let draws: Vec<Vec<f64>> = all.chunks(n).map(<[f64]>::to_vec).collect();
        self.refresh_variance_from(&draws)
    }

    /// The divergence error of the first non-finite energy among `n` draws per chain.
    fn non_finite_draw(&self, all: &[f64], n: usize) -> SamplerError {
        let at = all.iter().position(|e| !e.is_finite()).unwrap_or(0);
        SamplerError::Diverged {
            chain: at / n.max(1),
            step: self.driver.step,
            energy: all[at],
        }
    }

    /// Refreshes `sigma2_hat` from energy draws the caller made, one list per chain, the `j`-th
    /// entries of all lists on the same minibatch (e.g. of the control-variate energies the
    /// swaps use, so the correction matches their variance): pair `r` folds in half the sample
    /// variance of the differences between the replicas now on rungs `r` and `r + 1`
    /// ([`EnergyVariance::refresh`]; a refresh that is not finite is refused with
    /// [`SamplerError::NonFiniteVariance`], the estimates of the pairs before it folded in).
    pub fn refresh_variance_from(
        &mut self,
        draws_per_chain: &[Vec<f64>],
    ) -> Result<(), SamplerError> {
        if let Some(var) = self.variance.as_mut() {
            for r in 0..self.config.ladder.len() - 1 {
                let (lo, hi) = (self.index.replica_at(r), self.index.replica_at(r + 1));
                var.refresh(r, &draws_per_chain[lo], &draws_per_chain[hi])?;
            }
        }
        Ok(())
    }

    /// One step whose swap tests use each chain's stochastic energy plus `offsets[p]` (one per
    /// chain of this rank, gathered with the energies): with
    /// `offsets[p] = c (L(B | x^_p) - L^_p)` the control-variate energy of variance-reduced
    /// reSGLD (thesis eq. 3.5), without evaluating `L(B | x_p)` twice.
    pub fn step_with_energy_offsets(
        &mut self,
        batch: &E::Batch,
        offsets: &[f64],
    ) -> Result<&StepReport, SamplerError> {
        self.advance(batch, Some(offsets))
    }

    /// The learning-rate factor `c(k)`, the step's phase, and whether it adds noise.
    fn scale_at(&self, k: u64) -> (f64, Phase, bool) {
        match &self.config.lr_scale {
            None => (1.0, Phase::Sampling, true),
            Some(c) => {
                let phase = c.phase(k);
                let quiet = matches!(c, Schedule::Cyclical(cy) if cy.noise_free_exploration)
                    && phase == Phase::Exploration;
                (c.value(k), phase, !quiet)
            }
        }
    }

    fn advance(
        &mut self,
        batch: &E::Batch,
        offsets: Option<&[f64]>,
    ) -> Result<&StepReport, SamplerError> {
        let k = self.driver.step;
        let (scale, phase, noisy) = self.scale_at(k);
        if let Some(r) = self.config.refresh
            && k > 0
            && k.is_multiple_of(r.period)
            && self.variance.is_some()
        {
            self.refresh_on(batch, r.draws)?;
        }
        self.driver.estimate(batch)?;
        let offsets = match offsets {
            Some(o) => {
                let o = self.driver.gather(o)?;
                check_finite(&o, k)?;
                Some(o)
            }
            None => None,
        };
        let mut energies = std::mem::take(&mut self.swap_energies);
        energies.copy_from_slice(&self.driver.report.energies);
        for (e, d) in energies.iter_mut().zip(offsets.iter().flatten()) {
            *e += d;
        }
        // A noise-free exploration step moves every rung at temperature 0: there is no tempered
        // law to exchange between, and the reference code tries no swap there.
        let swapped = if noisy {
            self.swap(k, &energies, scale)
        } else {
            Ok(())
        };
        self.swap_energies = energies;
        swapped?;
        let ladder = &self.config.ladder;
        for chain in 0..self.driver.n_chains() {
            let r = self.index.rungs()[chain];
            let tau = if noisy { ladder.temperatures[r] } else { 0.0 };
            let s = StepSize::new(ladder.lrs[r] * scale, tau);
            self.driver.set_step(chain, &self.config.kernel, s)?;
        }
        self.driver.report.rungs.copy_from_slice(self.index.rungs());
        Ok(self.driver.apply(&self.config.kernel, phase))
    }

    /// The communication phase: swap tests on the scheduled pairs, then the adaptation;
    /// `scale` is the learning-rate factor of this step (1 without `lr_scale`). Errors only
    /// when velocities cannot be exchanged with another rank.
    fn swap(&mut self, k: u64, u: &[f64], scale: f64) -> Result<(), SamplerError> {
        self.accepted.fill(false);
        self.schedule.pairs(k, &mut self.rng, &mut self.pairs);
        let ladder = &self.config.ladder;
        match &self.config.rule {
            SwapRule::Metropolis {
                correction,
                cooling,
                ..
            } => {
                if k < self.cooling_until {
                    return Ok(());
                }
                let var = self.variance.as_ref().expect("Metropolis keeps sigma2");
                for &r in &self.pairs {
                    let (lo, hi) = (self.index.replica_at(r), self.index.replica_at(r + 1));
                    let (t_lo, t_hi) = (ladder.temperatures[r], ladder.temperatures[r + 1]);
                    let log_s = log_swap_rate(t_lo, t_hi, u[lo], u[hi], var.pair(r), *correction);
                    self.stats.attempts[r] += 1;
                    self.stats.tests[r] += 1;
                    if self.rng.uniform().ln() < log_s {
                        self.stats.accepts[r] += 1;
                        self.stats.passes[r] += 1;
                        self.accepted[r] = true;
                        exchange(
                            &mut self.index,
                            &mut self.driver,
                            &self.config.kernel,
                            (scale * ladder.lrs[r], scale * ladder.lrs[r + 1]),
                            (r, lo, hi),
                        )?;
                        self.schedule.close(r);
                        if *cooling > 0 {
                            self.cooling_until = k + 1 + cooling;
                        }
                    }
                }
            }
            SwapRule::Deterministic {
                target_rate, adapt, ..
            } => {
                let n = self.accepted.len();
                let indicator = &mut self.indicator;
                let mut next = 0;
                for (r, a) in indicator.iter_mut().enumerate() {
                    let (lo, hi) = (self.index.replica_at(r), self.index.replica_at(r + 1));
                    let swap = u[hi] + self.buffer < u[lo];
                    *a = f64::from(u8::from(swap));
                    self.stats.tests[r] += 1;
                    self.stats.passes[r] += u64::from(swap);
                    while next < self.pairs.len() && self.pairs[next] < r {
                        next += 1;
                    }
                    if next < self.pairs.len() && self.pairs[next] == r {
                        self.stats.attempts[r] += 1;
                        if swap {
                            self.stats.accepts[r] += 1;
                            self.accepted[r] = true;
                            exchange(
                                &mut self.index,
                                &mut self.driver,
                                &self.config.kernel,
                                (scale * ladder.lrs[r], scale * ladder.lrs[r + 1]),
                                (r, lo, hi),
                            )?;
                            self.schedule.close(r);
                        }
                    }
                }
                if let Some(a) = adapt {
                    let gamma = a.omega(k + 1);
                    adapt_ladder(&mut self.config.ladder.lrs, indicator, *target_rate, gamma);
                    let mean = indicator.iter().sum::<f64>() / n as f64;
                    self.buffer += gamma * (mean - target_rate);
                }
            }
        }
        Ok(())
    }
}

/// Replicas `lo` (on rung `r`, learning rate `lr_lo`) and `hi` (on rung `r + 1`, `lr_hi`)
/// trade rungs. A velocity-type kernel state stays with its rung
/// ([`Kernel::state_follows_rung`]), shifted to the position it now drives
/// ([`Kernel::velocity_lag`] at the rung's learning rate); between chains of two ranks the
/// two ranks exchange the chains' states ([`Driver::swap_kernel_state`]).
fn exchange<E: Ensemble>(
    index: &mut IndexProcess,
    driver: &mut Driver<E>,
    kernel: &Kernel,
    (lr_lo, lr_hi): (f64, f64),
    (r, lo, hi): (usize, usize, usize),
) -> Result<(), SamplerError> {
    index.swap(r);
    if kernel.state_follows_rung() {
        // `lo` moves up to rung r + 1, `hi` down to rung r.
        let lag = |lr| {
            kernel.velocity_lag(lr).ok_or_else(|| {
                SamplerError::InvalidSetting(format!(
                    "replica exchange cannot shift the {} kernel's velocity",
                    kernel.name()
                ))
            })
        };
        let lags = (lag(lr_hi)?, lag(lr_lo)?);
        driver.swap_kernel_state(lo, hi, lags)?;
    }
    Ok(())
}

/// Eq. 4.12: with gaps `v_r = lr_(r+1) - lr_r` and `H_r = A_r - S`, every interior rung moves to
/// the mean of its forward and backward predictions, `(lr_(r-1) + v_(r-1) e^(gamma H_(r-1)) +
/// lr_(r+1) - v_r e^(gamma H_r)) / 2`, all from the previous ladder; the end rungs stay fixed.
fn adapt_ladder(lrs: &mut [f64], indicator: &[f64], target_rate: f64, gamma: f64) {
    let grow = |r: usize| (gamma * (indicator[r] - target_rate)).exp();
    // In place, in rung order: `prev` keeps the old value of the rung below.
    let mut prev = lrs[0];
    for r in 1..lrs.len() - 1 {
        let (cur, next) = (lrs[r], lrs[r + 1]);
        let forward = prev + (cur - prev).max(0.0) * grow(r - 1);
        let backward = next - (next - cur).max(0.0) * grow(r);
        prev = cur;
        lrs[r] = 0.5 * (forward + backward);
    }
    // The reference code does not guard the order; keep the ladder increasing so that an
    // interior rung never passes a neighbour.
    let top = lrs.len() - 1;
    for r in 1..top {
        lrs[r] = lrs[r].max(lrs[r - 1].next_up());
    }
    for r in (1..top).rev() {
        lrs[r] = lrs[r].min(lrs[r + 1].next_down());
    }
}

impl<E: Ensemble> Sampler for ReplicaExchange<E> {
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
        self.advance(batch, None)
    }

    fn report(&self) -> &StepReport {
        &self.driver.report
    }

    fn state(&self) -> Result<SamplerState, SamplerError> {
        self.driver
            .state(AlgorithmState::Replica(Box::new(ReplicaState {
                lrs: self.config.ladder.lrs.clone(),
                index: self.index.clone(),
                schedule: self.schedule.clone(),
                stats: self.stats.clone(),
                variance: self.variance.clone(),
                buffer: self.buffer,
                rng: self.rng.clone(),
                cooling_until: self.cooling_until,
                reduction: None,
            })))
    }

    fn restore(&mut self, state: SamplerState) -> Result<(), SamplerError> {
        if let AlgorithmState::Replica(r) = &state.algorithm {
            let p = self.config.ladder.len();
            if r.lrs.len() != p || r.index.rungs().len() != p {
                return Err(mismatch(format!(
                    "{} rungs saved, the sampler has {p}",
                    r.lrs.len()
                )));
            }
        }
        if let AlgorithmState::Replica(r) = self.driver.restore(state, "replica")? {
            let r = *r;
            self.config.ladder.lrs = r.lrs;
            self.index = r.index;
            self.schedule = r.schedule;
            self.stats = r.stats;
            self.variance = r.variance;
            self.buffer = r.buffer;
            self.rng = r.rng;
            self.cooling_until = r.cooling_until;
            self.driver.report.rungs.copy_from_slice(self.index.rungs());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ladder_adaptation_moves_interior_rungs_toward_equal_acceptance() {
        // Pair 0 swaps too often (A = 1 > S), pair 1 never: rung 1 moves up (wider first gap).
        let mut lrs = vec![1.0, 2.0, 3.0];
        adapt_ladder(&mut lrs, &[1.0, 0.0], 0.4, 0.1);
        assert!(lrs[1] > 2.0 && lrs[0] == 1.0 && lrs[2] == 3.0, "{lrs:?}");
        // Balanced acceptance at the target: the midpoint stays.
        let mut lrs = vec![1.0, 2.0, 3.0];
        adapt_ladder(&mut lrs, &[0.4, 0.4], 0.4, 0.1);
        assert!((lrs[1] - 2.0).abs() < 1e-12);
    }

    /// With `replica.cyclical_lr`, every step moves the chain on rung `r` with
    /// `lr_r (cos(pi pos) + 1) / 2` (Zhang et al. eq. 1 with peak 1, 2 cycles of 10 steps),
    /// noise-free before the sampling threshold, and reports the cycle's phase; swaps are tried
    /// in the sampling phase only (every step there: the adjacent scheme, 8 of the 20 steps).
    #[test]
    fn cyclical_replica_exchange_scales_every_rung_by_the_cosine() {
        use crate::density::toy::{NoiseModel, Potential, ToyTarget};
        use crate::ensemble::HostEnsemble;
        use crate::registry::{BuildContext, SamplerSettings};
        let mut s = SamplerSettings::named("resgld");
        s.replica.lrs = vec![1e-3, 3e-3];
        s.replica.temperatures = vec![1.0, 5.0];
        s.replica.cyclical_lr = true;
        s.cyclical.cycles = 2;
        s.cyclical.sampling_threshold = 0.6;
        /// `U(x) = x^2 / 2`: the standard normal.
        #[derive(Debug)]
        struct Normal;
        impl Potential for Normal {
            fn dim(&self) -> usize {
                1
            }
            fn energy(&self, x: &[f64]) -> f64 {
                x[0] * x[0] / 2.0
            }
            fn energy_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
                grad[0] = x[0];
                self.energy(x)
            }
        }
        let normal = ToyTarget::new("normal", std::sync::Arc::new(Normal), NoiseModel::EXACT);
        let chains = HostEnsemble::new(normal.unwrap(), &[vec![0.0], vec![1.0]], 3);
        let mut sampler = s
            .spec(&BuildContext::steps(20).chains(2))
            .unwrap()
            .build(chains.unwrap(), 3)
            .unwrap();
        let attempts = |s: &crate::registry::AnySampler<HostEnsemble>| -> u64 {
            s.as_replica().unwrap().stats().attempts.iter().sum()
        };
        for k in 0..20u64 {
            let before = attempts(&sampler);
            let report = sampler.step(&()).unwrap().clone();
            let tried = attempts(&sampler) - before;
            let pos = (k % 10) as f64 / 10.0;
            let c = ((std::f64::consts::PI * pos).cos() + 1.0) / 2.0;
            let sampling = pos >= 0.6;
            assert_eq!(tried, u64::from(sampling), "step {k}: swap attempts");
            assert_eq!(
                report.phase,
                Some(if sampling {
                    Phase::Sampling
                } else {
                    Phase::Exploration
                })
            );
            for (p, step) in report.step_sizes.iter().enumerate() {
                let r = report.rungs[p];
                assert!((step.lr - [1e-3, 3e-3][r] * c).abs() < 1e-18, "step {k}");
                let tau = if sampling { [1.0, 5.0][r] } else { 0.0 };
                assert_eq!(step.temperature, tau, "step {k}");
            }
        }
    }
}
