//! # sgmcmc
//!
//! Stochastic-gradient MCMC samplers for Bayesian deep learning on burn: a facade over the
//! workspace crates.
//!
//! * [`samplers`]: control logic, Langevin kernels, targets, samplers, the sampler registry.
//! * [`engine`]: the run loop, observers, checkpoints, burn-dataset batches, saved posteriors.
//! * [`models`]: networks, likelihoods, priors and posterior targets.
//! * [`data`]: dataset readers.
//! * [`testfunctions`]: the papers' analytic targets with their exact answers.
//! * `plot` (feature `plot`, on with `cli`): PNG figures of runs (line charts with bands,
//!   scatter plots, samples over an exact density, loss surfaces).
//! * [`nn`]: burn's layers as drop-in modules on the fast path, and the categorical likelihood.
//! * `apps` (feature `cli`, on by default): the `sgmcmc` command line (experiments, reports,
//!   plots).

pub use burn;
#[cfg(feature = "cli")]
pub use sgmcmc_apps as apps;
pub use sgmcmc_data as data;
pub use sgmcmc_engine as engine;
pub use sgmcmc_models as models;
pub use sgmcmc_models::nn;
#[cfg(feature = "plot")]
pub use sgmcmc_plot as plot;
pub use sgmcmc_samplers as samplers;
pub use sgmcmc_testfunctions as testfunctions;

/// The README's programs, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The book's own programs (book/src), compiled and run as doctests. Its other chapters show
/// the README's program and the examples' code, included by mdBook from those files.
#[doc = include_str!("../book/src/tutorial/own-model.md")]
#[cfg(doctest)]
pub struct BookOwnModelDoctests;
