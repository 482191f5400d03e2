//! Exact mode masses and energy-bin masses of a toy target, by the best method it allows:
//! midpoint quadrature ([`quadrature`], [`energy_bins`]) for 1-D and 2-D targets with a support
//! box whose default grid resolves them, else Monte Carlo over the target's exact draws
//! ([`monte_carlo`]) with a stated standard error.
//!
//! [`quadrature`]: super::quadrature
//! [`energy_bins`]: super::energy_bins
//! [`monte_carlo`]: super::monte_carlo

use serde::Serialize;

use crate::{Potential, energy_bins, monte_carlo, quadrature};
use sgmcmc_samplers::control::EnergyPartition;
use sgmcmc_samplers::error::TargetError;

/// Stream seed of the Monte Carlo draws: fixed, so exact values do not change with a run's seed.
pub const MONTE_CARLO_SEED: u64 = 0x00E7_AC75_EED5;

/// Default number of Monte Carlo draws: standard errors of at most `0.5 / sqrt(1e6) = 5e-4`
/// at temperature 1.
pub const DEFAULT_DRAWS: usize = 1_000_000;

/// How exact values were computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum ExactMethod {
    /// Midpoint quadrature on a `grid^d` grid over the support box.
    Quadrature {
        /// Points per coordinate.
        grid: usize,
    },
    /// Self-normalised importance sampling from the target's exact draws.
    MonteCarlo {
        /// Number of draws.
        draws: usize,
    },
}

impl ExactMethod {
    /// The method for `potential`: quadrature when it is 1-D or 2-D with a support box and the
    /// default grid's step is at most half the target's smallest scale (when it states one);
    /// else Monte Carlo with `draws` draws if it has exact draws; `None` if neither applies.
    pub fn for_potential(potential: &dyn Potential, draws: usize) -> Option<Self> {
        let grid = quadrature::default_grid(potential);
        let resolved = |support: &[(f64, f64)]| {
            let step = support
                .iter()
                .map(|(lo, hi)| (hi - lo) / grid as f64)
                .fold(0.0, f64::max);
            potential
                .exact_draws()
                .is_none_or(|e| step <= 0.5 * e.min_scale())
        };
        match potential.support() {
            Some(s) if potential.dim() <= 2 && resolved(&s) => Some(Self::Quadrature { grid }),
            _ => potential.exact_draws().map(|_| Self::MonteCarlo { draws }),
        }
    }
}

/// Exact masses of a partition of the space, with their standard errors under Monte Carlo.
#[derive(Clone, Debug, PartialEq)]
pub struct ExactMasses {
    /// Mass of each part.
    pub masses: Vec<f64>,
    /// Standard error of each mass (Monte Carlo); `None` for quadrature, whose error is far
    /// below any sampler's.
    pub se: Option<Vec<f64>>,
    /// Standard error of each running sum `masses_0 + .. + masses_j` (Monte Carlo).
    pub cdf_se: Option<Vec<f64>>,
    /// How they were computed.
    pub method: ExactMethod,
}

/// Mass of each mode of `potential` under `pi ∝ exp(-U / tau)`.
pub fn mode_masses(
    potential: &dyn Potential,
    tau: f64,
    method: ExactMethod,
) -> Result<ExactMasses, TargetError> {
    let modes = potential
        .modes()
        .ok_or_else(|| TargetError::Shape("this target has no named modes".into()))?;
    Ok(match method {
        ExactMethod::Quadrature { grid } => ExactMasses {
            masses: quadrature::mode_masses(potential, tau, grid)?,
            se: None,
            cdf_se: None,
            method,
        },
        ExactMethod::MonteCarlo { draws } => {
            let m = monte_carlo::masses(
                potential,
                tau,
                draws,
                MONTE_CARLO_SEED,
                modes.n_modes(),
                |x| modes.mode_of(x),
            )?;
            ExactMasses {
                masses: m.masses,
                se: Some(m.se),
                cdf_se: Some(m.cdf_se),
                method,
            }
        }
    })
}

/// Mass of each energy bin of `partition` under `pi ∝ exp(-U / tau)`.
pub fn energy_bin_masses(
    potential: &dyn Potential,
    tau: f64,
    method: ExactMethod,
    partition: &EnergyPartition,
) -> Result<ExactMasses, TargetError> {
    Ok(match method {
        ExactMethod::Quadrature { grid } => ExactMasses {
            masses: energy_bins::energy_bin_masses(potential, tau, grid, partition)?,
            se: None,
            cdf_se: None,
            method,
        },
        ExactMethod::MonteCarlo { draws } => {
            let m =
                monte_carlo::masses(potential, tau, draws, MONTE_CARLO_SEED, partition.m, |x| {
                    partition.bin(potential.energy(x))
                })?;
            ExactMasses {
                masses: m.masses,
                se: Some(m.se),
                cdf_se: Some(m.cdf_se),
                method,
            }
        }
    })
}
