//! The isotropic prior sums exactly the trainable parameters: on a ResNet, not the BatchNorm
//! running means and variances that burn's module visitors also see.

// Tests move data freely (the library's transfers are counted: clippy.toml).
#![allow(clippy::disallowed_methods)]

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Distribution, Int, Tensor};
use sgmcmc_models::posterior::Batch;
use sgmcmc_models::prior::squared_norm;
use sgmcmc_models::{Likelihood, Network, Posterior, ResNet, ResNetConfig, Scale, Targets};

/// Host sums over the float tensors a visitor sees, split by whether `grads` holds a gradient
/// for them (= what the samplers and optimizers update).
struct Split<'a> {
    grads: &'a GradientsParams,
    trainable: (usize, f64),
    other: (usize, f64),
}

impl ModuleVisitor for Split<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let v: Vec<f32> = param.val().into_data().try_into_vec().unwrap();
        let sq: f64 = v.iter().map(|x| f64::from(*x).powi(2)).sum();
        let slot = if self.grads.get::<D>(param.id).is_some() {
            &mut self.trainable
        } else {
            &mut self.other
        };
        slot.0 += v.len();
        slot.1 += sq;
    }
}

fn batch(device: &Device) -> Batch<Tensor<4>> {
    Batch {
        x: Tensor::random([2, 3, 32, 32], Distribution::Normal(0.0, 1.0), device),
        y: Targets::Class(Tensor::<1, Int>::from_ints([3, 7], device)),
    }
}

fn posterior(prior_precision: f64) -> Posterior {
    Posterior {
        likelihood: Likelihood::Categorical,
        scale: Scale {
            n_data: 2,
            prior_precision,
        },
    }
}

#[test]
fn resnet_prior_sums_exactly_the_trainable_parameters() {
    let device = Device::flex().autodiff();
    // (Parameter draws come from the process-global stream that parallel tests share; every
    // assertion below is an identity that holds for any draw.)
    device.seed(3);
    let model: ResNet = ResNetConfig::resnet20(10).init(&device).unwrap();
    let b = batch(&device);
    // A training-mode forward pass and its backward: the gradients say what is trainable. The
    // running variances start at one (688 channels), so including them would show.
    let loss = model.forward(b.x.clone()).sum();
    let grads = GradientsParams::from_grads(loss.backward(), &model);
    let mut split = Split {
        grads: &grads,
        trainable: (0, 0.0),
        other: (0, 0.0),
    };
    model.visit(&mut split);
    let (count, sq) = split.trainable;
    println!(
        "trainable {count} params, |theta|^2 {sq:.3}; running statistics {} values, sum of squares {:.3}",
        split.other.0, split.other.1
    );
    assert_eq!(count, 269_722);
    assert_eq!(split.other.0, 271_098 - 269_722);
    assert!(split.other.1 > 100.0, "running statistics would be visible");

    // f32 sums over 2.7e5 terms: relative rounding well under 1e-5.
    let got = f64::from(squared_norm(&model, &[]).unwrap().into_scalar::<f32>());
    assert!((got - sq).abs() < 1e-5 * sq, "{got} vs {sq}");
    // The same model on a plain device (BatchNorm in eval mode) has the same prior.
    let plain = model.valid();
    let got = f64::from(squared_norm(&plain, &[]).unwrap().into_scalar::<f32>());
    assert!((got - sq).abs() < 1e-5 * sq, "valid(): {got} vs {sq}");

    // Through the posterior: U(prior p) - U(prior 0) = p / 2 |theta|^2 (the NLL part is the same
    // minibatch-statistics BatchNorm forward both times).
    let p = 2.0;
    let with = posterior(p)
        .energy(&model, &b)
        .unwrap()
        .into_scalar::<f32>();
    let without = posterior(0.0)
        .energy(&model, &b)
        .unwrap()
        .into_scalar::<f32>();
    let prior = f64::from(with) - f64::from(without);
    println!(
        "prior energy {prior:.3}, p/2 |theta|^2 = {:.3}",
        0.5 * p * sq
    );
    // Energies ~2e3 in f32 (ulp 2.4e-4), each a sum of 61 tensor sums: allow 5e-6 relative
    // (0.01); leaving the running statistics in would add p / 2 * 688 = 688.
    let tol = 5e-6 * f64::from(with).abs();
    assert!(
        (prior - 0.5 * p * sq).abs() < tol,
        "{prior} vs {}",
        0.5 * p * sq
    );
}

#[test]
fn frozen_and_excluded_parameters_are_left_out() {
    let device = Device::flex().autodiff();
    let model = ResNetConfig::new(8, 3).init(&device).unwrap();
    let all = f64::from(squared_norm(&model, &[]).unwrap().into_scalar::<f32>());
    assert!(all > 0.0);
    // A frozen module has no trainable parameter left.
    assert!(squared_norm(&model.clone().no_grad(), &[]).is_none());
    // Excluding one parameter removes exactly its square.
    struct First(Option<(burn::module::ParamId, f64)>);
    impl ModuleVisitor for First {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            if self.0.is_none() {
                let sq = param.val().powi_scalar(2).sum().into_scalar::<f32>();
                self.0 = Some((param.id, f64::from(sq)));
            }
        }
    }
    let mut first = First(None);
    model.visit(&mut first);
    let (id, sq) = first.0.unwrap();
    let rest = f64::from(squared_norm(&model, &[id]).unwrap().into_scalar::<f32>());
    assert!(
        (all - sq - rest).abs() < 1e-4 * all,
        "{all} - {sq} vs {rest}"
    );
}
