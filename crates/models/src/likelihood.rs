//! Likelihoods: `-sum_B log p(y | f(x))` of a minibatch as a scalar tensor.

use burn::tensor::{Int, Tensor, activation};
use serde::{Deserialize, Serialize};
use sgmcmc_samplers::TargetError;

/// Observation model.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Likelihood {
    /// `y ~ N(f(x), 1 / precision)` with fixed noise precision.
    Gaussian {
        /// Noise precision `lambda`.
        precision: f64,
    },
    /// `y ~ Categorical(softmax(f(x)))`.
    Categorical,
}

/// Regression or class targets of a minibatch.
#[derive(Clone, Debug)]
pub enum Targets {
    /// `[batch, outputs]` real targets.
    Real(Tensor<2>),
    /// `[batch]` class indices.
    Class(Tensor<1, Int>),
}

impl Likelihood {
    /// `-sum_i log p(y_i | out_i)` (a `[1]` tensor) including normalising constants.
    pub fn neg_log_lik(&self, out: Tensor<2>, y: &Targets) -> Result<Tensor<1>, TargetError> {
        Ok(match (self, y) {
            (Self::Gaussian { precision }, Targets::Real(y)) => {
                let n = out.dims()[0] * out.dims()[1];
                let c = 0.5 * n as f64 * (2.0 * std::f64::consts::PI / precision).ln();
                (out - y.clone())
                    .powi_scalar(2)
                    .sum()
                    .mul_scalar(0.5 * precision)
                    .add_scalar(c)
            }
            (Self::Categorical, Targets::Class(y)) => {
                let logp = activation::log_softmax(out, 1);
                let picked: Tensor<2> = logp.gather(1, y.clone().unsqueeze_dim(1));
                picked.sum().neg()
            }
            _ => {
                return Err(TargetError::Shape(
                    "likelihood and targets disagree (regression vs classification)".into(),
                ));
            }
        })
    }
}
