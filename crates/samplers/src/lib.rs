//! Stochastic-gradient MCMC samplers for Bayesian deep learning on burn.
//!
//! The crate has three layers (see `ARCHITECTURE.md`):
//!
//! 1. [`control`]: the adaptive scalar logic (schedules, stochastic-approximation step sizes)
//!    in plain `f64`, no tensors.
//! 2. [`kernel`]: the Langevin-type updates (SGD, momentum SGD, SGLD, SGHMC, pSGLD, SGNHT, BAOAB),
//!    written once over the [`kernel::Lane`] algebra and run either on burn tensors or on plain
//!    `f64` slices.
//! 3. [`sampler`]: the algorithms as compositions of the two, behind one [`sampler::Sampler`] trait.
//!
//! [`registry`] names every sampler and builds it from one serde description
//! ([`registry::SamplerSettings`]); `sgmcmc-engine` runs any of them over batches of data.
//!
//! Chains live in an [`ensemble`]: either burn modules on any device ([`ensemble::ModuleEnsemble`],
//! one module per network chain or one `[P, d]` tensor for `P` toy chains) or host memory
//! ([`ensemble::HostEnsemble`], the tensor-free fast path for analytic toy targets).
//! [`density`] defines what a sampler consumes: stochastic energies and gradients at full-data scale.
//!
//! Coupled samplers can spread their chains over processes: [`comm`] holds the communicator
//! they exchange energies through (in-process by default, MPI in `sgmcmc-engine`).
//!
//! Only scalars cross between the control layer and the tensors: energies go up, step sizes come
//! down. That keeps every sampler unchanged across burn devices (flex, ndarray, wgpu).

// Unit tests move data freely; the library's transfers go through `transfer` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod checkpoint;
pub mod collect;
pub mod comm;
pub mod control;
pub mod density;
pub mod diagnostics;
pub mod ensemble;
pub mod error;
pub mod kernel;
pub mod optim;
pub mod registry;
pub mod rng;
pub mod sampler;
pub mod swag;
pub mod transfer;

pub use error::{MixtureError, SamplerError, TargetError};
