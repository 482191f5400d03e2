//! Replica exchange in `sgmcmc toy`: the `[replica]` settings, the sampler they build, and the
//! toy-side driver that refreshes the energy-variance estimate on its period.

use serde::{Deserialize, Serialize};
use sgmcmc_samplers::SamplerError;
use sgmcmc_samplers::control::{Ladder, SaStepSize, Smoothing, SwapScheme};
use sgmcmc_samplers::ensemble::Ensemble;
use sgmcmc_samplers::kernel::Kernel;
use sgmcmc_samplers::sampler::{ReplicaConfig, ReplicaExchange, Sampler, StepReport, SwapRule};

use crate::error::AppError;

/// `[replica]` settings of a toy run (replica-exchange samplers only).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReplicaSettings {
    /// Temperatures of the rungs (`resgld`; one per chain). Empty: `[temperature, 10 x
    /// temperature]` for two chains.
    pub temperatures: Vec<f64>,
    /// Learning rates of the rungs; empty: `lr` on every rung (`resgld`) or a geometric ladder
    /// from `lr` to `lr_max` (`deo-*`).
    pub lrs: Vec<f64>,
    /// Highest learning rate of a geometric ladder (`deo-*`).
    pub lr_max: f64,
    /// Correction factor `F >= 1` of the Metropolis swap (`inf`: naive swaps).
    pub correction: f64,
    /// Steps between refreshes of `sigma2_hat` (0: never).
    pub variance_period: u64,
    /// Fresh energies per refresh.
    pub variance_draws: usize,
    /// Initial `sigma2_hat`.
    pub initial_variance: f64,
    /// Fixed smoothing `gamma` of `sigma2_hat`; absent: running mean (`gamma = 1/m`).
    pub variance_gamma: Option<f64>,
    /// Steps without swaps after a swap.
    pub cooling: u64,
    /// Swap scheme (`adjacent`, `stochastic_even_odd`, `deterministic_even_odd`, `{ window =
    /// W }`, `{ optimal = { target_rate = S } }`); absent: DEO* at `target_rate` for `deo-*`,
    /// adjacent otherwise.
    pub scheme: Option<SwapScheme>,
    /// Initial correction buffer `C_0` (`deo-*`).
    pub buffer: f64,
    /// Target swap rate `S` (`deo-*`).
    pub target_rate: f64,
    /// Adapt the ladder and the buffer (`deo-*`).
    pub adapt: bool,
    /// `gamma_k = gamma_a / (k^gamma_alpha + gamma_b)` of the adaptation.
    pub gamma_a: f64,
    /// See `gamma_a`.
    pub gamma_alpha: f64,
    /// See `gamma_a`.
    pub gamma_b: f64,
}

impl Default for ReplicaSettings {
    fn default() -> Self {
        Self {
            temperatures: Vec::new(),
            lrs: Vec::new(),
            lr_max: 0.6,
            correction: 1.0,
            variance_period: 100,
            variance_draws: 10,
            initial_variance: 0.0,
            variance_gamma: None,
            cooling: 0,
            scheme: None,
            buffer: 4.0,
            target_rate: 0.4,
            adapt: true,
            gamma_a: 50.0,
            gamma_alpha: 0.8,
            gamma_b: 500.0,
        }
    }
}

/// Whether `sampler` names a replica-exchange sampler, and its kernel.
pub fn replica_kernel(sampler: &str, momentum: f64) -> Option<(Kernel, bool)> {
    let sghmc = Kernel::Sghmc {
        mu: momentum,
        noise_estimate: 0.0,
        resample_every: 0,
    };
    let psgd = Kernel::Psgld {
        alpha: 0.99,
        lambda: 1e-5,
    };
    Some(match sampler {
        "resgld" => (Kernel::Sgld, false),
        "resghmc" => (sghmc, false),
        "deo-sgd" => (Kernel::Sgld, true),
        "deo-msgd" => (sghmc, true),
        "deo-psgd" => (psgd, true),
        _ => return None,
    })
}

/// The replica configuration of a toy run with `chains` rungs.
pub fn replica_config(
    s: &ReplicaSettings,
    kernel: Kernel,
    deterministic: bool,
    chains: usize,
    lr: f64,
    temperature: f64,
) -> Result<ReplicaConfig, AppError> {
    let lrs = if !s.lrs.is_empty() {
        s.lrs.clone()
    } else if deterministic {
        Ladder::geometric(lr, s.lr_max, chains)
    } else {
        vec![lr; chains]
    };
    let cfg = if deterministic {
        ReplicaConfig {
            kernel,
            ladder: Ladder::learning_rates(lrs, temperature)?,
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
        }
    } else {
        let temperatures = if s.temperatures.is_empty() {
            vec![temperature, 10.0 * temperature]
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
        }
    };
    cfg.validate()?;
    if cfg.ladder.len() != chains {
        return Err(AppError::Usage(format!(
            "the ladder has {} rungs but chains = {chains}",
            cfg.ladder.len()
        )));
    }
    Ok(cfg)
}

