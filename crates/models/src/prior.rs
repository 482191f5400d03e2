//! Priors over a module's *trainable* float parameters: the [`Prior`] trait, the isotropic
//! [`Gaussian`] (weight decay), [`Laplace`] and a per-parameter-group [`GroupedGaussian`].
//!
//! burn's [`ModuleVisitor::visit_float`] also visits module state that is not a parameter:
//! BatchNorm's running mean and variance are [`RunningState`](burn::module::RunningState)
//! buffers, which burn 0.22 hands to visitors as float `Param`s (that is why `num_params`
//! counts them). They get no gradient, so no sampler moves them, and a prior on them would only
//! shift the energy by a data-dependent constant. Priors therefore sum exactly the parameters
//! the gradients see:
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
use burn::optim::GradientsParams;
use burn::tensor::Tensor;

/// A prior `p(theta)` over a module's trainable parameters, as its energy `-ln p(theta)` (up to
/// a constant) at full-data scale.
pub trait Prior<M: Module>: Sync {
    /// The differentiable energy (a `[1]` tensor on the model's device), or `None` when it is
    /// zero (a flat prior or no parameter). Parameters in `exclude` are left out.
    fn energy(&self, model: &M, exclude: &[ParamId]) -> Option<Tensor<1>>;

    /// Whether [`Prior::add_detached`] computes this prior off the autodiff graph (the
    /// built-in priors do; a prior that does not is added to the graph instead).
    fn detaches(&self) -> bool {
        false
    }

    /// Off the autodiff graph: the energy's value as a plain `[1]` tensor (`None` when it is
    /// zero) by plain tensor ops on the parameters' values (no autodiff node, no backward
    /// step), and with `grads`, `grad_theta energy` added there. Called only when
    /// [`Prior::detaches`].
    /// The same energy and gradient as [`Prior::energy`] through `backward` (to rounding), at
    /// a fraction of the cost on small networks: two element-wise passes per parameter instead
    /// of an autodiff node, its backward step and a gradient accumulation.
    fn add_detached(
        &self,
        _model: &M,
        _exclude: &[ParamId],
        _grads: Option<&mut GradientsParams>,
    ) -> Option<Tensor<1>> {
        None
    }
}

/// The isotropic Gaussian `N(0, 1 / precision)` on every trainable parameter: energy
/// `precision / 2 |theta|^2`. A weight decay `wd` on the mean loss over `N` points is
/// `precision = N wd`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gaussian {
    /// Precision at full-data scale (`>= 0`; 0 is a flat prior).
    pub precision: f64,
}

impl Gaussian {
    /// The one term of every parameter: `precision / 2 |theta|^2` (none when flat).
    fn term(&self) -> Option<(Norm, f64)> {
        (self.precision != 0.0).then_some((Norm::Squared, 0.5 * self.precision))
    }
}

impl<M: Module> Prior<M> for Gaussian {
    fn energy(&self, model: &M, exclude: &[ParamId]) -> Option<Tensor<1>> {
        scaled_sum(model, exclude, self.term()?, Path::Graph)
    }

    fn detaches(&self) -> bool {
        true
    }

    fn add_detached(
        &self,
        model: &M,
        exclude: &[ParamId],
        grads: Option<&mut GradientsParams>,
    ) -> Option<Tensor<1>> {
        scaled_sum(model, exclude, self.term()?, Path::Detached(grads))
    }
}

/// The Laplace prior with scale `b` on every trainable parameter: energy `sum |theta| / b`
/// (the gradient is `sign(theta) / b`, 0 at 0).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Laplace {
    /// Scale `b > 0`.
    pub scale: f64,
}

impl Laplace {
    /// The one term of every parameter: `|theta| / b`.
    fn term(&self) -> (Norm, f64) {
        (Norm::Abs, 1.0 / self.scale)
    }
}

impl<M: Module> Prior<M> for Laplace {
    fn energy(&self, model: &M, exclude: &[ParamId]) -> Option<Tensor<1>> {
        scaled_sum(model, exclude, self.term(), Path::Graph)
    }

    fn detaches(&self) -> bool {
        true
    }

    fn add_detached(
        &self,
        model: &M,
        exclude: &[ParamId],
        grads: Option<&mut GradientsParams>,
    ) -> Option<Tensor<1>> {
        scaled_sum(model, exclude, self.term(), Path::Detached(grads))
    }
}

/// Where a prior's sum is computed.
enum Path<'a> {
    /// On the autodiff graph (differentiable).
    Graph,
    /// On the parameters' plain values, the gradient added to the given gradients.
    Detached(Option<&'a mut GradientsParams>),
}

/// `scale * sum_p norm(theta_p)` over the trainable parameters not in `exclude`, along `path`.
fn scaled_sum<M: Module>(
    model: &M,
    exclude: &[ParamId],
    (norm, scale): (Norm, f64),
    path: Path<'_>,
) -> Option<Tensor<1>> {
    let detached = match path {
        Path::Graph => None,
        Path::Detached(grads) => Some(Detached { grads, scale }),
    };
    sum_impl(model, exclude, false, detached, |_| Some((norm, 1.0))).map(|s| s.mul_scalar(scale))
}

