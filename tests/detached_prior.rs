//! The weight prior off the autodiff graph (`Prior::add_detached`, what `ModelPosterior` and
//! `Posterior` run) gives the energy and the gradients of the prior on the graph (the
//! reference path it replaces: `energy(..).backward()`), on every compiled device, for the
//! three built-in priors, a network with BatchNorm running statistics (not parameters: no
//! prior term) and a learned noise precision (excluded from the weight prior, its own Gamma
//! prior on the graph).
//!
//! Tolerance: both paths compute the same f32 terms and differ only in where the prior's
//! gradient `c theta` is added to the data term's (after the backward pass instead of inside
//! it) and in the order of the energy's last addition, a few units in the last place;
//! 1e-5 of the largest gradient entry, and of the energy, is two orders above that and four below
//! a wrong factor of the prior (`precision` vs `precision / 2` changes the prior's share of
//! the gradient by 50 %, which the test also checks is visible at this scale).

mod common;

use common::nets::{labels, resnet8};
use sgmcmc::burn::module::{Module, ModuleVisitor, Param};
use sgmcmc::burn::optim::GradientsParams;
use sgmcmc::burn::tensor::{Distribution, Tensor};
use sgmcmc::models::model_posterior::energy;
use sgmcmc::models::{
    Activation, Batch, Gaussian, GroupedGaussian, Laplace, Likelihood, MlpConfig, ModelPosterior,
    Network, Prior, Targets, WithNoise,
};
use sgmcmc::samplers::density::Target;
use sgmcmc::samplers::rng::ChainRng;

/// Largest `|a - b|` over the gradients of `model`'s parameters, and the largest `|b|`.
struct Worst<'a> {
    a: &'a GradientsParams,
    b: &'a GradientsParams,
    diff: f32,
    scale: f32,
    seen: usize,
}

impl ModuleVisitor for Worst<'_> {
    fn visit_float<const D: usize>(&mut self, p: &Param<Tensor<D>>) {
        let (a, b) = (self.a.get::<D>(p.id), self.b.get::<D>(p.id));
        assert_eq!(a.is_some(), b.is_some(), "a gradient on one path only");
        if let (Some(a), Some(b)) = (a, b) {
            let a: Vec<f32> = a.into_data().convert::<f32>().try_into_vec().unwrap();
            let b: Vec<f32> = b.into_data().convert::<f32>().try_into_vec().unwrap();
            for (x, y) in a.iter().zip(&b) {
                self.diff = self.diff.max((x - y).abs());
                self.scale = self.scale.max(y.abs());
            }
            self.seen += 1;
        }
    }
}

/// (energy relative error, gradient error over the largest gradient, parameters compared) of
/// the detached path against the graph path, for `posterior` at `model` on `batch`.
fn compare<M, P>(
    posterior: &ModelPosterior<Likelihood, P>,
    model: &M,
    batch: &Batch<M::Input>,
) -> (f64, f32, usize)
where
    M: Network,
    P: Prior<M>,
{
    assert!(posterior.prior.detaches());
    let est = posterior
        .estimate(model, batch, &mut [ChainRng::new(1, 0)])
        .unwrap();
    let (l, p, n) = (&posterior.likelihood, &posterior.prior, posterior.n_data);
    let reference = energy(l, p, n, model, batch).unwrap();
    let value = f64::from(reference.clone().into_scalar::<f32>());
    let grads = GradientsParams::from_grads(reference.backward(), model);
    let mut w = Worst {
        a: &est.grads,
        b: &grads,
        diff: 0.0,
        scale: f32::MIN_POSITIVE,
        seen: 0,
    };
    model.visit(&mut w);
    // The forward-only energy (snapshots, swaps) adds the detached value too.
    let forward = posterior
        .batch_energies(model, batch, &mut [ChainRng::new(1, 0)])
        .and_then(|e| e.into_host())
        .unwrap()[0];
    let estimated = est.energies.clone().into_host().unwrap()[0];
    let e = [estimated, forward]
        .iter()
        .map(|v| (v - value).abs() / value.abs())
        .fold(0.0, f64::max);
    (e, w.diff / w.scale, w.seen)
}

/// The forward-only energy of `posterior` at `model` on `batch`.
fn forward<M: Network, P: Prior<M>>(
    posterior: &ModelPosterior<Likelihood, P>,
    model: &M,
    batch: &Batch<M::Input>,
) -> f64 {
    posterior
        .batch_energies(model, batch, &mut [ChainRng::new(1, 0)])
        .and_then(|e| e.into_host())
        .unwrap()[0]
}

fn priors() -> (Gaussian, Laplace, GroupedGaussian) {
    (
        Gaussian { precision: 40.0 },
        Laplace { scale: 0.05 },
        GroupedGaussian::new(40.0).group("*bias", 0.0),
    )
}

