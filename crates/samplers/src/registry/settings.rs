//! The hyper-parameters of every sampler, in one serde struct.

use serde::{Deserialize, Serialize};

use crate::control::{MultiplierScheme, RandomField, SwapScheme, ThetaInit, WeightRule};

/// Every hyper-parameter a registry sampler reads. Each sampler reads the fields of its kernel
/// and family and ignores the rest, so one struct (one TOML table) describes any of them.
/// Learning rates are at full-data scale (the energy is a sum over the data).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SamplerSettings {
    /// Registry name ([`super::ENTRIES`]).
    pub name: String,
    /// Learning rate (the peak of a cyclical schedule; rung 0's for replica exchange).
    pub lr: f64,
    /// Sampling temperature `tau` (SGD and momentum SGD run at 0 whatever this says).
    pub temperature: f64,
    /// Momentum `mu` of momentum SGD and SGHMC (friction `1 - mu`), and BAOAB's O step.
    pub momentum: f64,
    /// SGHMC gradient-noise variance estimate `V`.
    pub noise_estimate: f64,
    /// SGHMC momentum resampling period (0 = never).
    pub resample_every: u64,
    /// pSGLD moving-average factor of the squared gradients.
    pub psgld_alpha: f64,
    /// pSGLD regulariser `lambda`.
    pub psgld_lambda: f64,
    /// SGNHT injected friction `a` in (0, 1).
    pub friction: f64,
    /// Cyclical schedules.
    pub cyclical: CyclicalSettings,
    /// Annealing.
    pub annealing: AnnealingSettings,
    /// Contour samplers.
    pub contour: ContourSettings,
    /// Replica exchange.
    pub replica: ReplicaSettings,
}

impl Default for SamplerSettings {
    fn default() -> Self {
        Self {
            name: "sgld".into(),
            lr: 1e-3,
            temperature: 1.0,
            momentum: 0.9,
            noise_estimate: 0.0,
            resample_every: 0,
            psgld_alpha: 0.99,
            psgld_lambda: 1e-5,
            friction: 0.1,
            cyclical: CyclicalSettings::default(),
            annealing: AnnealingSettings::default(),
            contour: ContourSettings::default(),
            replica: ReplicaSettings::default(),
        }
    }
}

impl SamplerSettings {
    /// The defaults with sampler `name`.
    pub fn named(name: &str) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// These settings with the step size of a *mean* loss: `eta` is the learning rate one
    /// would give an optimiser of the average loss `L = U_data / n_data` over the `n_data`
    /// training points (PyTorch's and posteriors' convention), and `lr = eta / n_data` is the
    /// same step on this library's full-data energy `U = n_data L - ln p(theta)`, on which
    /// every kernel's update is written. The temperature stays 1 (the posterior); a weight
    /// decay `wd` of the mean loss is a Gaussian prior of precision `n_data * wd`.
    ///
    /// Probe before sampling: `engine::tuning::probe_lr` finds the largest step that stays
    /// stable on the first batches.
    ///
    /// ```
    /// use sgmcmc_samplers::registry::SamplerSettings;
    ///
    /// let s = SamplerSettings::named("sghmc").mean_loss(0.05, 1000);
    /// assert_eq!(s.lr, 0.05 / 1000.0);
    /// ```
    pub fn mean_loss(mut self, eta: f64, n_data: usize) -> Self {
        self.lr = eta / n_data as f64;
        self
    }
}

/// Cyclical learning rate (Zhang et al. 2020): `cycles` cosine cycles over the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CyclicalSettings {
    /// Number of cycles over the run.
    pub cycles: u64,
    /// Position in the cycle from which samples are collected (the sampling phase).
    pub sampling_threshold: f64,
    /// Explore without noise (temperature 0 in the exploration phase).
    pub noise_free_exploration: bool,
    /// Position in the cycle from which the learning rate is held constant (1: no hold;
    /// thesis E.4.4: 0.85, "the last 15% of each cycle").
    pub hold: f64,
}

impl Default for CyclicalSettings {
    fn default() -> Self {
        Self {
            cycles: 20,
            sampling_threshold: 0.5,
            noise_free_exploration: true,
            hold: 1.0,
        }
    }
}