/// A Gaussian with its own precision per group of parameters, chosen by the parameter's path
/// in the module (`"layers.0.weight"`, `"layers.1.bias"`: field names and vector indices joined
/// by dots): the first group whose pattern the path starts with, or ends with when the pattern
/// starts with `*` (`"*bias"`), else `default`. E.g. no decay on biases:
/// `GroupedGaussian::new(25.0).group("*bias", 0.0)`.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupedGaussian {
    /// `(pattern, precision)` in order of precedence.
    pub groups: Vec<(String, f64)>,
    /// Precision of parameters in no group.
    pub default: f64,
}

impl GroupedGaussian {
    /// Every parameter at `default`.
    pub fn new(default: f64) -> Self {
        Self {
            groups: Vec::new(),
            default,
        }
    }

    /// Parameters matching `pattern` at `precision`.
    pub fn group(mut self, pattern: &str, precision: f64) -> Self {
        self.groups.push((pattern.to_string(), precision));
        self
    }

    /// The precision of the parameter at `path`.
    pub fn precision_of(&self, path: &str) -> f64 {
        self.groups
            .iter()
            .find(|(p, _)| match p.strip_prefix('*') {
                Some(suffix) => path.ends_with(suffix),
                None => path.starts_with(p.as_str()),
            })
            .map_or(self.default, |(_, v)| *v)
    }
}

impl GroupedGaussian {
    /// The term of the parameter at `path`.
    fn term(&self, path: &str) -> Option<(Norm, f64)> {
        let precision = self.precision_of(path);
        (precision != 0.0).then_some((Norm::Squared, 0.5 * precision))
    }
}

impl<M: Module> Prior<M> for GroupedGaussian {
    fn energy(&self, model: &M, exclude: &[ParamId]) -> Option<Tensor<1>> {
        sum_over(model, exclude, |path| self.term(path))
    }

    fn detaches(&self) -> bool {
        true
    }

    fn add_detached(
        &self,
        model: &M,
        exclude: &[ParamId],
        grads: Option<&mut GradientsParams>,
    ) -> Option<Tensor<1>> {
        let detached = Detached { grads, scale: 1.0 };
        sum_impl(model, exclude, true, Some(detached), |path| self.term(path))
    }
}

/// Which parameters to sum.
enum Filter {
    /// Tensors that require gradients (autodiff device).
    RequireGrad,
    /// These ids (plain device).
    Ids(HashSet<ParamId>),
}

/// The per-parameter sum a prior adds up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Norm {
    /// `sum theta^2`.
    Squared,
    /// `sum |theta|`.
    Abs,
}

/// `term(path)`: which sum of the parameter at `path` to add, with what factor (`None`: skip).
type Term<'a> = dyn FnMut(&str) -> Option<(Norm, f64)> + 'a;

struct Sum<'a, 'b, 'c> {
    filter: Filter,
    exclude: &'a [ParamId],
    term: &'a mut Term<'b>,
    path: Vec<String>,
    /// Whether `term` reads paths (else they are not built).
    paths: bool,
    total: Option<Tensor<1>>,
    /// A tensor without autodiff was seen (under [`Filter::RequireGrad`]): the sum is void.
    plain: bool,
    /// Off the graph: the sum on the parameters' plain values, its gradient added here.
    detached: Option<Detached<'c>>,
}

/// Where a detached prior's gradient goes: `scale * d(sum)/d(theta)` is added to `grads`
/// (none: the value alone).
struct Detached<'a> {
    grads: Option<&'a mut GradientsParams>,
    /// The factor the caller applies to the sum.
    scale: f64,
}

impl Detached<'_> {
    /// Adds `scale * factor * d norm(value) / d value` to the gradient of `id` (registers it
    /// when the likelihood left the parameter without one); nothing without gradients.
    fn add<const D: usize>(&mut self, id: ParamId, value: &Tensor<D>, norm: Norm, factor: f64) {
        let Some(grads) = self.grads.as_deref_mut() else {
            return;
        };
        let c = self.scale * factor;
        let g = match norm {
            Norm::Squared => value.clone().mul_scalar(2.0 * c),
            Norm::Abs => value.clone().sign().mul_scalar(c),
        };
        let g = match grads.remove::<D>(id) {
            Some(data) => data + g,
            None => g,
        };
        grads.register(id, g);
    }
}

impl ModuleVisitor for Sum<'_, '_, '_> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if self.plain || self.exclude.contains(&param.id) {
            return;
        }
        let mut value = param.val();
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
        let path = if self.paths {
            self.path.join(".")
        } else {
            String::new()
        };
        let Some((norm, factor)) = (self.term)(&path) else {
            return;
        };
        if let Some(d) = self.detached.as_mut() {
            value = value.inner();
            d.add(param.id, &value, norm, factor);
        }
        let s = match norm {
            Norm::Squared => crate::staged::sum_all(value.powi_scalar(2)),
            Norm::Abs => crate::staged::sum_all(value.abs()),
        };
        let s = if factor == 1.0 {
            s
        } else {
            s.mul_scalar(factor)
        };
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

