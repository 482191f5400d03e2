//! The data term of a posterior: the negative log-likelihood of a minibatch, as a trait that a
//! closure, the built-in [`Likelihood`](crate::Likelihood) and any user type implement.

use std::marker::PhantomData;

use burn::module::{Module, ParamId};
use burn::tensor::Tensor;
use sgmcmc_samplers::TargetError;

/// The negative log-likelihood of one minibatch.
pub struct BatchNll {
    /// `-sum_{i in B} log p(y_i | x_i, theta)`, a `[1]` tensor (differentiable on an autodiff
    /// device).
    pub sum: Tensor<1>,
    /// The number of examples `n` in the batch (the energy scales `sum` by `N / n`).
    pub n: usize,
    /// Energy terms of parameters the likelihood owns (e.g. the Gamma prior of a learned noise
    /// precision): added to the energy unscaled.
    pub owned_prior: Option<Tensor<1>>,
}

impl BatchNll {
    /// From per-example negative log-likelihoods `[n]`.
    pub fn per_example(nll: Tensor<1>) -> Self {
        let n = nll.dims()[0];
        Self {
            sum: nll.sum(),
            n,
            owned_prior: None,
        }
    }
}

/// `-log p(batch | theta)` for a model `M`.
pub trait NegLogLik<M>: Sync {
    /// A minibatch (shared by the threads of independent chains).
    type Batch: Sync;

    /// The batch's negative log-likelihood.
    fn nll(&self, model: &M, batch: &Self::Batch) -> Result<BatchNll, TargetError>;

    /// Parameters whose prior the likelihood supplies itself ([`BatchNll::owned_prior`]), left
    /// out of the posterior's weight prior.
    fn owned_params(&self, _model: &M) -> Vec<ParamId> {
        Vec::new()
    }

    /// The same negative log-likelihood computed off the autodiff graph, for forward-only
    /// energies (e.g. of a control-variate snapshot): on `model.valid()` with the batch's
    /// tensors on the inner device, so that no graph node is recorded; `None` (the default)
    /// when the likelihood cannot move its batch or the network computes something else off
    /// the graph (batch norm's running statistics, dropout), and the caller runs
    /// [`NegLogLik::nll`] on the autodiff device instead.
    ///
    /// Why it matters: burn's autodiff backend registers every operation on an autodiff tensor
    /// (tracked or not) in a graph that only a backward pass frees, so forward passes that are
    /// never differentiated cost graph bookkeeping and keep their nodes alive.
    fn nll_off_graph(
        &self,
        _model: &M,
        _batch: &Self::Batch,
    ) -> Option<Result<BatchNll, TargetError>> {
        None
    }
}

/// A closure `(model, batch) -> per-example NLL [n]` as a [`NegLogLik`] ([`nll_fn`]), with
/// an optional way to move its batches off the autodiff graph ([`NllFn::off_graph`]).
pub struct NllFn<F, B, G = fn(&B) -> B> {
    f: F,
    to_inner: Option<G>,
    _batch: PhantomData<fn(&B)>,
}

/// The likelihood of a closure that returns the per-example negative log-likelihood of a batch
/// as a `[n]` tensor, e.g. for regression with unit noise
/// `nll_fn(|m: &MyNet, b: &MyBatch| (m.forward(b.x.clone()) - b.y.clone()).powi_scalar(2).mul_scalar(0.5).sum_dim(1).squeeze_dim(1))`.
pub fn nll_fn<M, B, F>(f: F) -> NllFn<F, B>
where
    F: Fn(&M, &B) -> Tensor<1> + Sync,
{
    NllFn {
        f,
        to_inner: None,
        _batch: PhantomData,
    }
}

/// A copy of the likelihood (a closure likelihood is `Clone` when its captures are), e.g. to
/// build a second posterior over the same data.
impl<F: Clone, B, G: Clone> Clone for NllFn<F, B, G> {
    fn clone(&self) -> Self {
        Self {
            f: self.f.clone(),
            to_inner: self.to_inner.clone(),
            _batch: PhantomData,
        }
    }
}

impl<F, B, G> NllFn<F, B, G> {
    /// The same likelihood with forward-only energies (control-variate snapshots, full passes)
    /// computed off the autodiff graph ([`NegLogLik::nll_off_graph`]): `to_inner(batch)` is the
    /// batch with its tensors on the inner device (`Tensor::inner`), and the closure runs on
    /// `model.valid()`. Give it only for a model whose forward pass computes the same there (no
    /// batch norm, whose running statistics replace the batch's off the autodiff device, and
    /// no dropout), e.g. `.off_graph(|b: &Xy| Xy(b.0.clone().inner(), b.1.clone().inner()))`.
    pub fn off_graph<H>(self, to_inner: H) -> NllFn<F, B, H>
    where
        H: Fn(&B) -> B + Sync,
    {
        NllFn {
            f: self.f,
            to_inner: Some(to_inner),
            _batch: PhantomData,
        }
    }
}

impl<M, B: Sync, F, G> NegLogLik<M> for NllFn<F, B, G>
where
    M: Module,
    F: Fn(&M, &B) -> Tensor<1> + Sync,
    G: Fn(&B) -> B + Sync,
{
    type Batch = B;

    fn nll(&self, model: &M, batch: &B) -> Result<BatchNll, TargetError> {
        let per_example = (self.f)(model, batch);
        if per_example.dims()[0] == 0 {
            return Err(TargetError::Shape(
                "the likelihood saw an empty batch".into(),
            ));
        }
        Ok(BatchNll::per_example(per_example))
    }

    fn nll_off_graph(&self, model: &M, batch: &B) -> Option<Result<BatchNll, TargetError>> {
        let to_inner = self.to_inner.as_ref()?;
        Some(self.nll(&model.valid(), &to_inner(batch)))
    }
}
