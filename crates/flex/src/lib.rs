//! The CPU kernels of sgmcmc's networks and the layer calls that reach them.
//!
//! [`layers`] is the face: [`layers::conv2d`], [`layers::max_pool2d`], [`layers::batch_norm`],
//! [`layers::linear`] and [`layers::tanh`] compute exactly the function of burn's modules (same
//! parameters, same running-statistics update) on any device, and on `Autodiff<Flex>` in `f32`
//! (feature `flex`) run as single tracked operations whose forward and backward passes are our
//! own kernels (the private `kernels` module: im2col and shifted-view matrix products, one-pass
//! batch statistics, in parallel on rayon's pool). [`categorical`] is the categorical
//! likelihood's one-pass kernel, [`tanh`] the networks' rational `tanh`, and [`staged`] the
//! long reductions that accelerators take in stages.
//!
//! The networks, likelihoods and priors that call these live in `sgmcmc-models`, which
//! re-exports `layers` and `staged`; without the `flex` feature this crate is the routing alone
//! (burn's own modules on every device).

#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod check;
#[cfg(feature = "flex")]
mod kernels;
pub mod layers;
pub mod staged;
pub mod tanh;

/// The categorical likelihood's value and closed-form gradient in one pass over the rows on
/// `Autodiff<Flex>` / flex in `f32` (`None` elsewhere: the caller's tensor path then).
#[cfg(feature = "flex")]
pub use kernels::categorical;
