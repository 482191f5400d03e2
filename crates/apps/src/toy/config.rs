//! The `toy` experiment's configuration: defaults < preset < `--config file.toml` < flags.

use serde::{Deserialize, Serialize};
use sgmcmc_samplers::control::{
    Cyclical, EnergyPartition, MultiplierScheme, RandomField, SaStepSize, Schedule, ThetaInit,
    WeightRule,
};
use sgmcmc_samplers::kernel::Kernel;
use sgmcmc_samplers::sampler::SgmcmcConfig;
use sgmcmc_samplers::sampler::{ContourConfig, ReplicaConfig};
use sgmcmc_samplers::target::toy::Noise;

use super::replica::{ReplicaSettings, replica_config, replica_kernel};
use crate::device::DeviceChoice;
use crate::error::AppError;

/// Every sampler name `toy` accepts, with a one-line description.
pub const SAMPLER_NAMES: &[(&str, &str)] = &[
    ("sgd", "stochastic gradient descent (no noise)"),
    ("msgd", "momentum SGD (no noise)"),
    ("sgld", "stochastic gradient Langevin dynamics"),
    ("sghmc", "stochastic gradient Hamiltonian Monte Carlo"),
    ("psgld", "preconditioned SGLD (RMSprop preconditioner)"),
    (
        "cycsgld",
        "cyclical SGLD (cosine lr cycles, noise-free exploration)",
    ),
    ("cycsghmc", "cyclical SGHMC"),
    (
        "annealed-sgld",
        "SGLD with the temperature divided by anneal_factor every epoch",
    ),
    (
        "csgld",
        "contour SGLD: power field, importance weights (all chains share theta)",
    ),
    ("csghmc", "contour SGHMC"),
    ("pcsgld", "contour pSGLD"),
    (
        "icsgld",
        "interacting contour SGLD: P chains share theta, interacting field",
    ),
    (
        "awsgld",
        "adaptively weighted SGLD: cumulative field, reweighted to target_temperature",
    ),
    (
        "resgld",
        "replica-exchange SGLD, corrected swaps ([replica] temperatures, correction F)",
    ),
    ("resghmc", "replica-exchange SGHMC"),
    (
        "deo-sgd",
        "non-reversible parallel tempering DEO*-SGD: SGD exploration, SGLD on rung 0",
    ),
    ("deo-msgd", "DEO* with momentum SGD exploration"),
    ("deo-psgd", "DEO* with preconditioned SGD exploration"),
];

/// The sampler a toy run builds.
pub enum SamplerSpec {
    /// Independent chains of one kernel.
    Plain(SgmcmcConfig),
    /// A contour sampler (weights, shared theta).
    Contour(ContourConfig),
    /// Replica exchange (samples from rung 0).
    Replica(ReplicaConfig),
}

/// Starting points of the chains.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Init {
    /// Every chain at this point.
    Point(Vec<f64>),
    /// Uniform in the target's support box (zeros if it has none), one draw per chain.
    Uniform,
}

