//! What an analytic toy target is, with injected energy/gradient noise.
//!
//! A [`Potential`] is an exact energy `U(x)` with its gradient, in plain `f64`; a [`ToyTarget`]
//! adds the noise that emulates minibatch estimates (`grad U~ = grad U + sigma_g xi`,
//! `U~ = U + sigma_e xi'`, fresh each call; ALGORITHMS.md), and is what a
//! [`HostEnsemble`](crate::ensemble::HostEnsemble) moves. Targets with several modes carry a
//! [`ModeMap`]; targets with exact draws carry [`ExactDraws`].
//!
//! The papers' targets themselves, with their exact answers (mode masses by quadrature or
//! Monte Carlo, energy-bin masses, the contour equilibrium), live in the `sgmcmc-testfunctions`
//! crate.

pub mod noise;

use std::fmt::Debug;
use std::sync::Arc;

pub use noise::{Noise, NoiseDist, NoiseModel};

use crate::error::TargetError;
use crate::rng::ChainRng;

/// An exact energy `U(x)` on `R^d` with its gradient.
pub trait Potential: Debug + Send + Sync {
    /// Dimension `d`.
    fn dim(&self) -> usize;
    /// `U(x)`.
    fn energy(&self, x: &[f64]) -> f64;
    /// Writes `grad U(x)` into `grad` and returns `U(x)`.
    fn energy_grad(&self, x: &[f64], grad: &mut [f64]) -> f64;
    /// A box `[lo, hi]` per coordinate outside which `exp(-U)` is negligible (for quadrature
    /// of 1-D/2-D targets, plots and uniform starts); `None` (the default) if the target has no
    /// natural box.
    fn support(&self) -> Option<Vec<(f64, f64)>> {
        None
    }
    /// The partition of the space into modes, if the target has named modes.
    fn modes(&self) -> Option<&dyn ModeMap> {
        None
    }
    /// Exact draws from `exp(-U / tau)` (or an importance proposal), if the target has them:
    /// Monte Carlo exact values in any dimension.
    fn exact_draws(&self) -> Option<&dyn ExactDraws> {
        None
    }
}

/// A partition of the space into the basins of named modes.
pub trait ModeMap: Debug + Send + Sync {
    /// Number of modes.
    fn n_modes(&self) -> usize;
    /// The mode whose basin holds `x`.
    fn mode_of(&self, x: &[f64]) -> usize;
    /// A short label per mode (e.g. "centre", "(-1,1)").
    fn labels(&self) -> Vec<String>;
    /// The mode centres, for plots.
    fn centres(&self) -> Vec<Vec<f64>>;
}

/// A law `pi_tau` we can draw from exactly, or through an importance proposal.
pub trait ExactDraws: Send + Sync {
    /// Writes a draw `x ~ q_tau` into `x` and returns `ln(pi_tau(x) / q_tau(x))` up to an
    /// additive constant that is the same for every draw (0 when `q_tau = pi_tau`).
    fn draw(&self, tau: f64, rng: &mut ChainRng, x: &mut [f64]) -> f64;

    /// A lower bound on the standard deviation of the narrowest feature of the law along any
    /// direction (a grid finer than this resolves it for quadrature).
    fn min_scale(&self) -> f64;
}

/// A potential plus injected noise: what the sampler sees.
#[derive(Clone, Debug)]
pub struct ToyTarget {
    name: String,
    potential: Arc<dyn Potential>,
    noise: NoiseModel,
}

impl ToyTarget {
    /// `potential` observed through `noise`.
    pub fn new(
        name: impl Into<String>,
        potential: Arc<dyn Potential>,
        noise: NoiseModel,
    ) -> Result<Self, TargetError> {
        noise.validate()?;
        Ok(Self {
            name: name.into(),
            potential,
            noise,
        })
    }

    /// The registry name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Dimension `d`.
    pub fn dim(&self) -> usize {
        self.potential.dim()
    }

    /// The exact potential.
    pub fn potential(&self) -> &dyn Potential {
        self.potential.as_ref()
    }

    /// The noise model.
    pub fn noise(&self) -> &NoiseModel {
        &self.noise
    }

    /// The same potential with another noise model.
    pub fn with_noise(&self, noise: NoiseModel) -> Result<Self, TargetError> {
        Self::new(self.name.clone(), self.potential.clone(), noise)
    }

    /// Stochastic estimate: writes `grad U~(x)` into `grad` and returns `U~(x)`.
    /// Draw order from `rng`: energy noise, then one gradient noise per coordinate.
    pub fn noisy_energy_grad(&self, x: &[f64], grad: &mut [f64], rng: &mut ChainRng) -> f64 {
        let u = self.potential.energy_grad(x, grad);
        let u = u + self.noise.energy.draw(rng);
        if self.noise.gradient.scale > 0.0 {
            for g in grad.iter_mut() {
                *g += self.noise.gradient.draw(rng);
            }
        }
        u
    }
}
