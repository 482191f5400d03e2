//! The posterior of an [`Mlp`] with its gradient written out (backpropagation by hand): a
//! sampler target that records no autodiff graph and runs on a plain device.
//!
//! With layers `z_l = a_{l-1} W_l + b_l`, `a_l = act(z_l)` (`a_0 = x`; the last layer has no
//! activation, `f = z_L`) and the energy of [`Posterior`],
//! `U~ = (N / n) NLL(f, y) + lambda / 2 |theta|^2`:
//!
//! ```text
//! delta_L     = (N / n) dNLL/df        Gaussian: precision (f - y); categorical: softmax(f) - onehot(y)
//! dU/dW_l     = a_{l-1}^T delta_l + lambda W_l
//! dU/db_l     = sum_rows(delta_l) + lambda b_l
//! delta_{l-1} = (delta_l W_l^T) * act'(z_{l-1})    tanh: 1 - a^2; ReLU: [a > 0]
//! ```
//!
//! The energy and the gradients agree with [`Posterior`]'s autodiff ones to rounding (the
//! forward pass and the likelihood run the same operations; sums are ordered differently).
//! Why: at small sizes autodiff bookkeeping (graph nodes, the backward traversal, gradient
//! maps) costs microseconds per operation, a third of a 64-100-10 step
//! (docs/perf/small-mlp-overhead.md).

use burn::module::ParamId;
use burn::optim::GradientsParams;
use burn::tensor::{Tensor, activation, module::linear};
use sgmcmc_samplers::TargetError;
use sgmcmc_samplers::density::{Estimate, Target};
use sgmcmc_samplers::rng::ChainRng;

use super::{Mlp, tanh_slope, tanh_value};
use crate::likelihood::{Likelihood, Targets, categorical_value_grad};
use crate::posterior::{Batch, Posterior};

/// [`Posterior`] of an [`Mlp`] with closed-form gradients. Same energy, same scaling, same
/// errors; the model may live on a plain device (no autodiff) or an autodiff one. Every weight
/// and bias is sampled, except, on an autodiff device, tensors that do not require gradients.
#[derive(Clone, Debug)]
pub struct MlpPosterior {
    /// The posterior (likelihood and scale). [`Likelihood::GaussianLearned`] needs a
    /// [`WithNoise`](crate::WithNoise) model, so with a bare `Mlp` it is an error here as there.
    pub posterior: Posterior,
}

/// One layer's parameters as plain tensors, with their ids and whether they are sampled.
struct Layer {
    w: Tensor<2>,
    w_id: ParamId,
    b: Option<(Tensor<1>, ParamId)>,
    sampled: (bool, bool),
}

impl MlpPosterior {
    /// The closed-form version of `posterior`.
    pub fn new(posterior: Posterior) -> Self {
        Self { posterior }
    }

    /// The energy `U~` (a `[1]` tensor on the model's plain device) and, if `with_grads`, its
    /// gradient for every sampled parameter.
    pub fn energy_and_grads(
        &self,
        model: &Mlp,
        batch: &Batch<Tensor<2>>,
        with_grads: bool,
    ) -> Result<(Tensor<1>, Option<GradientsParams>), TargetError> {
        let post = &self.posterior;
        post.likelihood.validate()?;
        let layers = layers(model);
        let mut acts = forward(&layers, model.relu, batch.x.clone().inner())?;
        let f = acts
            .pop()
            .expect("the forward pass returns the input and the output");
        let scale = post.scale.n_data as f64 / f.dims()[0] as f64;
        let (nll, delta) = output_grad(&post.likelihood, f, &batch.y, with_grads)?;
        let precision = post.scale.prior_precision;
        let mut energy = nll.mul_scalar(scale);
        if let Some(sq) = squared_norm(&layers).filter(|_| precision > 0.0) {
            energy = energy + sq.mul_scalar(0.5 * precision);
        }
        let grads =
            delta.map(|d| backward(&layers, model.relu, &acts, d.mul_scalar(scale), precision));
        Ok((energy, grads))
    }
}

/// Activations `a_0 = x, a_1, ..., a_L = f`; errors if `x` has the wrong width.
fn forward(layers: &[Layer], relu: bool, x: Tensor<2>) -> Result<Vec<Tensor<2>>, TargetError> {
    let (d_in, expect) = (x.dims()[1], layers.first().map_or(0, |l| l.w.dims()[0]));
    if d_in != expect {
        return Err(TargetError::Shape(format!(
            "the MLP takes {expect} inputs, the batch has {d_in} columns"
        )));
    }
    let last = layers.len().saturating_sub(1);
    let mut acts = Vec::with_capacity(layers.len() + 1);
    acts.push(x);
    for (i, l) in layers.iter().enumerate() {
        let z = linear(
            acts[i].clone(),
            l.w.clone(),
            l.b.as_ref().map(|b| b.0.clone()),
        );
        acts.push(match (i == last, relu) {
            (true, _) => z,
            (false, true) => activation::relu(z),
            (false, false) => tanh_value(z),
        });
    }
    Ok(acts)
}

