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
//! With [`Dropout`] (see [its module](super::dropout)) a masked layer's `a_l` is
//! `act(z_l) * m_l`, `delta_{l-1}` gains the factor `m_{l-1}`, rows are repeated `S` times
//! from the first masked layer on (the layers before it run once per input row; their
//! `delta` sums the copies'), and `f` is the mean of each row's `S` copies, each copy's
//! `delta_L` being `1 / S` of the mean's.
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
use sgmcmc_samplers::density::{Energies, Estimate, Target};
use sgmcmc_samplers::rng::ChainRng;

use super::dropout::{Dropout, mean_rows, repeat_rows, sum_rows};
use super::{Mlp, tanh_slope, tanh_value};
use crate::likelihood::{Likelihood, Targets, categorical_value_grad};
use crate::posterior::{Batch, Posterior};

/// [`Posterior`] of an [`Mlp`] with closed-form gradients. Same energy, same scaling, same
/// errors; the model may live on a plain device (no autodiff) or an autodiff one. Every weight
/// and bias is sampled, except, on an autodiff device, tensors that do not require gradients.
/// With [`Dropout`], the network's output is the mean of masked passes whose masks come from
/// the chain's random stream.
#[derive(Clone, Debug)]
pub struct MlpPosterior {
    /// The posterior (likelihood and scale). [`Likelihood::GaussianLearned`] needs a
    /// [`WithNoise`](crate::WithNoise) model, so with a bare `Mlp` it is an error here as there.
    pub posterior: Posterior,
    /// Dropout on the hidden activations (none: the deterministic network).
    pub dropout: Option<Dropout>,
}

/// One layer's parameters as plain tensors, with their ids and whether they are sampled.
struct Layer {
    w: Tensor<2>,
    w_id: ParamId,
    b: Option<(Tensor<1>, ParamId)>,
    sampled: (bool, bool),
}

/// A forward pass: what the backward pass needs.
struct Pass {
    /// The layers.
    layers: Vec<Layer>,
    /// `a_0 = x, a_1, ..., a_L = f` (hidden activations masked, `f` before averaging).
    acts: Vec<Tensor<2>>,
    /// Per activation: the mask and the unmasked activation, where masked.
    masked: Vec<Option<(Tensor<2>, Tensor<2>)>>,
    /// The first activation whose rows are repeated, and how often (more than once).
    repeated: Option<(usize, usize)>,
}

impl MlpPosterior {
    /// The closed-form version of `posterior`, without dropout.
    pub fn new(posterior: Posterior) -> Self {
        Self {
            posterior,
            dropout: None,
        }
    }

    /// The same posterior with `dropout` on the hidden activations.
    pub fn with_dropout(mut self, dropout: Dropout) -> Self {
        self.dropout = Some(dropout);
        self
    }

    /// The energy `U~` (a `[1]` tensor on the model's plain device) and, if `with_grads`, its
    /// gradient for every sampled parameter. With dropout the masks are drawn from `rngs[0]`
    /// (an error if `rngs` is empty); without, `rngs` is left alone.
    pub fn energy_and_grads(
        &self,
        model: &Mlp,
        batch: &Batch<Tensor<2>>,
        with_grads: bool,
        rngs: &mut [ChainRng],
    ) -> Result<(Tensor<1>, Option<GradientsParams>), TargetError> {
        let post = &self.posterior;
        post.likelihood.validate()?;
        let (pass, f) = self.evaluate(model, batch.x.clone(), rngs)?;
        let scale = post.scale.n_data as f64 / f.dims()[0] as f64;
        let (nll, delta) = output_grad(&post.likelihood, f, &batch.y, with_grads)?;
        let precision = post.scale.prior_precision;
        let mut energy = nll.mul_scalar(scale);
        if let Some(sq) = squared_norm(&pass.layers).filter(|_| precision > 0.0) {
            energy = energy + sq.mul_scalar(0.5 * precision);
        }
        let grads = delta.map(|d| {
            let d = match pass.repeated {
                Some((_, copies)) => repeat_rows(d.mul_scalar(scale / copies as f64), copies),
                None => d.mul_scalar(scale),
            };
            backward(model.relu, &pass, d, precision)
        });
        Ok((energy, grads))
    }

    /// The network's prediction for `x` (plain device): with dropout, the mean of the masked
    /// passes, masks from `rngs[0]`; without, the deterministic forward pass.
    pub fn predict(
        &self,
        model: &Mlp,
        x: Tensor<2>,
        rngs: &mut [ChainRng],
    ) -> Result<Tensor<2>, TargetError> {
        Ok(self.evaluate(model, x, rngs)?.1)
    }

    /// The forward pass on `x` with this posterior's masks (its activations without `f`) and
    /// the output, each row's copies averaged.
    fn evaluate(
        &self,
        model: &Mlp,
        x: Tensor<2>,
        rngs: &mut [ChainRng],
    ) -> Result<(Pass, Tensor<2>), TargetError> {
        let layers = layers(model);
        let x = x.inner();
        let masks = self.masks(&layers, &x, rngs)?;
        let mut pass = forward(layers, model.relu, x, &masks)?;
        let f = pass
            .acts
            .pop()
            .expect("the forward pass returns the input and the output");
        let f = match pass.repeated {
            Some((_, copies)) => mean_rows(f, copies),
            None => f,
        };
        Ok((pass, f))
    }

