//! Host-device transfers of a sampler step over network chains, and the law of the Langevin
//! noise drawn on the device (issue 16, item 3).
//!
//! Counts: every transfer of the sampler crate goes through `samplers::transfer` (clippy
//! rejects the direct calls there), which counts them process-wide; this file holds one test so
//! nothing else in its process moves data while it counts. A step of SGLD, SGHMC, CSGLD or
//! reSGLD (swaps included) over two network chains, on a batch already on the device, must read
//! once (the energies of both chains, in one transfer) and upload nothing when the noise is
//! drawn on the device (the default on wgpu), or one noise tensor per parameter tensor and chain
//! when it is drawn on the host (the default on the CPU backends).
//!
//! Law: with a zero likelihood the posterior is the Gaussian prior `N(0, I)`, and SGLD with
//! step `lr` is the AR(1) recursion `x' = (1 - lr) x + sqrt(2 lr) xi`, whose stationary
//! variance is exactly `1 / (1 - lr / 2)` (4/3 at `lr = 0.5`, a third above the target's: a
//! wrong noise scale, correlated draws across steps or identical draws across tensors show).
//! The pooled second moment over `P` coordinates and `T` steps has standard error
//! `v sqrt(2 tau / (P T))` with `tau = (1 + rho^2) / (1 - rho^2) = 5/3` the integrated
//! autocorrelation time of `x^2` (`rho = 1 - lr`); the test allows 4 standard errors. The two
//! chains' coordinates must be uncorrelated (|r| < 4 / sqrt(P)): chains seeded alike would not be.

mod common;

use sgmcmc::burn::module::{Module, ModuleVisitor, Param};
use sgmcmc::burn::tensor::{Device, Distribution, Int, Tensor};
use sgmcmc::engine::DeviceChoice;
use sgmcmc::engine::init;
use sgmcmc::models::nll::NllFn;
use sgmcmc::models::posterior::{Batch, Posterior, Scale};
use sgmcmc::models::{
    Activation, CnnConfig, Gaussian, Likelihood, Mlp, MlpConfig, ModelPosterior, Network, Targets,
    nll_fn,
};
use sgmcmc::samplers::ensemble::{ModuleEnsemble, NoiseSource};
use sgmcmc::samplers::registry::{BuildContext, SamplerSettings};
use sgmcmc::samplers::sampler::Sampler;
use sgmcmc::samplers::transfer;

type Post = ModelPosterior<NllFn<fn(&Mlp, &Tensor<2>) -> Tensor<1>, Tensor<2>>, Gaussian>;

/// A zero likelihood that still touches every parameter (so each has a gradient: the prior's).
fn zero(m: &Mlp, x: &Tensor<2>) -> Tensor<1> {
    m.forward(x.clone())
        .sum_dim(1)
        .squeeze_dim(1)
        .mul_scalar(0.0)
}

const PARAM_TENSORS: u64 = 4;

fn chains(device: &Device, source: NoiseSource) -> ModuleEnsemble<Mlp, Post> {
    let posterior = ModelPosterior::new(nll_fn(zero as fn(&Mlp, &Tensor<2>) -> Tensor<1>), 100);
    let cfg = MlpConfig {
        inputs: 6,
        hidden: vec![40],
        outputs: 4,
        activation: Activation::Tanh,
    };
    let nets = init::chains(device, 5, 2, || cfg.init(device));
    ModuleEnsemble::new(posterior, nets, 5)
        .unwrap()
        .with_noise(source)
}

fn settings(name: &str) -> SamplerSettings {
    let mut s = SamplerSettings {
        lr: 0.5,
        ..SamplerSettings::named(name)
    };
    s.replica.variance_period = 0;
    s
}

/// Every parameter value of `m`, in visiting order.
fn values(m: &Mlp) -> Vec<f64> {
    struct All(Vec<f64>);
    impl ModuleVisitor for All {
        fn visit_float<const D: usize>(&mut self, p: &Param<Tensor<D>>) {
            let v: Vec<f32> = p.val().into_data().convert::<f32>().try_into_vec().unwrap();
            self.0.extend(v.into_iter().map(f64::from));
        }
    }
    let mut all = All(Vec::new());
    m.visit(&mut all);
    all.0
}

