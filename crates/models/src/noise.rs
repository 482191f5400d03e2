//! A learned Gaussian noise precision, sampled with the network weights.
//!
//! Regression likelihood `y_i ~ N(f(x_i), 1 / lambda)` (per output dimension) with the noise
//! precision `lambda` a parameter of the posterior, sampled in log coordinates `s = ln lambda` so
//! every sampler moves it unchanged (it is one more float parameter of the module). The prior on
//! `lambda` is `Gamma(shape a, rate b)`, density `b^a / Gamma(a) lambda^(a - 1) e^(-b lambda)`;
//! in `s` the Jacobian `d lambda / ds = lambda` adds one power of `lambda`, so the prior energy
//! is `-ln p(s) = -a s + b e^s + const`. On a minibatch `B` of `n` out of `N` points with
//! residuals `r_ij = y_ij - f_j(x_i)` over `k` outputs the energy terms in `s` are
//!
//! `U~(s) = (N / n) sum_{i in B, j} [lambda / 2 r_ij^2 - s / 2 + ln(2 pi) / 2] - a s + b e^s`.
//!
//! With the network output fixed, full batch (`n = N`) and `S = sum r^2`, the law of `lambda` is
//! conjugate: `Gamma(a + N k / 2, b + S / 2)`, and `s` is log-Gamma with
//! `E[s] = digamma(alpha) - ln beta`, `Var[s] = trigamma(alpha)` (the crate's tests check the
//! samplers against this).
//!
//! The Gamma prior follows Hernandez-Lobato & Adams (2015, probabilistic backpropagation), who
//! put `Gamma(6, 6)` on the noise precision of *standardized* targets; the CSGLD paper itself
//! fixes the precision. `a = 0, b = 0` is the improper scale-invariant prior `p(lambda) ∝
//! 1 / lambda` (flat in `s`); the posterior is still proper once some residual is non-zero.

use burn::module::{Module, ModuleDisplay, Param};
use burn::tensor::{Device, Tensor, TensorData};
use sgmcmc_samplers::TargetError;
use sgmcmc_samplers::transfer;

use crate::network::Network;

/// A network `M` with a learned noise precision: `net` computes the mean, `log_precision`
/// holds `s = ln lambda` (shape `[1]`, shared by all outputs). It implements [`Network`] by
/// delegating to `net` and reports `s` through [`Network::log_precision`]. Use it with
/// [`Likelihood::GaussianLearned`](crate::Likelihood::GaussianLearned).
#[derive(Module, Debug)]
pub struct WithNoise<M: Module> {
    /// The mean network.
    pub net: M,
    /// `s = ln lambda`, a trainable one-element parameter.
    pub log_precision: Param<Tensor<1>>,
}

impl<M: Module> WithNoise<M> {
    /// Wraps `net` with the noise precision starting at `precision` (`s = ln precision`) on
    /// `device` (the device of `net`).
    pub fn new(net: M, precision: f64, device: &Device) -> Result<Self, TargetError> {
        if !(precision.is_finite() && precision > 0.0) {
            return Err(TargetError::InvalidParameter {
                name: "noise precision",
                value: format!("{precision}"),
                reason: "must be finite and > 0",
            });
        }
        let s: Tensor<1> =
            transfer::upload(TensorData::new(vec![precision.ln() as f32], [1]), device);
        Ok(Self {
            net,
            log_precision: Param::from_tensor(s),
        })
    }

    /// The current noise precision `lambda = e^s` (a host read-back).
    pub fn precision(&self) -> f64 {
        transfer::read_f64(self.log_precision.val())
            .ok()
            .and_then(|v| v.first().copied())
            .unwrap_or(f64::NAN)
            .exp()
    }
}

impl<M: Network + ModuleDisplay> Network for WithNoise<M> {
    type Input = M::Input;

    fn forward(&self, x: Self::Input) -> Tensor<2> {
        self.net.forward(x)
    }

    fn log_precision(&self) -> Option<&Param<Tensor<1>>> {
        Some(&self.log_precision)
    }

    fn input_off_graph(&self, x: &Self::Input) -> Option<Self::Input> {
        self.net.input_off_graph(x)
    }
}

/// `sum_{i, j} [e^s / 2 (y_ij - out_ij)^2 - s / 2 + ln(2 pi) / 2]`, the Gaussian negative
/// log-likelihood of a minibatch with log precision `s` (a `[1]` tensor), as a `[1]` tensor.
pub fn gaussian_nll(out: Tensor<2>, y: &Tensor<2>, log_precision: Tensor<1>) -> Tensor<1> {
    let [rows, cols] = out.dims();
    let m = (rows * cols) as f64;
    let sq = (out - y.clone()).powi_scalar(2).sum();
    (sq * log_precision.clone().exp()).mul_scalar(0.5)
        - log_precision
            .mul_scalar(0.5 * m)
            .add_scalar(-0.5 * m * (2.0 * std::f64::consts::PI).ln())
}

/// `-a s + b e^s`: the energy of a `Gamma(shape a, rate b)` prior on `lambda = e^s` in `s`
/// coordinates (Jacobian included, constant dropped), as a `[1]` tensor.
pub fn gamma_prior_energy(log_precision: Tensor<1>, shape: f64, rate: f64) -> Tensor<1> {
    log_precision.clone().exp().mul_scalar(rate) - log_precision.mul_scalar(shape)
}