/// Configuration of a toy run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToyConfig {
    /// Target name (`sgmcmc toy --list`).
    pub target: String,
    /// Sampler name (`sgmcmc toy --list`).
    pub sampler: String,
    /// Number of independent chains.
    pub chains: usize,
    /// Iterations per chain.
    pub iters: u64,
    /// Run seed.
    pub seed: u64,
    /// `host` (f64 fast path) or a tensor backend (chains as rows of one tensor).
    pub device: DeviceChoice,
    /// Learning rate (peak lr for cyclical samplers).
    pub lr: f64,
    /// Temperature.
    pub temperature: f64,
    /// Steps discarded before collecting samples (default: a tenth of `iters`).
    pub burn_in: Option<u64>,
    /// Keep every `thin`-th sample.
    pub thin: u64,
    /// Starting points.
    pub init: Init,
    /// Momentum of msgd / sghmc.
    pub momentum: f64,
    /// SGHMC gradient-noise variance estimate `V`.
    pub noise_estimate: f64,
    /// SGHMC momentum resampling period (0 = never).
    pub resample_every: u64,
    /// pSGLD moving-average factor.
    pub psgld_alpha: f64,
    /// pSGLD regulariser.
    pub psgld_lambda: f64,
    /// Number of cycles of cyclical samplers.
    pub cycles: u64,
    /// Cycle position from which cyclical samplers collect samples.
    pub sampling_threshold: f64,
    /// Cyclical samplers explore without noise.
    pub noise_free_exploration: bool,
    /// Temperature division factor per epoch (annealed-sgld).
    pub anneal_factor: f64,
    /// Steps per epoch (annealing).
    pub steps_per_epoch: u64,
    /// Override of the target's gradient noise.
    pub gradient_noise: Option<Noise>,
    /// Override of the target's energy noise.
    pub energy_noise: Option<Noise>,
    /// Contour samplers: tuning parameter zeta.
    pub zeta: f64,
    /// Contour samplers: number of energy bins m.
    pub bins: usize,
    /// Contour samplers: bin width du.
    pub du: f64,
    /// Contour samplers: lower energy edge (default: one below the minimum energy on the
    /// target's support, as the reference code does).
    pub u_min: Option<f64>,
    /// Contour samplers: omega_k = min(omega_max, omega_a / (k^omega_alpha + omega_b)).
    pub omega_max: f64,
    /// See `omega_max`.
    pub omega_a: f64,
    /// See `omega_max`.
    pub omega_alpha: f64,
    /// See `omega_max`.
    pub omega_b: f64,
    /// Contour samplers: initial theta (default decreasing; increasing for awsgld).
    pub theta_init: Option<ThetaInit>,
    /// Contour samplers: multiplier differencing (backward = eq. 8, forward = supplement D.1).
    pub multiplier_scheme: MultiplierScheme,
    /// AWSGLD: the target temperature T the samples are reweighted to (default: temperature).
    pub target_temperature: Option<f64>,
    /// Replica-exchange settings (`resgld`, `resghmc`, `deo-*`).
    pub replica: ReplicaSettings,
    /// Importance weights of contour samplers: `bin` (theta[J]^zeta) or `interpolated` (eq. 5).
    pub weights: WeightRule,
    /// Rows of `metrics.csv` (evenly spaced logging points).
    pub log_points: u64,
    /// At most this many samples go to `samples.csv` and the plot.
    pub max_plot_samples: usize,
}

impl Default for ToyConfig {
    fn default() -> Self {
        Self {
            target: "nine-mode".into(),
            sampler: "sgld".into(),
            chains: 1,
            iters: 100_000,
            seed: 1,
            device: DeviceChoice::Host,
            lr: 1e-3,
            temperature: 1.0,
            burn_in: None,
            thin: 1,
            init: Init::Uniform,
            momentum: 0.9,
            noise_estimate: 0.0,
            resample_every: 0,
            psgld_alpha: 0.99,
            psgld_lambda: 1e-5,
            cycles: 20,
            sampling_threshold: 0.5,
            noise_free_exploration: true,
            anneal_factor: 1.01,
            steps_per_epoch: 1000,
            gradient_noise: None,
            energy_noise: None,
            zeta: 0.75,
            bins: 100,
            du: 0.25,
            u_min: None,
            omega_max: 0.003,
            omega_a: 10.0,
            omega_alpha: 0.8,
            omega_b: 100.0,
            theta_init: None,
            multiplier_scheme: MultiplierScheme::Backward,
            target_temperature: None,
            weights: WeightRule::Bin,
            replica: ReplicaSettings::default(),
            log_points: 1000,
            max_plot_samples: 20_000,
        }
    }
}

impl ToyConfig {
    /// Steps discarded before collecting.
    pub fn burn_in(&self) -> u64 {
        self.burn_in.unwrap_or(self.iters / 10)
    }

    /// Checks what the sampler library does not check itself.
    pub fn validate(&self) -> Result<(), AppError> {
        if self.chains == 0 {
            return Err(AppError::Usage("chains must be >= 1 (got 0)".into()));
        }
        if self.iters == 0 {
            return Err(AppError::Usage("iters must be >= 1 (got 0)".into()));
        }
        if self.thin == 0 {
            return Err(AppError::Usage("thin must be >= 1 (got 0)".into()));
        }
        if self.burn_in() >= self.iters {
            return Err(AppError::Usage(format!(
                "burn_in ({}) must be smaller than iters ({})",
                self.burn_in(),
                self.iters
            )));
        }
        Ok(())
    }