/// Simulated annealing of the temperature (the `annealed-*` samplers) and, with
/// `lr_hold_epochs`, of any plain or contour sampler (the papers' `sa` variants: thesis Table
/// 5.2 / 6.1 protocols, the lr held for 400 epochs then divided by 1.01 every epoch, the
/// temperature divided by 1.01 every epoch).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AnnealingSettings {
    /// The temperature is divided by this every epoch.
    pub factor: f64,
    /// Steps per epoch.
    pub steps_per_epoch: u64,
    /// When set, every sampler anneals: the temperature is divided by `factor` each epoch and
    /// the lr is held for this many epochs, then divided by `factor` each epoch.
    pub lr_hold_epochs: Option<u64>,
    /// The temperature's own division factor per epoch (default: `factor`), e.g. thesis
    /// Table 2.1's `tau / 1.02^k` beside the lr's `0.984^k`.
    pub temperature_factor: Option<f64>,
    /// A step decay of the learning rate (plain, contour and replica samplers; not with
    /// `lr_hold_epochs` or cyclical schedules): multiplied by `lr_gamma` at each of these
    /// epochs, e.g. thesis E.4.2's `[250, 375]` of 500 epochs.
    pub lr_milestones: Vec<f64>,
    /// The factor of `lr_milestones` (thesis E.4.2: 0.2).
    pub lr_gamma: f64,
}

impl Default for AnnealingSettings {
    fn default() -> Self {
        Self {
            factor: 1.01,
            steps_per_epoch: 1000,
            lr_hold_epochs: None,
            temperature_factor: None,
            lr_milestones: Vec::new(),
            lr_gamma: 0.2,
        }
    }
}

/// Contour samplers (CSGLD paper eq. 8-9; thesis Algorithm 7): the energy partition, `zeta`,
/// the stochastic-approximation steps and theta.
///
/// The partition (`u_min`, `du`, `bins`) should come from a pilot run at the target
/// temperature: `sgmcmc_engine::tuning::pilot_energies` then `tuning::partition(&energies,
/// bins)` (`examples/icsgld_regression.rs`). A partition much wider than the energies the chains
/// visit leaves them in one or two bins, where theta cannot learn the landscape: the gradient
/// multiplier stays near 1 and the sampler is its base kernel (SGLD's model average, with
/// importance weights). `sgmcmc uci` and `sgmcmc mnist` report the multiplier's range in their
/// summaries (`toy` in `metrics.csv`), and `AnySampler::multiplier_reach` bounds it before a
/// run: a range within about 1 +- 0.01 means the partition did not work.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContourSettings {
    /// Tuning parameter `zeta`.
    pub zeta: f64,
    /// Number of energy bins `m`.
    pub bins: usize,
    /// Bin width `du`.
    pub du: f64,
    /// Lower energy edge (none: the build context's minimum energy, one bin width lower for
    /// the power and interacting fields; see [`crate::registry::BuildContext`]).
    pub u_min: Option<f64>,
    /// `omega_k = min(omega_max, omega_a / (k^omega_alpha + omega_b))`.
    pub omega_max: f64,
    /// See `omega_max`.
    pub omega_a: f64,
    /// See `omega_max`.
    pub omega_alpha: f64,
    /// See `omega_max`.
    pub omega_b: f64,
    /// Initial theta (none: decreasing for the power and interacting fields, as the reference
    /// CSGLD code; increasing for the cumulative field).
    pub theta_init: Option<ThetaInit>,
    /// Multiplier differencing (backward = eq. 8, forward = supplement D.1).
    pub multiplier_scheme: MultiplierScheme,
    /// AWSGLD: the target temperature `T` the samples are reweighted to (none: `temperature`).
    pub target_temperature: Option<f64>,
    /// Importance weights: `bin` (`theta[J]^zeta`) or `interpolated` (eq. 5).
    pub weights: WeightRule,
    /// Replaces the sampler's own random field (e.g. the interacting field for `csgld`).
    pub field: Option<RandomField>,
    /// Optional bounds on the gradient multiplier.
    pub multiplier_clip: Option<(f64, f64)>,
}

