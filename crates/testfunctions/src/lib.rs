//! The analytic targets of Wei Deng's papers, with their exact answers.
//!
//! Each target is a [`Potential`] (an exact energy `U(x)` and its gradient in plain `f64`);
//! [`by_name`] gives it with the noise of the paper that uses it, as the [`ToyTarget`] a
//! sampler's [`HostEnsemble`](sgmcmc_samplers::ensemble::HostEnsemble) moves. Beside the
//! targets stand the exact values a sampler's output is tested against: mode masses by
//! numerical integration ([`quadrature`]) in 1-D and 2-D and by Monte Carlo over exact draws
//! ([`monte_carlo`]) above ([`exact_masses`] picks), the masses of energy bins
//! ([`energy_bins`]), and the equilibrium of the contour samplers' theta ([`equilibrium`]).
//! [`benchmarks`] holds the classic global-optimisation test functions, [`data_mixture`] the
//! exact mode masses of the thesis' data posterior under replica exchange.
//!
//! The traits ([`Potential`], [`ModeMap`], [`ExactDraws`]) and the noise model stay in
//! `sgmcmc-samplers`, which runs any target; they are re-exported here.
//!
//! ```
//! use sgmcmc_testfunctions::{by_name, quadrature};
//!
//! let target = by_name("mixture-csgld")?;
//! let masses = quadrature::mode_masses(target.potential(), 1.0, 2000)?;
//! assert!((masses[1] - 0.6).abs() < 1e-6);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod benchmarks;
pub mod covariance;
pub mod data_mixture;
pub mod energy_bins;
pub mod equilibrium;
pub mod exact_masses;
pub mod gaussian;
pub mod gaussian_mixture;
pub mod grid_modes;
pub mod mixture;
pub mod monte_carlo;
pub mod nearest_mean;
pub mod quadrature;
pub mod registry;
pub mod rugged;
pub mod spec;
#[cfg(test)]
pub(crate) mod test_math;
pub mod trig_modes;

pub use benchmarks::{BENCHMARKS, BenchmarkFunction};
pub use covariance::Covariance;
pub use gaussian::Gaussian;
pub use gaussian_mixture::GaussianMixture;
pub use mixture::Mixture1d;
pub use registry::{TARGET_NAMES, by_name};
pub use rugged::Rugged;
pub use sgmcmc_samplers::density::toy::{
    ExactDraws, ModeMap, Noise, NoiseDist, NoiseModel, Potential, ToyTarget, noise,
};
pub use spec::{MixtureSpec, Sd, SpecError, TargetChoice, TargetSpec};
pub use trig_modes::{NineMode, TwentyFiveMode};