    /// The sampler for `self.sampler`; `min_energy` locates the default partition.
    pub fn sampler_spec(&self, min_energy: f64) -> Result<SamplerSpec, AppError> {
        let contour = |kernel: &str, field: RandomField, init: ThetaInit| {
            let base = ToyConfig {
                sampler: kernel.into(),
                ..self.clone()
            }
            .sampler_config()?;
            let config = ContourConfig {
                base,
                // One bin width of headroom below the minimum energy (reference CSGLD code);
                // none for the cumulative field, whose increasing theta would collapse on the
                // empty bins below the minimum and give the lowest occupied bin a huge multiplier.
                partition: EnergyPartition::new(
                    self.u_min.unwrap_or(if field == RandomField::Cumulative {
                        min_energy
                    } else {
                        min_energy - 1.0
                    }),
                    self.du,
                    self.bins,
                )?,
                field,
                zeta: self.zeta,
                omega: SaStepSize {
                    omega_max: self.omega_max,
                    a: self.omega_a,
                    alpha: self.omega_alpha,
                    b: self.omega_b,
                },
                init: self.theta_init.clone().unwrap_or(init),
                scheme: self.multiplier_scheme,
                multiplier_clip: None,
                target_temperature: self.target_temperature,
                weights: self.weights,
            };
            config.validate()?;
            Ok(SamplerSpec::Contour(config))
        };
        if let Some((kernel, deterministic)) = replica_kernel(&self.sampler, self.momentum) {
            return Ok(SamplerSpec::Replica(replica_config(
                &self.replica,
                kernel,
                deterministic,
                self.chains,
                self.lr,
                self.temperature,
            )?));
        }
        match self.sampler.as_str() {
            "csgld" => contour("sgld", RandomField::Power, ThetaInit::Decreasing),
            "csghmc" => contour("sghmc", RandomField::Power, ThetaInit::Decreasing),
            "pcsgld" => contour("psgld", RandomField::Power, ThetaInit::Decreasing),
            "icsgld" => contour("sgld", RandomField::Interacting, ThetaInit::Decreasing),
            "awsgld" => contour("sgld", RandomField::Cumulative, ThetaInit::Increasing),
            _ => Ok(SamplerSpec::Plain(self.sampler_config()?)),
        }
    }

    /// The configuration of a plain (non-contour) sampler `self.sampler`.
    pub fn sampler_config(&self) -> Result<SgmcmcConfig, AppError> {
        let cyclical = || {
            Schedule::Cyclical(Cyclical {
                initial: self.lr,
                total_steps: self.iters,
                cycles: self.cycles,
                sampling_threshold: self.sampling_threshold,
                noise_free_exploration: self.noise_free_exploration,
            })
        };
        let sghmc = Kernel::Sghmc {
            mu: self.momentum,
            noise_estimate: self.noise_estimate,
            resample_every: self.resample_every,
        };
        let constant = Schedule::constant;
        let (kernel, lr, temperature) = match self.sampler.as_str() {
            "sgd" => (Kernel::Sgd, constant(self.lr), constant(0.0)),
            "msgd" => (
                Kernel::Momentum { mu: self.momentum },
                constant(self.lr),
                constant(0.0),
            ),
            "sgld" => (Kernel::Sgld, constant(self.lr), constant(self.temperature)),
            "sghmc" => (sghmc, constant(self.lr), constant(self.temperature)),
            "psgld" => (
                Kernel::Psgld {
                    alpha: self.psgld_alpha,
                    lambda: self.psgld_lambda,
                },
                constant(self.lr),
                constant(self.temperature),
            ),
            "cycsgld" => (Kernel::Sgld, cyclical(), constant(self.temperature)),
            "cycsghmc" => (sghmc, cyclical(), constant(self.temperature)),
            "annealed-sgld" => (
                Kernel::Sgld,
                constant(self.lr),
                Schedule::ExpDecay {
                    initial: self.temperature,
                    factor: self.anneal_factor,
                    steps_per_epoch: self.steps_per_epoch,
                },
            ),
            other => {
                let known: Vec<&str> = SAMPLER_NAMES.iter().map(|s| s.0).collect();
                return Err(AppError::Usage(format!(
                    "unknown sampler `{other}` (known: {})",
                    known.join(", ")
                )));
            }
        };
        let config = SgmcmcConfig {
            kernel,
            lr,
            temperature,
        };
        config.validate()?;
        Ok(config)
    }
}
