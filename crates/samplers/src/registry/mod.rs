//! One description of every sampler: its name, kernel and family (plain, contour, replica
//! exchange), the hyper-parameters it reads ([`SamplerSettings`], serde, so TOML configs, the
//! command line and code share it), and how the two become a running sampler
//! ([`SamplerSettings::spec`], [`SamplerSpec::build`], [`AnySampler`]).
//!
//! ```
//! use sgmcmc_testfunctions::by_name;
//! use sgmcmc_samplers::ensemble::HostEnsemble;
//! use sgmcmc_samplers::registry::{BuildContext, SamplerSettings};
//! use sgmcmc_samplers::sampler::Sampler;
//!
//! let settings = SamplerSettings { lr: 1e-3, ..SamplerSettings::named("sghmc") };
//! let chains = HostEnsemble::new(by_name("nine-mode")?, &vec![vec![0.0; 2]; 4], 7)?;
//! let mut sampler = settings.spec(&BuildContext::steps(1000))?.build(chains, 7)?;
//! sampler.step(&())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Adding a sampler that composes existing pieces is one [`Entry`] in [`ENTRIES`]; adding a
//! kernel is its file and variant in [`crate::kernel`], a [`KernelKind`] here with its settings
//! field, and the entries that use it.

mod any;
mod settings;
mod spec;

pub use any::AnySampler;
pub use settings::{
    AnnealingSettings, ContourSettings, CyclicalSettings, ReplicaSettings, SamplerSettings,
};
pub use spec::{BuildContext, SamplerSpec};

use serde::{Deserialize, Serialize};

use crate::control::RandomField;
use crate::error::SamplerError;
use crate::kernel::Kernel;

/// The kernels, by name, with the settings each reads from [`SamplerSettings`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelKind {
    /// SGD (no noise; temperature 0).
    Sgd,
    /// Momentum SGD (`momentum`; no noise).
    Momentum,
    /// SGLD.
    Sgld,
    /// SGHMC (`momentum`, `noise_estimate`, `resample_every`).
    Sghmc,
    /// pSGLD (`psgld_alpha`, `psgld_lambda`).
    Psgld,
    /// SGNHT (`friction`).
    Sgnht,
    /// BAOAB Langevin splitting (`momentum`: the O step's `mu`).
    Baoab,
}

impl KernelKind {
    /// The kernel with its hyper-parameters from `s`.
    pub fn kernel(self, s: &SamplerSettings) -> Kernel {
        match self {
            Self::Sgd => Kernel::Sgd,
            Self::Momentum => Kernel::Momentum { mu: s.momentum },
            Self::Sgld => Kernel::Sgld,
            Self::Sghmc => Kernel::Sghmc {
                mu: s.momentum,
                noise_estimate: s.noise_estimate,
                resample_every: s.resample_every,
            },
            Self::Psgld => Kernel::Psgld {
                alpha: s.psgld_alpha,
                lambda: s.psgld_lambda,
            },
            Self::Sgnht => Kernel::Sgnht {
                friction: s.friction,
            },
            Self::Baoab => Kernel::Baoab { mu: s.momentum },
        }
    }

    /// Whether the kernel samples (injects noise); SGD and momentum SGD optimise and run at
    /// temperature 0.
    pub fn samples(self) -> bool {
        !matches!(self, Self::Sgd | Self::Momentum)
    }
}

/// How a sampler composes its kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// Independent chains at a constant learning rate and temperature.
    Constant,
    /// Independent chains under a cyclical cosine learning rate ([`CyclicalSettings`]).
    Cyclical,
    /// Independent chains with the temperature divided by a factor every epoch
    /// ([`AnnealingSettings`]).
    Annealed,
    /// A contour sampler with this random field ([`ContourSettings`]).
    Contour(RandomField),
    /// Replica exchange with corrected Metropolis swaps ([`ReplicaSettings`]).
    Metropolis,
    /// Replica exchange with deterministic swaps and an adaptive learning-rate ladder (DEO*).
    Deterministic,
    /// Replica exchange with corrected Metropolis swaps on control-variate energies (thesis
    /// Algorithm 2): needs fresh minibatches and a full-data pass
    /// ([`SamplerSpec::build_with_data`]).
    VarianceReduced,
}

/// One named sampler.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// Name in configs and on the command line.
    pub name: &'static str,
    /// One line for `--list`.
    pub about: &'static str,
    /// The kernel every chain runs.
    pub kernel: KernelKind,
    /// How it is composed.
    pub family: Family,
}

const fn entry(
    name: &'static str,
    about: &'static str,
    kernel: KernelKind,
    family: Family,
) -> Entry {
    Entry {
        name,
        about,
        kernel,
        family,
    }
}

use Family::{Annealed, Constant, Contour, Cyclical, Deterministic, Metropolis, VarianceReduced};
use KernelKind::{Baoab, Momentum, Psgld, Sgd, Sghmc, Sgld, Sgnht};

