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
    /// `y ~ N(f(x), 1 / lambda)` with `lambda = e^s` sampled with the weights: `s` is the
    /// model's [`Network::log_precision`](crate::Network::log_precision) (wrap the network in
    /// [`WithNoise`](crate::WithNoise)), under a `Gamma(shape, rate)` prior on `lambda`
    /// (energy `-shape s + rate e^s` in `s`, Jacobian included; see [`crate::noise`]).
    GaussianLearned {
        /// Gamma shape `a >= 0`.
        shape: f64,
        /// Gamma rate `b >= 0` (in units of the squared target).
        rate: f64,
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

impl Targets {
    /// The same targets on the inner device (off the autodiff graph).
    pub fn inner(&self) -> Self {
        match self {
            Self::Real(y) => Self::Real(y.clone().inner()),
            Self::Class(y) => Self::Class(y.clone().inner()),
        }
    }
}

impl Likelihood {
    /// Checks the parameters: a fixed precision must be finite and `> 0`, a Gamma shape and
    /// rate finite and `>= 0`.
    pub fn validate(&self) -> Result<(), TargetError> {
        let check = |name: &'static str, value: f64, ok: bool, reason: &'static str| {
            if ok {
                Ok(())
            } else {
                Err(TargetError::InvalidParameter {
                    name,
                    value: format!("{value}"),
                    reason,
                })
            }
        };
        match *self {
            Self::Gaussian { precision } => check(
                "noise precision",
                precision,
                precision.is_finite() && precision > 0.0,
                "must be finite and > 0",
            ),
            Self::GaussianLearned { shape, rate } => {
                let ok = |v: f64| v.is_finite() && v >= 0.0;
                check("noise shape", shape, ok(shape), "must be finite and >= 0")?;
                check("noise rate", rate, ok(rate), "must be finite and >= 0")
            }
            _ => Ok(()),
        }
    }

    /// `-sum_i log p(y_i | out_i)` given the model's log noise precision `s`
    /// ([`Network::log_precision`](crate::Network::log_precision)): `Some` exactly when the
    /// likelihood is [`GaussianLearned`](Self::GaussianLearned) (then
    /// [`noise::gaussian_nll`](crate::noise::gaussian_nll)); otherwise [`neg_log_lik`](Self::neg_log_lik).
    /// A mismatch (a learned likelihood without `s`, or an `s` the likelihood would ignore) is
    /// an error rather than a silently unsampled or unused parameter.
    pub fn neg_log_lik_given(
        &self,
        out: Tensor<2>,
        y: &Targets,
        log_precision: Option<Tensor<1>>,
    ) -> Result<Tensor<1>, TargetError> {
        match (self, log_precision, y) {
            (Self::GaussianLearned { .. }, Some(s), Targets::Real(y)) => {
                Ok(crate::noise::gaussian_nll(out, y, s))
            }
            (Self::GaussianLearned { .. }, Some(_), Targets::Class(_)) => Err(TargetError::Shape(
                "likelihood and targets disagree (regression vs classification)".into(),
            )),
            (Self::GaussianLearned { .. }, None, _) => Err(TargetError::InvalidParameter {
                name: "likelihood",
                value: "gaussian_learned".into(),
                reason: "the model has no learned noise precision (wrap the network in WithNoise)",
            }),
            (_, Some(_), _) => Err(TargetError::InvalidParameter {
                name: "likelihood",
                value: format!("{self:?}"),
                reason: "the model carries a learned noise precision, which only the \
                         gaussian_learned likelihood uses",
            }),
            (_, None, y) => self.neg_log_lik(out, y),
        }
    }

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
            (Self::GaussianLearned { .. }, _) => {
                return Err(TargetError::InvalidParameter {
                    name: "likelihood",
                    value: "gaussian_learned".into(),
                    reason: "needs the model's log noise precision: use neg_log_lik_given",
                });
            }
            (Self::Categorical, Targets::Class(y)) => categorical_nll(out, y),
            _ => {
                return Err(TargetError::Shape(
                    "likelihood and targets disagree (regression vs classification)".into(),
                ));
            }
        })
    }
}

/// `-sum_i log softmax(out_i)[y_i]` as a `[1]` tensor, with its gradient with respect to `out`,
/// `softmax(out) - onehot(y)`, supplied in closed form.
///
/// On an autodiff tensor the result is `nll + sum((out - out0) * (softmax(out0) - onehot(y)))`
/// with `out0 = out`, `nll` and the gradient held constant ([`categorical_value_grad`]): its
/// value is exactly `nll` (`out - out0 = 0`) and its gradient the closed form, so the backward
/// pass is one multiply; burn's `log_softmax` would record six autodiff nodes and recompute the
/// exponentials going back. On `Autodiff<Flex>` in `f32` it is one tracked operation
/// ([`sgmcmc_flex::categorical`]: one pass over the rows, the value and gradient in `f64`).
pub(crate) fn categorical_nll(out: Tensor<2>, y: &Tensor<1, Int>) -> Tensor<1> {
    #[cfg(feature = "flex")]
    if let Some(nll) = sgmcmc_flex::categorical::nll(&out, y) {
        return nll;
    }
    let out0 = out.clone().inner();
    let (nll, grad) = categorical_value_grad(out0.clone(), y, out.is_autodiff());
    match grad {
        Some(grad) => {
            ((out - Tensor::from_inner(out0)) * Tensor::from_inner(grad)).sum()
                + Tensor::from_inner(nll)
        }
        None => nll,
    }
}

/// `nll = -sum_i log softmax(out_i)[y_i]` on plain (non-autodiff) tensors and, if `with_grad`,
/// `d nll / d out = softmax(out) - onehot(y)`.
///
/// The value runs the same operations as burn's autodiff `log_softmax` (max, subtract, exp,
/// sum, log, subtract), then gather and sum, so it has the same bits as the autodiff path. On
/// burn-flex in `f32` both run [`sgmcmc_flex::categorical`]'s one pass instead (again the same
/// bits on the two paths).
pub(crate) fn categorical_value_grad(
    out: Tensor<2>,
    y: &Tensor<1, Int>,
    with_grad: bool,
) -> (Tensor<1>, Option<Tensor<2>>) {
    #[cfg(feature = "flex")]
    if let Some(v) = sgmcmc_flex::categorical::value_and_grad(&out, y, with_grad) {
        return v;
    }
    let y = y.clone().inner().unsqueeze_dim::<2>(1);
    let logp = activation::log_softmax(out, 1);
    let nll = logp.clone().gather(1, y.clone()).sum().neg();
    let grad = with_grad.then(|| {
        let minus_one = Tensor::<2>::full([y.dims()[0], 1], -1.0, &logp.device());
        logp.exp()
            .scatter(1, y, minus_one, burn::tensor::IndexingUpdateOp::Add)
    });
    (nll, grad)
}
