//! Networks, likelihoods and priors, and the posteriors that turn them into a sampler
//! [`Target`](sgmcmc_samplers::density::Target): [`ModelPosterior`] for any burn module with a
//! likelihood closure ([`nll_fn`]) and a [`Prior`], and [`Posterior`] for the built-in
//! networks and likelihoods.
//!
//! Scaling (ALGORITHMS.md): the posterior energy is the *sum* energy
//! `U(theta) = prior_precision / 2 |theta|^2 - sum_i log p(y_i | x_i, theta)`, estimated on a
//! minibatch of `n` out of `N` points as `U~ = prior_precision / 2 |theta|^2 - (N / n) sum_B
//! log p`. A weight decay `wd` on the *mean* loss corresponds to `prior_precision = N wd`, and a
//! mean-loss learning rate `eta` to the full-data-scale `lr = eta / N`
//! (CIFAR: `eta = 0.1, wd = 5e-4, N = 5e4` is `lr = 2e-6`, precision 25). `|theta|^2` runs over
//! the trainable parameters only ([`prior`]); a regression network may carry a sampled noise
//! precision under a Gamma prior ([`noise`], [`WithNoise`], [`Likelihood::GaussianLearned`]).

// Unit tests move data freely; the library's transfers go through `sgmcmc_samplers::transfer`
// (clippy.toml), which counts them.
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod buffer_posterior;
pub mod classifier;
pub mod cnn;
pub mod conv_gemm;
pub use sgmcmc_flex::layers;
pub mod likelihood;
pub use likelihood::Targets;
pub mod metrics;
pub mod mixture_nll;
pub mod mlp;
pub mod model_posterior;
pub mod network;
pub mod nll;
pub mod nn;
pub mod noise;
pub mod posterior;
pub mod prior;
pub mod regression_average;
pub mod resnet;
pub use sgmcmc_flex::staged;
pub mod wide_resnet;

pub use classifier::{Architecture, ImageClassifier};
pub use cnn::{Cnn, CnnConfig};
pub use likelihood::Likelihood;
pub use mlp::{Activation, Mlp, MlpConfig};
pub use model_posterior::ModelPosterior;
pub use network::Network;
pub use nll::{BatchNll, NegLogLik, nll_fn};
pub use noise::WithNoise;
pub use posterior::{Batch, Posterior, Scale};
pub use prior::{Gaussian, GroupedGaussian, Laplace, Prior};
pub use resnet::{ResNet, ResNetConfig};
pub use wide_resnet::{WideResNet, WideResNetConfig};