/// Every sampler, by name.
pub const ENTRIES: &[Entry] = &[
    entry(
        "sgd",
        "stochastic gradient descent (no noise)",
        Sgd,
        Constant,
    ),
    entry("msgd", "momentum SGD (no noise)", Momentum, Constant),
    entry(
        "sgld",
        "stochastic gradient Langevin dynamics",
        Sgld,
        Constant,
    ),
    entry(
        "sghmc",
        "stochastic gradient Hamiltonian Monte Carlo",
        Sghmc,
        Constant,
    ),
    entry(
        "psgld",
        "preconditioned SGLD (RMSprop preconditioner)",
        Psgld,
        Constant,
    ),
    entry(
        "sgnht",
        "stochastic gradient Nose-Hoover thermostat (adaptive friction)",
        Sgnht,
        Constant,
    ),
    entry(
        "baoab",
        "BAOAB Langevin splitting: exact Gaussian positions at any stable step (exact gradients)",
        Baoab,
        Constant,
    ),
    entry(
        "cycsgld",
        "cyclical SGLD (cosine lr cycles, noise-free exploration)",
        Sgld,
        Cyclical,
    ),
    entry("cycsghmc", "cyclical SGHMC", Sghmc, Cyclical),
    entry(
        "cycmsgd",
        "momentum SGD under a cyclical cosine lr (no noise)",
        Momentum,
        Cyclical,
    ),
    entry(
        "annealed-sgld",
        "SGLD with the temperature divided by anneal factor every epoch",
        Sgld,
        Annealed,
    ),
    entry(
        "csgld",
        "contour SGLD: power field, importance weights (all chains share theta)",
        Sgld,
        Contour(RandomField::Power),
    ),
    entry(
        "csghmc",
        "contour SGHMC",
        Sghmc,
        Contour(RandomField::Power),
    ),
    entry(
        "pcsgld",
        "contour pSGLD",
        Psgld,
        Contour(RandomField::Power),
    ),
    entry(
        "icsgld",
        "interacting contour SGLD: P chains share theta, interacting field",
        Sgld,
        Contour(RandomField::Interacting),
    ),
    entry(
        "icsghmc",
        "interacting contour SGHMC",
        Sghmc,
        Contour(RandomField::Interacting),
    ),
    entry(
        "awsgld",
        "adaptively weighted SGLD: cumulative field, reweighted to target_temperature",
        Sgld,
        Contour(RandomField::Cumulative),
    ),
    entry(
        "resgld",
        "replica-exchange SGLD, corrected swaps (replica temperatures, correction F)",
        Sgld,
        Metropolis,
    ),
    entry("resghmc", "replica-exchange SGHMC", Sghmc, Metropolis),
    entry(
        "vr-resgld",
        "variance-reduced reSGLD: swap energies with control variates (data posteriors)",
        Sgld,
        VarianceReduced,
    ),
    entry(
        "vr-resghmc",
        "variance-reduced reSGHMC (cVR-reSGHMC with replica.cyclical_lr)",
        Sghmc,
        VarianceReduced,
    ),
    entry(
        "deo-sgd",
        "non-reversible parallel tempering DEO*-SGD: SGD exploration, SGLD on rung 0",
        Sgld,
        Deterministic,
    ),
    entry(
        "deo-msgd",
        "DEO* with momentum SGD exploration (SGHMC on rung 0)",
        Sghmc,
        Deterministic,
    ),
    entry(
        "deo-psgd",
        "DEO* with preconditioned SGD exploration (pSGLD on rung 0)",
        Psgld,
        Deterministic,
    ),
];

impl Entry {
    /// The fewest chains the sampler runs with: 2 for replica exchange (two rungs) and for the
    /// interacting contour samplers (ICSGLD's `P`; with one chain the interacting field is
    /// CSGLD's), else 1.
    pub fn min_chains(&self) -> usize {
        match self.family {
            Metropolis | VarianceReduced | Deterministic => 2,
            Contour(RandomField::Interacting) => 2,
            Constant | Cyclical | Annealed | Contour(_) => 1,
        }
    }
}

/// The entry named `name`.
pub fn lookup(name: &str) -> Result<&'static Entry, SamplerError> {
    ENTRIES
        .iter()
        .find(|e| e.name == name)
        .ok_or_else(|| SamplerError::Unknown {
            what: "sampler",
            name: name.to_string(),
            known: names().join(", "),
        })
}

/// Every sampler name.
pub fn names() -> Vec<&'static str> {
    ENTRIES.iter().map(|e| e.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_entry_builds_its_kernel() {
        let mut seen = std::collections::HashSet::new();
        for e in ENTRIES {
            assert!(seen.insert(e.name), "duplicate {}", e.name);
            let s = SamplerSettings::named(e.name);
            e.kernel.kernel(&s).validate().unwrap();
        }
        assert!(lookup("nope").unwrap_err().to_string().contains("sgld"));
    }
}