/// The transfers of `steps` steps of `s` on `batch`, after one warm-up step.
fn moved_in<S: Sampler>(s: &mut S, batch: &S::Batch, steps: u64) -> transfer::Transfers {
    s.step(batch).unwrap();
    let before = transfer::counts();
    for _ in 0..steps {
        s.step(batch).unwrap();
    }
    transfer::counts() - before
}

fn counts_per_step(choice: DeviceChoice, device: &Device) {
    let batch = Tensor::<2>::random([8, 6], Distribution::Normal(0.0, 1.0), device);
    for (name, source) in [
        ("sgld", NoiseSource::Auto),
        ("sgld", NoiseSource::Host),
        ("sgld", NoiseSource::Device),
        ("sghmc", NoiseSource::Device),
        ("csgld", NoiseSource::Device),
        ("resgld", NoiseSource::Device),
    ] {
        let ens = chains(device, source);
        let on_device = ens.noise_on_device();
        if source == NoiseSource::Auto {
            assert_eq!(on_device, choice.is_gpu(), "{choice}: auto");
        }
        let ctx = BuildContext::steps(100).chains(2).min_energy(0.0);
        let mut s = settings(name).spec(&ctx).unwrap().build(ens, 5).unwrap();
        let steps = 6;
        let per = moved_in(&mut s, &batch, steps);
        let what = format!("{choice} {name} {source:?}");
        println!("{what}: {per:?} in {steps} steps");
        assert_eq!(per.reads, steps, "{what}: one read per step");
        let uploads = if on_device {
            0
        } else {
            steps * 2 * PARAM_TENSORS
        };
        assert_eq!(per.uploads, uploads, "{what}: uploads");
    }
}

/// Variance-reduced reSGLD: the chains' energies and the snapshots' (the control variate on
/// the step's batch) are read once each per step, whatever the number of chains.
fn vr_counts(choice: DeviceChoice, device: &Device) {
    let batch = Tensor::<2>::random([8, 6], Distribution::Normal(0.0, 1.0), device);
    let mut settings = settings("vr-resgld");
    settings.lr = 1e-3;
    settings.replica.control_period = 1000;
    let ctx = BuildContext::steps(100).chains(2);
    let (b1, b2) = (batch.clone(), batch.clone());
    let mut s = settings
        .spec(&ctx)
        .unwrap()
        .build_with_data(
            chains(device, NoiseSource::Device),
            5,
            Box::new(move |_, _| b1.clone()),
            Some(Box::new(move |i| (i < 2).then(|| b2.clone()))),
        )
        .unwrap();
    let per = moved_in(&mut s, &batch, 4);
    println!("{choice} vr-resgld: {per:?} in 4 steps");
    assert_eq!(
        per,
        transfer::Transfers {
            uploads: 0,
            reads: 8
        },
        "{choice} vr-resgld: a read for the chains and one for the snapshots per step"
    );
}

fn device_noise_law(choice: DeviceChoice, device: &Device, steps: usize) {
    let ens = chains(device, NoiseSource::Device);
    let ctx = BuildContext::steps(steps as u64).chains(2);
    let mut s = settings("sgld").spec(&ctx).unwrap().build(ens, 9).unwrap();
    let batch = Tensor::<2>::random([8, 6], Distribution::Normal(0.0, 1.0), device);
    let burn_in = 20;
    let (mut sum2, mut n) = (0.0, 0usize);
    let mut last = Vec::new();
    for k in 0..burn_in + steps {
        s.step(&batch).unwrap();
        if k >= burn_in {
            last = s.ensemble().modules().map(values).collect::<Vec<_>>();
            for v in last.iter().flatten() {
                sum2 += v * v;
                n += 1;
            }
        }
    }
    let lr: f64 = 0.5;
    let exact = 1.0 / (1.0 - lr / 2.0);
    let rho2 = (1.0 - lr).powi(2);
    let tau = (1.0 + rho2) / (1.0 - rho2);
    let se = exact * (2.0 * tau / n as f64).sqrt();
    let second = sum2 / n as f64;
    println!("{choice}: E x^2 = {second:.4} (exact {exact:.4}, se {se:.4}, {n} values)");
    assert!(
        (second - exact).abs() < 4.0 * se,
        "{choice}: E x^2 {second} vs {exact} +- {se}"
    );
    let (a, b) = (&last[0], &last[1]);
    let p = a.len() as f64;
    let r = a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>()
        / (a.iter().map(|x| x * x).sum::<f64>() * b.iter().map(|y| y * y).sum::<f64>()).sqrt();
    assert!(
        r.abs() < 4.0 / p.sqrt(),
        "{choice}: chains correlated, r = {r}"
    );
}