impl Default for ContourSettings {
    /// The network defaults of the thesis (sec. 6.4): `omega_k = min(0.01, 1 / (k^0.6 + 100))`.
    fn default() -> Self {
        Self {
            zeta: 0.75,
            bins: 100,
            du: 0.25,
            u_min: None,
            omega_max: 0.01,
            omega_a: 1.0,
            omega_alpha: 0.6,
            omega_b: 100.0,
            theta_init: None,
            multiplier_scheme: MultiplierScheme::Backward,
            target_temperature: None,
            weights: WeightRule::Bin,
            field: None,
            multiplier_clip: None,
        }
    }
}

/// Replica exchange (`resgld`, `resghmc`, `deo-*`): one rung per chain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReplicaSettings {
    /// Temperatures of the rungs (Metropolis rule; one per chain). Empty: `[temperature, 10 x
    /// temperature]` for two chains.
    pub temperatures: Vec<f64>,
    /// Learning rates of the rungs; empty: `lr` on every rung (Metropolis) or a geometric
    /// ladder from `lr` to `lr_max` (deterministic).
    pub lrs: Vec<f64>,
    /// Highest learning rate of a geometric ladder (`deo-*`).
    pub lr_max: f64,
    /// Correction factor `F >= 1` of the Metropolis swap (`inf`: naive swaps).
    pub correction: f64,
    /// Steps between refreshes of `sigma2_hat` from fresh energies (0: never).
    pub variance_period: u64,
    /// Fresh energies per refresh.
    pub variance_draws: usize,
    /// Initial `sigma2_hat`.
    pub initial_variance: f64,
    /// Fixed smoothing `gamma` of `sigma2_hat`; none: running mean (`gamma = 1/m`).
    pub variance_gamma: Option<f64>,
    /// Steps without swaps after a swap.
    pub cooling: u64,
    /// Swap scheme (`adjacent`, `stochastic_even_odd`, `deterministic_even_odd`, `{ window =
    /// W }`, `{ optimal = { target_rate = S } }`); none: DEO* at `target_rate` for `deo-*`,
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
    /// Variance-reduced replica exchange (`vr-*`, thesis Algorithm 2): steps `m` between
    /// control-variate snapshots (0: no control variates, i.e. reSGLD / reSGHMC whose
    /// `sigma2_hat` comes from fresh minibatches, as a network posterior needs). Its
    /// `sigma2_hat` is refreshed every `variance_period` steps on average from
    /// `variance_draws` fresh minibatches.
    pub control_period: u64,
    /// `vr-*`: the control-variate coefficient `c` (-1: the textbook control variate).
    pub control_coefficient: f64,
    /// `vr-*`: adaptation step `gamma` of each chain's `c_p` toward its `-Cov / Var` (none: `c`
    /// fixed).
    pub control_adapt: Option<f64>,
    /// Cosine cycles over every rung's learning rate (cyclical replica exchange, e.g.
    /// cVR-reSGHMC), from the `cyclical` settings: `cycles`, `sampling_threshold`,
    /// `noise_free_exploration`.
    pub cyclical_lr: bool,
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
            control_period: 100,
            control_coefficient: -1.0,
            control_adapt: None,
            cyclical_lr: false,
        }
    }
}

impl SamplerSettings {
    /// Whether the sampler named here reads the setting `field` (a field of this struct:
    /// `momentum`, `contour`, ...). Kernel fields count by the kernel ([`super::KernelKind`]:
    /// `temperature` is not read by SGD and momentum SGD, which run at 0); the `cyclical`,
    /// `contour` and `replica` tables by the family (the cyclical table is also read by replica
    /// exchange with `replica.cyclical_lr`); replica exchange given `replica.lrs` (or, with
    /// Metropolis swaps, `replica.temperatures`) does not read `lr` (`temperature`); `name` and
    /// the `annealing` table (read by several families) count as read.
    ///
    /// # Errors
    ///
    /// An unknown sampler name or field.
    pub fn reads(&self, field: &str) -> Result<bool, crate::error::SamplerError> {
        use super::{Family, KernelKind as K};
        let entry = super::lookup(&self.name)?;
        let k = entry.kernel;
        let replica = matches!(
            entry.family,
            Family::Metropolis | Family::Deterministic | Family::VarianceReduced
        );
        let tempered = matches!(entry.family, Family::Metropolis | Family::VarianceReduced);
        Ok(match field {
            "name" | "annealing" => true,
            // Replica exchange with its own ladder reads the ladder instead.
            "lr" => !replica || self.replica.lrs.is_empty(),
            "temperature" => k.samples() && (!tempered || self.replica.temperatures.is_empty()),
            "momentum" => matches!(k, K::Momentum | K::Sghmc | K::Baoab),
            "noise_estimate" | "resample_every" => k == K::Sghmc,
            "psgld_alpha" | "psgld_lambda" => k == K::Psgld,
            "friction" => k == K::Sgnht,
            "cyclical" => entry.family == Family::Cyclical || (replica && self.replica.cyclical_lr),
            "contour" => matches!(entry.family, Family::Contour(_)),
            "replica" => replica,
            other => {
                return Err(crate::error::SamplerError::Unknown {
                    what: "sampler setting",
                    name: other.to_string(),
                    known: FIELDS.join(", "),
                });
            }
        })
    }