fn check<M: Network>(what: &str, model: &M, batch: &Batch<M::Input>, likelihood: Likelihood) {
    let (g, l, gg) = priors();
    let base = ModelPosterior::new(likelihood, 500);
    let results = [
        (
            "gaussian",
            compare(&base.clone().with_prior(g), model, batch),
        ),
        (
            "laplace",
            compare(&base.clone().with_prior(l), model, batch),
        ),
        (
            "grouped",
            compare(&base.clone().with_prior(gg), model, batch),
        ),
    ];
    for (prior, (e, grad, seen)) in results {
        println!("{what} {prior}: energy {e:.2e}, gradients {grad:.2e} over {seen} tensors");
        assert!(seen > 0, "{what} {prior}: no gradient compared");
        assert!(e < 1e-5, "{what} {prior}: energy off by {e:.2e}");
        assert!(grad < 1e-5, "{what} {prior}: gradients off by {grad:.2e}");
    }
    // The prior is visible at this tolerance: half the precision moves the gradients.
    let half = base.with_prior(Gaussian { precision: 20.0 });
    let est = half
        .estimate(model, batch, &mut [ChainRng::new(1, 0)])
        .unwrap();
    let full = base_reference(model, batch, likelihood, g);
    let mut w = Worst {
        a: &est.grads,
        b: &full,
        diff: 0.0,
        scale: f32::MIN_POSITIVE,
        seen: 0,
    };
    model.visit(&mut w);
    assert!(
        w.diff / w.scale > 1e-3,
        "{what}: the prior's gradient is invisible"
    );
}

fn base_reference<M: Network>(
    model: &M,
    batch: &Batch<M::Input>,
    likelihood: Likelihood,
    prior: Gaussian,
) -> GradientsParams {
    let e = energy(&likelihood, &prior, 500, model, batch).unwrap();
    GradientsParams::from_grads(e.backward(), model)
}

#[test]
fn the_detached_prior_matches_the_prior_on_the_graph_on_every_device() {
    for (choice, device, _) in common::devices() {
        let ad = device.clone().autodiff();
        ad.seed(7);
        // A tanh MLP with the categorical likelihood.
        let mlp = MlpConfig {
            inputs: 6,
            hidden: vec![12],
            outputs: 4,
            activation: Activation::Tanh,
        }
        .init(&ad);
        let x = Tensor::<2>::random([16, 6], Distribution::Normal(0.0, 1.0), &ad);
        let batch = Batch {
            x,
            y: Targets::Class(labels(16, 4, &ad)),
        };
        check(
            &format!("{choice} mlp"),
            &mlp,
            &batch,
            Likelihood::Categorical,
        );
        // A plain-device copy (no autodiff): the detached prior sums the parameters its
        // training state marks trainable, as the graph path does.
        let plain = mlp.valid();
        let plain_batch = Batch {
            x: batch.x.clone().inner(),
            y: Targets::Class(labels(16, 4, &device)),
        };
        let (g, l, gg) = priors();
        let base = ModelPosterior::new(Likelihood::Categorical, 500);
        let gaussian = base.clone().with_prior(g);
        let laplace = base.clone().with_prior(l);
        let grouped = base.clone().with_prior(gg);
        let energies = [
            (
                forward(&gaussian, &mlp, &batch),
                forward(&gaussian, &plain, &plain_batch),
            ),
            (
                forward(&laplace, &mlp, &batch),
                forward(&laplace, &plain, &plain_batch),
            ),
            (
                forward(&grouped, &mlp, &batch),
                forward(&grouped, &plain, &plain_batch),
            ),
        ];
        for (name, (ad, on_plain)) in ["gaussian", "laplace", "grouped"].into_iter().zip(energies) {
            let rel = (ad - on_plain).abs() / ad.abs();
            assert!(rel < 1e-5, "{choice} plain {name}: {on_plain} vs {ad}");
        }

        // A learned noise precision: left out of the weight prior.
        let net = MlpConfig {
            inputs: 6,
            hidden: vec![8],
            outputs: 1,
            activation: Activation::Relu,
        }
        .init(&ad);
        let noisy = WithNoise::new(net, 4.0, &ad).unwrap();
        let x = Tensor::<2>::random([16, 6], Distribution::Normal(0.0, 1.0), &ad);
        let y = Tensor::<2>::random([16, 1], Distribution::Normal(0.0, 1.0), &ad);
        let batch = Batch {
            x,
            y: Targets::Real(y),
        };
        let learned = Likelihood::GaussianLearned {
            shape: 1.0,
            rate: 0.5,
        };
        check(&format!("{choice} noise"), &noisy, &batch, learned);

        // BatchNorm running statistics are state, not parameters.
        let (resnet, batch) = resnet8(&ad);
        check(
            &format!("{choice} resnet8"),
            &resnet,
            &batch,
            Likelihood::Categorical,
        );
    }
}
