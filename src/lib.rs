//! # sgmcmc
//!
//! Stochastic-gradient MCMC samplers for Bayesian deep learning on burn: a facade over the
//! workspace crates.
//!
//! * [`samplers`]: control logic, Langevin kernels, targets, samplers, the sampler registry.
//! * [`engine`]: the run loop, observers, checkpoints, burn-dataset batches, saved posteriors.
//! * [`models`]: networks, likelihoods, priors and posterior targets.
//! * [`data`]: dataset readers.
//! * `apps` (feature `cli`, on by default): the `sgmcmc` command line (experiments, reports,
//!   plots).

pub use burn;
#[cfg(feature = "cli")]
pub use sgmcmc_apps as apps;
pub use sgmcmc_data as data;
pub use sgmcmc_engine as engine;
pub use sgmcmc_models as models;
pub use sgmcmc_samplers as samplers;
