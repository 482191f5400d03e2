//! Isotropic Gaussian prior: `precision / 2 |theta|^2` over every float parameter.

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::Tensor;

struct SquaredNorm {
    total: Option<Tensor<1>>,
}

impl ModuleVisitor for SquaredNorm {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let s = param.val().powi_scalar(2).sum();
        self.total = Some(match self.total.take() {
            Some(t) => t + s,
            None => s,
        });
    }
}

/// `|theta|^2` of every float parameter of `model`, as a differentiable `[1]` tensor.
pub fn squared_norm<M: Module>(model: &M) -> Option<Tensor<1>> {
    let mut v = SquaredNorm { total: None };
    model.visit(&mut v);
    v.total
}