    /// The settings the sampler named here does not read ([`SamplerSettings::reads`]) among
    /// those that differ from their defaults: values set there have no effect (`momentum` on
    /// `sgld`, a `contour` table on a plain sampler).
    ///
    /// # Errors
    ///
    /// An unknown sampler name.
    pub fn unread(&self) -> Result<Vec<&'static str>, crate::error::SamplerError> {
        super::lookup(&self.name)?;
        let d = Self::default();
        let checked = [
            ("temperature", self.temperature != d.temperature),
            ("momentum", self.momentum != d.momentum),
            ("noise_estimate", self.noise_estimate != d.noise_estimate),
            ("resample_every", self.resample_every != d.resample_every),
            ("psgld_alpha", self.psgld_alpha != d.psgld_alpha),
            ("psgld_lambda", self.psgld_lambda != d.psgld_lambda),
            ("friction", self.friction != d.friction),
            ("cyclical", self.cyclical != d.cyclical),
            ("contour", self.contour != d.contour),
            ("replica", self.replica != d.replica),
        ];
        let mut out = Vec::new();
        for (field, set) in checked {
            if set && !self.reads(field)? {
                out.push(field);
            }
        }
        Ok(out)
    }
}

/// The fields of [`SamplerSettings`], in declaration order.
const FIELDS: [&str; 13] = [
    "name",
    "lr",
    "temperature",
    "momentum",
    "noise_estimate",
    "resample_every",
    "psgld_alpha",
    "psgld_lambda",
    "friction",
    "cyclical",
    "annealing",
    "contour",
    "replica",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_a_sampler_does_not_read_are_named() {
        let mut s = SamplerSettings::named("sgld");
        assert!(
            s.unread().unwrap().is_empty(),
            "defaults are never reported"
        );
        s.momentum = 0.5;
        s.contour.zeta = 3.0;
        s.friction = 0.2;
        assert_eq!(s.unread().unwrap(), ["momentum", "friction", "contour"]);
        // The same on samplers that read them.
        s.name = "csghmc".into();
        assert_eq!(s.unread().unwrap(), ["friction"]);
        // SGD runs at temperature 0 whatever it is given.
        let sgd = SamplerSettings {
            temperature: 2.0,
            ..SamplerSettings::named("sgd")
        };
        assert_eq!(sgd.unread().unwrap(), ["temperature"]);
        // The cyclical table: read by cyclical samplers and by replica exchange with a
        // cyclical lr, not by replica exchange without one.
        let mut r = SamplerSettings::named("resghmc");
        r.cyclical.cycles = 4;
        assert_eq!(r.unread().unwrap(), ["cyclical"]);
        r.replica.cyclical_lr = true;
        assert!(r.unread().unwrap().is_empty());
        // A ladder of its own replaces lr and temperature.
        assert!(r.reads("lr").unwrap() && r.reads("temperature").unwrap());
        r.replica.lrs = vec![1e-3, 2e-3];
        r.replica.temperatures = vec![1.0, 5.0];
        assert!(!r.reads("lr").unwrap() && !r.reads("temperature").unwrap());
        assert!(SamplerSettings::named("nope").unread().is_err());
        assert!(r.reads("contour").is_ok_and(|r| !r) && r.reads("colour").is_err());
    }
}