/// `|theta|^2` over the sampled parameters, layer by layer, weight then bias (the order of
/// `prior::squared_norm`). A weight's squares are summed column-wise first: burn-flex's
/// whole-tensor `sum` is a serial loop at about 1 ns per element, `sum_dim(0)` is not.
fn squared_norm(layers: &[Layer]) -> Option<Tensor<1>> {
    layers
        .iter()
        .flat_map(|l| {
            let w = l
                .sampled
                .0
                .then(|| (l.w.clone() * l.w.clone()).sum_dim(0).sum());
            let b = l.b.as_ref().filter(|_| l.sampled.1);
            [w, b.map(|b| (b.0.clone() * b.0.clone()).sum())]
        })
        .flatten()
        .reduce(|t, s| t + s)
}

/// Backpropagation from `delta = dU/df` through the layers (activations `acts` without `f`),
/// adding the prior's `precision * theta`.
fn backward(
    layers: &[Layer],
    relu: bool,
    acts: &[Tensor<2>],
    mut delta: Tensor<2>,
    precision: f64,
) -> GradientsParams {
    let with_prior = |g: Tensor<2>, p: Tensor<2>| {
        if precision > 0.0 {
            g + p.mul_scalar(precision)
        } else {
            g
        }
    };
    let mut grads = GradientsParams::new();
    for (i, l) in layers.iter().enumerate().rev() {
        let a = &acts[i];
        if l.sampled.0 {
            let dw = a.clone().transpose().matmul(delta.clone());
            grads.register(l.w_id, with_prior(dw, l.w.clone()));
        }
        if let Some((b, id)) = l.b.as_ref().filter(|_| l.sampled.1) {
            let db = with_prior(delta.clone().sum_dim(0), b.clone().unsqueeze_dim(0));
            grads.register(*id, db.squeeze_dim::<1>(0));
        }
        if i > 0 {
            let back = delta.matmul(l.w.clone().transpose());
            delta = if relu {
                back.mask_fill(a.clone().lower_equal_elem(0.0), 0.0)
            } else {
                back * tanh_slope(a.clone())
            };
        }
    }
    grads
}

/// Plain-tensor views of the layers' parameters.
fn layers(model: &Mlp) -> Vec<Layer> {
    model
        .layers
        .iter()
        .map(|l| {
            let w = l.weight.val();
            let b = l.bias.as_ref().map(|b| b.val());
            // On an autodiff device frozen tensors are left alone (as autodiff would).
            let sampled = |t: bool, ad: bool| !ad || t;
            let sampled = (
                sampled(w.is_require_grad(), w.is_autodiff()),
                b.as_ref()
                    .is_some_and(|b| sampled(b.is_require_grad(), b.is_autodiff())),
            );
            Layer {
                w: w.inner(),
                w_id: l.weight.id,
                b: l.bias.as_ref().zip(b).map(|(p, b)| (b.inner(), p.id)),
                sampled,
            }
        })
        .collect()
}

/// `NLL(f, y)` and, if `with_grad`, `dNLL/df`, on plain tensors.
fn output_grad(
    likelihood: &Likelihood,
    f: Tensor<2>,
    y: &Targets,
    with_grad: bool,
) -> Result<(Tensor<1>, Option<Tensor<2>>), TargetError> {
    match (likelihood, y) {
        (Likelihood::Categorical, Targets::Class(y)) => {
            let [rows, _] = f.dims();
            if y.dims()[0] != rows {
                return Err(TargetError::Shape(format!(
                    "{rows} outputs but {} targets",
                    y.dims()[0]
                )));
            }
            Ok(categorical_value_grad(f, y, with_grad))
        }
        (Likelihood::Gaussian { precision }, Targets::Real(y)) => {
            let y = y.clone().inner();
            if y.dims() != f.dims() {
                return Err(TargetError::Shape(format!(
                    "outputs {:?} and targets {:?} differ",
                    f.dims(),
                    y.dims()
                )));
            }
            let grad = with_grad.then(|| (f.clone() - y.clone()).mul_scalar(*precision));
            let nll = likelihood.neg_log_lik(f, &Targets::Real(y))?;
            Ok((nll, grad))
        }
        // Mismatches and a learned noise precision: the likelihood's own error.
        _ => Err(likelihood
            .neg_log_lik_given(f, y, None)
            .err()
            .unwrap_or_else(|| TargetError::Shape("unsupported likelihood".into()))),
    }
}

impl Target<Mlp> for MlpPosterior {
    type Batch = Batch<Tensor<2>>;

    fn chains_per_module(&self, _model: &Mlp) -> usize {
        1
    }

    fn estimate(
        &self,
        model: &Mlp,
        batch: &Self::Batch,
        _rngs: &mut [ChainRng],
    ) -> Result<Estimate, TargetError> {
        let (energy, grads) = self.energy_and_grads(model, batch, true)?;
        Ok(Estimate {
            energies: vec![f64::from(energy.into_scalar::<f32>())],
            grads: grads.unwrap_or_default(),
        })
    }

    fn batch_energies(
        &self,
        model: &Mlp,
        batch: &Self::Batch,
        _rngs: &mut [ChainRng],
    ) -> Result<Vec<f64>, TargetError> {
        let (energy, _) = self.energy_and_grads(model, batch, false)?;
        Ok(vec![f64::from(energy.into_scalar::<f32>())])
    }

    fn full_energy(&self, model: &Mlp) -> Result<Vec<f64>, TargetError> {
        <Posterior as Target<Mlp>>::full_energy(&self.posterior, model)
    }
}
