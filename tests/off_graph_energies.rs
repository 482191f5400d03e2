//! Forward-only energies off the autodiff graph (`NegLogLik::nll_off_graph`, what
//! `ModelPosterior::batch_energies` runs for control-variate snapshots and full passes): for the
//! networks whose forward pass is the same on the inner device (MLP, CNN, a learned noise
//! precision around an MLP, a closure likelihood given a way to move its batches) the negative
//! log-likelihood is computed on plain tensors (no graph recorded) and equals the one on the
//! autodiff device; a network with batch norm (whose running statistics replace the batch's off
//! the autodiff device) and a closure without that way stay on the graph. On every compiled
//! device.
//!
//! Tolerance: both paths compute the same f32 operations; on flex the tracked dense layer is
//! one GEMM accumulating into the bias and the plain one burn's product plus a bias pass, which
//! changes the summation order (a few units in the last place of each logit, ~1e-7 relative).
//! 1e-5 of the value is two orders above that and far below any modelling difference (a
//! dropped bias or prior term moves these values by more than 1e-2).

mod common;

use common::nets::{labels, resnet8};
use sgmcmc::burn::nn::{Linear, LinearConfig};
use sgmcmc::burn::tensor::{Distribution, Tensor};
use sgmcmc::models::{
    Activation, Batch, CnnConfig, Likelihood, MlpConfig, NegLogLik, Targets, WithNoise, nll_fn,
};

/// A regression batch of a closure likelihood: inputs and targets.
struct Xy(Tensor<2>, Tensor<2>);

fn value(t: Tensor<1>) -> f64 {
    f64::from(t.into_scalar::<f32>())
}

/// The off-graph NLL of `model` on `batch` is plain (no autodiff) and equals the graph one.
fn same_off_graph<M, L: NegLogLik<M>>(what: &str, model: &M, batch: &L::Batch, l: L) {
    let on_graph = l.nll(model, batch).unwrap();
    let off = l
        .nll_off_graph(model, batch)
        .unwrap_or_else(|| panic!("{what}: no off-graph path"))
        .unwrap();
    assert!(
        on_graph.sum.is_autodiff(),
        "{what}: the reference is not on the graph"
    );
    assert!(
        !off.sum.is_autodiff(),
        "{what}: the off-graph NLL is on the graph"
    );
    assert_eq!(off.n, on_graph.n, "{what}: batch size");
    let terms = [
        (Some(on_graph.sum), Some(off.sum)),
        (on_graph.owned_prior, off.owned_prior),
    ];
    for (i, (a, b)) in terms.into_iter().enumerate() {
        assert_eq!(
            a.is_some(),
            b.is_some(),
            "{what}: term {i} on one path only"
        );
        if let (Some(a), Some(b)) = (a, b) {
            assert!(
                !b.is_autodiff(),
                "{what}: term {i} of the off-graph NLL is on the graph"
            );
            let (a, b) = (value(a), value(b));
            let rel = (a - b).abs() / a.abs().max(1e-30);
            println!("{what} term {i}: graph {a}, off graph {b}, rel {rel:.1e}");
            assert!(
                rel < 1e-5,
                "{what} term {i}: {b} off the graph vs {a} on it"
            );
        }
    }
}

#[test]
fn forward_only_energies_run_off_the_graph_where_the_network_computes_the_same() {
    for (choice, device, _) in common::devices() {
        let ad = device.clone().autodiff();
        ad.seed(11);
        let normal =
            |shape: [usize; 2]| Tensor::<2>::random(shape, Distribution::Normal(0.0, 1.0), &ad);
        // A ReLU MLP, Gaussian likelihood.
        let mlp = MlpConfig {
            inputs: 5,
            hidden: vec![9],
            outputs: 2,
            activation: Activation::Relu,
        }
        .init(&ad);
        let batch = Batch {
            x: normal([12, 5]),
            y: Targets::Real(normal([12, 2])),
        };
        let gaussian = Likelihood::Gaussian { precision: 3.0 };
        same_off_graph(&format!("{choice} mlp"), &mlp, &batch, gaussian);

        // A learned noise precision (its Gamma prior is the likelihood's own term).
        let net = MlpConfig {
            inputs: 5,
            hidden: vec![7],
            outputs: 1,
            activation: Activation::Tanh,
        }
        .init(&ad);
        let noisy = WithNoise::new(net, 4.0, &ad).unwrap();
        let batch = Batch {
            x: normal([12, 5]),
            y: Targets::Real(normal([12, 1])),
        };
        let learned = Likelihood::GaussianLearned {
            shape: 1.0,
            rate: 0.5,
        };
        same_off_graph(&format!("{choice} noise"), &noisy, &batch, learned);

        // The papers' CNN at a small image size, categorical likelihood.
        let cnn = CnnConfig {
            channels: [4, 6],
            hidden: 10,
            classes: 3,
            image_size: 16,
            ..CnnConfig::default()
        }
        .init(&ad);
        let x = Tensor::<4>::random([6, 1, 16, 16], Distribution::Normal(0.0, 1.0), &ad);
        let batch = Batch {
            x,
            y: Targets::Class(labels(6, 3, &ad)),
        };
        same_off_graph(
            &format!("{choice} cnn"),
            &cnn,
            &batch,
            Likelihood::Categorical,
        );

        // Batch norm: stays on the graph (its statistics differ off the autodiff device).
        let (resnet, batch) = resnet8(&ad);
        let off = NegLogLik::<_>::nll_off_graph(&Likelihood::Categorical, &resnet, &batch);
        assert!(
            off.is_none(),
            "{choice} resnet8: batch norm taken off the graph"
        );

        // A closure likelihood on a user's module: off the graph once it says how to move its
        // batches, on the graph until then.
        let layer: Linear = LinearConfig::new(5, 2).init(&ad);
        let unit_noise = |m: &Linear, b: &Xy| {
            let r = m.forward(b.0.clone()) - b.1.clone();
            r.powi_scalar(2).mul_scalar(0.5).sum_dim(1).squeeze_dim(1)
        };
        let xy = Xy(normal([12, 5]), normal([12, 2]));
        let plain_only = nll_fn(unit_noise);
        assert!(
            plain_only.nll_off_graph(&layer, &xy).is_none(),
            "{choice} closure: off the graph without a way to move its batch"
        );
        let moved =
            nll_fn(unit_noise).off_graph(|b: &Xy| Xy(b.0.clone().inner(), b.1.clone().inner()));
        same_off_graph(&format!("{choice} closure"), &layer, &xy, moved);
    }
}