    /// The dropout masks of one evaluation on `x` (one per hidden layer; none without
    /// dropout), with the number of masked passes per row.
    fn masks(
        &self,
        layers: &[Layer],
        x: &Tensor<2>,
        rngs: &mut [ChainRng],
    ) -> Result<(Vec<Option<Tensor<2>>>, usize), TargetError> {
        let Some(dropout) = &self.dropout else {
            return Ok((Vec::new(), 1));
        };
        let rng = rngs
            .first_mut()
            .ok_or_else(|| TargetError::InvalidParameter {
                name: "dropout",
                value: format!("{dropout:?}"),
                reason: "draws its masks from the chain's random stream, and none was given",
            })?;
        let widths: Vec<usize> = layers
            .iter()
            .take(layers.len().saturating_sub(1))
            .map(|l| l.w.dims()[1])
            .collect();
        let masks = dropout.masks(&widths, x.dims()[0], rng, &x.device())?;
        Ok((masks, dropout.samples))
    }
}

/// The forward pass on `x`, hidden layer `l` masked by `masks.0[l]` where given, rows
/// repeated `masks.1` times from the first masked layer on; errors if `x` has the wrong width.
fn forward(
    layers: Vec<Layer>,
    relu: bool,
    x: Tensor<2>,
    masks: &(Vec<Option<Tensor<2>>>, usize),
) -> Result<Pass, TargetError> {
    let (d_in, expect) = (x.dims()[1], layers.first().map_or(0, |l| l.w.dims()[0]));
    if d_in != expect {
        return Err(TargetError::Shape(format!(
            "the MLP takes {expect} inputs, the batch has {d_in} columns"
        )));
    }
    let last = layers.len().saturating_sub(1);
    let mut pass = Pass {
        acts: Vec::with_capacity(layers.len() + 1),
        masked: vec![None],
        repeated: None,
        layers: Vec::new(),
    };
    pass.acts.push(x);
    for (i, l) in layers.iter().enumerate() {
        let z = linear(
            pass.acts[i].clone(),
            l.w.clone(),
            l.b.as_ref().map(|b| b.0.clone()),
        );
        let mut a = match (i == last, relu) {
            (true, _) => z,
            (false, true) => activation::relu(z),
            (false, false) => tanh_value(z),
        };
        let mut masked = None;
        if let Some(Some(m)) = masks.0.get(i) {
            if pass.repeated.is_none() && masks.1 > 1 {
                a = repeat_rows(a, masks.1);
                pass.repeated = Some((i + 1, masks.1));
            }
            masked = Some((m.clone(), a.clone()));
            a = a * m.clone();
        }
        pass.acts.push(a);
        pass.masked.push(masked);
    }
    pass.layers = layers;
    Ok(pass)
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

/// Backpropagation from `delta = dU/df` (one row per row of `f`) through the layers of
/// `pass`, adding the prior's `precision * theta`.
fn backward(relu: bool, pass: &Pass, mut delta: Tensor<2>, precision: f64) -> GradientsParams {
    let with_prior = |g: Tensor<2>, p: Tensor<2>| {
        if precision > 0.0 {
            g + p.mul_scalar(precision)
        } else {
            g
        }
    };
    let mut grads = GradientsParams::new();
    for (i, l) in pass.layers.iter().enumerate().rev() {
        let a = &pass.acts[i];
        if l.sampled.0 {
            let dw = a.clone().transpose().matmul(delta.clone());
            grads.register(l.w_id, with_prior(dw, l.w.clone()));
        }
        if let Some((b, id)) = l.b.as_ref().filter(|_| l.sampled.1) {
            let db = with_prior(delta.clone().sum_dim(0), b.clone().unsqueeze_dim(0));
            grads.register(*id, db.squeeze_dim::<1>(0));
        }
        if i > 0 {
            let mut back = delta.matmul(l.w.clone().transpose());
            let mut unmasked = a;
            if let Some((m, act)) = &pass.masked[i] {
                back = back * m.clone();
                unmasked = act;
            }
            // ReLU: a masked `a` is 0 where the unit is dropped, where `back` is 0 already.
            delta = if relu {
                back.mask_fill(a.clone().lower_equal_elem(0.0), 0.0)
            } else {
                back * tanh_slope(unmasked.clone())
            };
            if let Some((_, copies)) = pass.repeated.filter(|r| r.0 == i) {
                delta = sum_rows(delta, copies);
            }
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
        rngs: &mut [ChainRng],
    ) -> Result<Estimate, TargetError> {
        let (energy, grads) = self.energy_and_grads(model, batch, true, rngs)?;
        Ok(Estimate {
            energies: energy.into(),
            grads: grads.unwrap_or_default(),
        })
    }

    fn batch_energies(
        &self,
        model: &Mlp,
        batch: &Self::Batch,
        rngs: &mut [ChainRng],
    ) -> Result<Energies, TargetError> {
        let (energy, _) = self.energy_and_grads(model, batch, false, rngs)?;
        Ok(energy.into())
    }

    fn full_energy(&self, model: &Mlp) -> Result<Vec<f64>, TargetError> {
        <Posterior as Target<Mlp>>::full_energy(&self.posterior, model)
    }
}