/// Two runs from one seed draw the same device noise: the chains end bit-equal; and a run
/// restored from a checkpoint after 5 steps draws the same noise for the last 5 (the seeds of
/// the device draws come from the chains' streams, which the checkpoint holds).
fn device_noise_is_reproducible(choice: DeviceChoice, device: &Device) {
    let batch = Tensor::<2>::random([8, 6], Distribution::Normal(0.0, 1.0), device);
    let sampler = || {
        let ens = chains(device, NoiseSource::Device);
        let ctx = BuildContext::steps(10).chains(2);
        settings("sgld").spec(&ctx).unwrap().build(ens, 9).unwrap()
    };
    let run = |resume: bool| {
        let mut s = sampler();
        for k in 0..10 {
            if resume && k == 5 {
                let state = s.state().unwrap();
                s = sampler();
                s.restore(state).unwrap();
            }
            s.step(&batch).unwrap();
        }
        s.ensemble().modules().map(values).collect::<Vec<_>>()
    };
    let (a, b) = (run(false), run(false));
    assert_eq!(a, b, "{choice}: same seed, same noise");
    assert_ne!(a[0], a[1], "{choice}: the two chains differ");
    assert_eq!(run(true), a, "{choice}: resumed from step 5");
}

/// The MNIST CNN (convolutions, pooling, the categorical likelihood, the built-in posterior):
/// an SGHMC step of two chains reads once and, with the noise on the device, uploads nothing
/// (the convolutions' gather offsets are uploaded once per shape, on the first step).
fn cnn_counts(choice: DeviceChoice, device: &Device) {
    let cfg = CnnConfig {
        channels: [4, 8],
        hidden: 16,
        ..CnnConfig::default()
    };
    let post = Posterior {
        likelihood: Likelihood::Categorical,
        scale: Scale::from_weight_decay(1000, 1e-3),
    };
    let nets = init::chains(device, 3, 2, || cfg.init(device));
    let ens = ModuleEnsemble::new(post, nets, 3)
        .unwrap()
        .with_noise(NoiseSource::Device);
    let settings = SamplerSettings {
        lr: 1e-6,
        ..SamplerSettings::named("sghmc")
    };
    let mut s = settings
        .spec(&BuildContext::steps(10).chains(2))
        .unwrap()
        .build(ens, 3)
        .unwrap();
    let labels: Vec<i64> = (0..8).map(|i| i % 10).collect();
    let batch = Batch {
        x: Tensor::<4>::random([8, 1, 28, 28], Distribution::Normal(0.0, 1.0), device),
        y: Targets::Class(Tensor::<1, Int>::from_data(labels.as_slice(), device)),
    };
    let per = moved_in(&mut s, &batch, 3);
    println!("{choice} cnn sghmc: {per:?} in 3 steps");
    assert_eq!(
        per,
        transfer::Transfers {
            uploads: 0,
            reads: 3
        },
        "{choice} cnn"
    );
}

#[test]
fn a_network_step_reads_once_and_device_noise_has_the_exact_law() {
    for (choice, device, scale) in common::devices() {
        let ad = device.autodiff();
        counts_per_step(choice, &ad);
        cnn_counts(choice, &ad);
        vr_counts(choice, &ad);
        device_noise_is_reproducible(choice, &ad);
        device_noise_law(choice, &ad, (400.0 * scale) as usize);
    }
}
