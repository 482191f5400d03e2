//! Isotropic Gaussian prior `precision / 2 |theta|^2` over the *trainable* float parameters.
//!
//! burn's [`ModuleVisitor::visit_float`] also visits module state that is not a parameter:
//! BatchNorm's running mean and variance are [`RunningState`](burn::module::RunningState)
//! buffers, which burn 0.22 hands to visitors as float `Param`s (that is why `num_params`
//! counts them). They get no gradient, so no sampler moves them, and a prior on them would only
//! shift the energy by a data-dependent constant. The prior therefore sums exactly the
//! parameters the gradients see:
//!
//! - on an autodiff device, the tensors that require gradients (running statistics are stored
//!   detached; frozen parameters are left out too);
//! - on a plain device (e.g. after [`Module::valid`]), the tensors that would require gradients
//!   after [`Module::train`], which burn derives from each parameter's recorded training state,
//!   so a model and its `valid()` copy have the same prior energy.
//!
//! Parameters listed in `exclude` (e.g. a learned log noise precision, which has its own prior)
//! are skipped as well.

use std::collections::HashSet;

use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::tensor::Tensor;

/// Which parameters to sum.
enum Filter {
    /// Tensors that require gradients (autodiff device).
    RequireGrad,
    /// These ids (plain device).
    Ids(HashSet<ParamId>),
}

struct SquaredNorm<'a> {
    filter: Filter,
    exclude: &'a [ParamId],
    total: Option<Tensor<1>>,
    /// A tensor without autodiff was seen (under [`Filter::RequireGrad`]): the sum is void.
    plain: bool,
}

impl ModuleVisitor for SquaredNorm<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if self.plain || self.exclude.contains(&param.id) {
            return;
        }
        let value = param.val();
        let keep = match &self.filter {
            Filter::RequireGrad if !value.is_autodiff() => {
                self.plain = true;
                return;
            }
            Filter::RequireGrad => value.is_require_grad(),
            Filter::Ids(ids) => ids.contains(&param.id),
        };
        if !keep {
            return;
        }
        let s = value.powi_scalar(2).sum();
        self.total = Some(match self.total.take() {
            Some(t) => t + s,
            None => s,
        });
    }
}

/// Ids of the float tensors that require gradients.
struct RequireGradIds(HashSet<ParamId>);

impl ModuleVisitor for RequireGradIds {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if param.val().is_require_grad() {
            self.0.insert(param.id);
        }
    }
}

fn sum<M: Module>(model: &M, filter: Filter, exclude: &[ParamId]) -> (Option<Tensor<1>>, bool) {
    let mut v = SquaredNorm {
        filter,
        exclude,
        total: None,
        plain: false,
    };
    model.visit(&mut v);
    (v.total, v.plain)
}

/// `|theta|^2` over the trainable float parameters of `model` not in `exclude`, as a `[1]`
/// tensor (differentiable on an autodiff device); `None` when there are none.
pub fn squared_norm<M: Module>(model: &M, exclude: &[ParamId]) -> Option<Tensor<1>> {
    // One pass on an autodiff device (the sampling case); a plain tensor sends it to the
    // `train()` lookup of the training state.
    let (total, plain) = sum(model, Filter::RequireGrad, exclude);
    if !plain {
        return total;
    }
    let mut ids = RequireGradIds(HashSet::new());
    model.clone().train().visit(&mut ids);
    sum(model, Filter::Ids(ids.0), exclude).0
}