/// A replica-exchange sampler that refreshes `sigma2_hat` every `period` steps from `draws`
/// fresh toy energies.
pub struct ToyReplica<E: Ensemble<Batch = ()>> {
    /// The sampler.
    pub inner: ReplicaExchange<E>,
    period: u64,
    draws: usize,
}

impl<E: Ensemble<Batch = ()>> ToyReplica<E> {
    /// Wraps `inner`.
    pub fn new(inner: ReplicaExchange<E>, s: &ReplicaSettings) -> Self {
        Self {
            inner,
            period: s.variance_period,
            draws: s.variance_draws,
        }
    }

    /// A log row: rung of each replica, learning rate of each rung, buffer `C`, cumulative
    /// accepted swaps of each pair, cumulative passed swap tests of each pair, round trips.
    pub fn trace_row(&self) -> Vec<f64> {
        let r = &self.inner;
        r.index()
            .rungs()
            .iter()
            .map(|v| *v as f64)
            .chain(r.config().ladder.lrs.iter().copied())
            .chain(std::iter::once(r.buffer()))
            .chain(r.stats().accepts.iter().map(|a| *a as f64))
            .chain(r.stats().passes.iter().map(|a| *a as f64))
            .chain(std::iter::once(r.index().total_round_trips() as f64))
            .collect()
    }
}

impl<E: Ensemble<Batch = ()>> Sampler for ToyReplica<E> {
    type Batch = ();

    fn n_chains(&self) -> usize {
        self.inner.n_chains()
    }

    fn steps_done(&self) -> u64 {
        self.inner.steps_done()
    }

    fn step(&mut self, batch: &()) -> Result<&StepReport, SamplerError> {
        let k = self.inner.steps_done();
        if self.period > 0 && k > 0 && k.is_multiple_of(self.period) && self.draws >= 2 {
            self.inner.refresh_variance(&vec![(); self.draws])?;
        }
        self.inner.step(batch)
    }
}

/// Final swap statistics of a replica-exchange run (`summary.json`).
#[derive(Clone, Debug, Serialize)]
pub struct ReplicaSummary {
    /// Swap attempts per pair.
    pub attempts: Vec<u64>,
    /// Accepted swaps per pair.
    pub accepts: Vec<u64>,
    /// Acceptance rate per pair (accepted / attempted).
    pub swap_rates: Vec<f64>,
    /// Pass rate of the swap test per pair over all tests (the deterministic rule tests every
    /// pair every step, whether the window lets it swap or not).
    pub test_pass_rates: Vec<f64>,
    /// Accepted swaps over all steps and pairs, per step.
    pub swaps_per_step: f64,
    /// Round trips of every replica (rung 0 to the top and back).
    pub round_trips: u64,
    /// Round trips per 1000 steps.
    pub round_trips_per_1000: f64,
    /// Window `W` of the scheme.
    pub window: u64,
    /// Final correction buffer `C` (deterministic rule).
    pub buffer: f64,
    /// Final learning rates of the rungs.
    pub lrs: Vec<f64>,
    /// Final `sigma2_hat` per rung (Metropolis rule).
    pub sigma2: Option<Vec<f64>>,
}

impl ReplicaSummary {
    /// The statistics of `r` after `steps` steps.
    pub fn of<E: Ensemble>(r: &ReplicaExchange<E>, steps: u64) -> Self {
        let trips = r.index().total_round_trips();
        Self {
            attempts: r.stats().attempts.clone(),
            accepts: r.stats().accepts.clone(),
            swap_rates: r.stats().rates(),
            test_pass_rates: r.stats().pass_rates(),
            swaps_per_step: r.stats().total_accepts() as f64 / steps.max(1) as f64,
            round_trips: trips,
            round_trips_per_1000: 1000.0 * trips as f64 / steps.max(1) as f64,
            window: r.window(),
            buffer: r.buffer(),
            lrs: r.config().ladder.lrs.clone(),
            sigma2: r.variance().map(|v| v.values().to_vec()),
        }
    }
}