/// `sum_p factor_p N_p(theta_p)` over the trainable float parameters `theta_p` of `model` not
/// in `exclude`, with `(N_p, factor_p) = term(path_p)` (`None` skips the parameter), as a `[1]`
/// tensor (differentiable on an autodiff device); `None` when no parameter contributes.
pub fn sum_over<M: Module>(
    model: &M,
    exclude: &[ParamId],
    term: impl FnMut(&str) -> Option<(Norm, f64)>,
) -> Option<Tensor<1>> {
    sum_impl(model, exclude, true, None, term)
}

/// The sum of [`sum_over`]; with `detached`, on the parameters' plain values, its gradient
/// added to `detached.grads` (an autodiff model: its require-grad tensors are the parameters).
fn sum_impl<M: Module>(
    model: &M,
    exclude: &[ParamId],
    paths: bool,
    mut detached: Option<Detached<'_>>,
    mut term: impl FnMut(&str) -> Option<(Norm, f64)>,
) -> Option<Tensor<1>> {
    let mut run = |filter, detached: &mut Option<Detached<'_>>| {
        let mut v = Sum {
            filter,
            exclude,
            term: &mut term,
            path: Vec::new(),
            paths,
            total: None,
            plain: false,
            detached: detached.take(),
        };
        model.visit(&mut v);
        *detached = v.detached.take();
        (v.total, v.plain)
    };
    // One pass on an autodiff device (the sampling case); a plain tensor sends it to the
    // `train()` lookup of the training state (found at the first parameter, before any
    // gradient is added).
    let (total, plain) = run(Filter::RequireGrad, &mut detached);
    if !plain {
        return total;
    }
    let mut ids = RequireGradIds(HashSet::new());
    model.clone().train().visit(&mut ids);
    run(Filter::Ids(ids.0), &mut detached).0
}

/// `|theta|^2` over the trainable float parameters of `model` not in `exclude`, as a `[1]`
/// tensor (differentiable on an autodiff device); `None` when there are none.
pub fn squared_norm<M: Module>(model: &M, exclude: &[ParamId]) -> Option<Tensor<1>> {
    sum_impl(model, exclude, false, None, |_| Some((Norm::Squared, 1.0)))
}

#[cfg(test)]
mod tests {
    use burn::nn::{Linear, LinearConfig};
    use burn::optim::GradientsParams;
    use burn::tensor::Device;

    use super::*;

    fn values(t: Tensor<2>) -> Vec<f32> {
        t.into_data().try_into_vec::<f32>().unwrap()
    }

    #[test]
    fn priors_have_their_closed_form_energies_and_gradients() {
        // A 3 -> 2 linear layer: weight [3, 2], bias [2].
        let device = Device::flex().autodiff();
        let m: Linear = LinearConfig::new(3, 2).init(&device);
        let w = values(m.weight.val().inner());
        let b: Vec<f32> = m
            .bias
            .as_ref()
            .unwrap()
            .val()
            .inner()
            .into_data()
            .try_into_vec::<f32>()
            .unwrap();
        let sq = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>();
        let abs = |v: &[f32]| v.iter().map(|x| f64::from(*x).abs()).sum::<f64>();
        let energy = |e: Option<Tensor<1>>| f64::from(e.unwrap().into_scalar::<f32>());
        let close = |a: f64, b: f64| (a - b).abs() < 1e-5 * b.abs().max(1.0);

        let gauss = Gaussian { precision: 4.0 };
        assert!(close(
            energy(gauss.energy(&m, &[])),
            2.0 * (sq(&w) + sq(&b))
        ));
        assert!(Prior::<Linear>::energy(&Gaussian { precision: 0.0 }, &m, &[]).is_none());

        let laplace = Laplace { scale: 0.5 };
        let e = laplace.energy(&m, &[]).unwrap();
        assert!(close(
            f64::from(e.clone().into_scalar::<f32>()),
            2.0 * (abs(&w) + abs(&b))
        ));
        // d/dw (|w| / b) = sign(w) / b.
        let g = GradientsParams::from_grads(e.backward(), &m);
        let gw = values(g.get::<2>(m.weight.id).unwrap());
        for (gi, wi) in gw.iter().zip(&w) {
            assert!((f64::from(*gi) - 2.0 * f64::from(wi.signum())).abs() < 1e-6);
        }

        // No decay on biases: the grouped prior is the weights' Gaussian alone.
        let grouped = GroupedGaussian::new(4.0).group("*bias", 0.0);
        assert_eq!(grouped.precision_of("bias"), 0.0);
        assert_eq!(grouped.precision_of("weight"), 4.0);
        assert!(close(energy(grouped.energy(&m, &[])), 2.0 * sq(&w)));
        let by_prefix = GroupedGaussian::new(0.0).group("weight", 1.0);
        assert!(close(energy(by_prefix.energy(&m, &[])), 0.5 * sq(&w)));
        // Excluded parameters are left out.
        assert!(close(
            energy(gauss.energy(&m, &[m.weight.id])),
            2.0 * sq(&b)
        ));
    }
}
