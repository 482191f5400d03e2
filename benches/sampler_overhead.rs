//! Sampler overhead: a full step (forward + backward + update) of SGLD and SGHMC against plain
//! SGD, on the MLP 13-50-1 (batch 50) and the papers' CNN (batch 256, 28x28, 5 classes).
//! Reports absolute steps/s per CPU backend; the ratio SGLD/SGD is the sampler's overhead.
//!
//! Group `closed_form/flex`: the MLP posterior with closed-form gradients (`MlpPosterior`, plain
//! device) against the autodiff `Posterior`.
//!
//! `cargo bench --bench sampler_overhead` (set `SGMCMC_BENCH_NDARRAY_CNN=1` to include the slow
//! ndarray CNN).

use criterion::{Criterion, criterion_group, criterion_main};
use sgmcmc::burn::tensor::{Device, Distribution, Int, Tensor};
use sgmcmc::engine::DeviceChoice;
use sgmcmc::models::mlp::MlpPosterior;
use sgmcmc::models::posterior::Batch;
use sgmcmc::models::{Likelihood, Network, Posterior, Scale, Targets};
use sgmcmc::samplers::ensemble::ModuleEnsemble;
use sgmcmc::samplers::kernel::Kernel;
use sgmcmc::samplers::sampler::{Sampler, Sgmcmc, SgmcmcConfig};
use sgmcmc_bench::{cnn_workload, mlp_workload};
use std::time::Duration;

fn kernels() -> [(&'static str, Kernel); 3] {
    [
        ("sgd", Kernel::Sgd),
        ("sgld", Kernel::Sgld),
        ("sghmc", Kernel::sghmc()),
    ]
}

fn bench_model<M: Network + 'static>(
    c: &mut Criterion,
    group: &str,
    make: impl Fn(&Device) -> M,
    batch: Batch<M::Input>,
    posterior: Posterior,
    device: &Device,
) {
    let mut g = c.benchmark_group(group);
    g.sample_size(20)
        .measurement_time(Duration::from_secs(4))
        .warm_up_time(Duration::from_secs(1));
    for (name, kernel) in kernels() {
        let model = make(device);
        let ens = ModuleEnsemble::new(posterior.clone(), vec![model], 1).unwrap();
        let cfg = SgmcmcConfig::constant(kernel, 1e-6, 1.0);
        let mut s = Sgmcmc::new(cfg, ens).unwrap();
        g.bench_function(name, |b| b.iter(|| s.step(&batch).unwrap().energies[0]));
    }
    g.finish();
}

fn overhead(c: &mut Criterion) {
    for choice in [DeviceChoice::Flex, DeviceChoice::Ndarray] {
        let Ok(Some(device)) = choice.device() else {
            continue;
        };
        let ad = device.clone().autodiff();
        let (mlp, post, batch) = mlp_workload(&ad);
        bench_model(
            c,
            &format!("mlp13-50-1_b50/{choice}"),
            |d| mlp.init(d),
            batch,
            post,
            &ad,
        );
        if choice == DeviceChoice::Ndarray && std::env::var("SGMCMC_BENCH_NDARRAY_CNN").is_err() {
            continue;
        }
        let (cnn, post, batch) = cnn_workload(&ad);
        bench_model(
            c,
            &format!("cnn_b256/{choice}"),
            |d| cnn.init(d),
            batch,
            post,
            &ad,
        );
    }
}

/// The MLP posterior with closed-form gradients on the plain flex device (no autodiff graph),
/// against the autodiff `Posterior`: MLP 13-50-1 (batch 50) and the digits-shaped 64-100-10 tanh
/// MLP (batch 100, categorical), one SGLD step each.
fn closed_form(c: &mut Criterion) {
    let Ok(Some(device)) = DeviceChoice::Flex.device() else {
        return;
    };
    let ad = device.clone().autodiff();
    let mut g = c.benchmark_group("closed_form/flex");
    g.sample_size(20)
        .measurement_time(Duration::from_secs(4))
        .warm_up_time(Duration::from_secs(1));
    let sgld = || SgmcmcConfig::constant(Kernel::Sgld, 1e-6, 1.0);
    let (mlp, post, batch) = mlp_workload(&ad);
    let plain = Batch {
        x: batch.x.clone().inner(),
        y: match &batch.y {
            Targets::Real(y) => Targets::Real(y.clone().inner()),
            Targets::Class(y) => Targets::Class(y.clone().inner()),
        },
    };
    let ens = ModuleEnsemble::new(MlpPosterior::new(post), vec![mlp.init(&device)], 1).unwrap();
    let mut s = Sgmcmc::new(sgld(), ens).unwrap();
    g.bench_function("mlp13-50-1_b50/sgld", |b| {
        b.iter(|| s.step(&plain).unwrap().energies[0])
    });
    let digits = sgmcmc::apps::digits::network(100);
    let post = Posterior {
        likelihood: Likelihood::Categorical,
        scale: Scale::from_weight_decay(1437, 1e-4),
    };
    let labels: Vec<i64> = (0..100).map(|i| i % 10).collect();
    let x = Tensor::<2>::random([100, 64], Distribution::Normal(0.0, 1.0), &device);
    let y = Tensor::<1, Int>::from_data(labels.as_slice(), &device);
    let on = |d: &Device| Batch {
        x: x.clone().to_device(d),
        y: Targets::Class(y.clone().to_device(d)),
    };
    let (b_ad, b_plain) = (on(&ad), on(&device));
    let ens = ModuleEnsemble::new(post.clone(), vec![digits.init(&ad)], 1).unwrap();
    let mut s = Sgmcmc::new(sgld(), ens).unwrap();
    g.bench_function("mlp64-100-10_b100/sgld autodiff", |b| {
        b.iter(|| s.step(&b_ad).unwrap().energies[0])
    });
    let ens = ModuleEnsemble::new(MlpPosterior::new(post), vec![digits.init(&device)], 1).unwrap();
    let mut s = Sgmcmc::new(sgld(), ens).unwrap();
    g.bench_function("mlp64-100-10_b100/sgld closed form", |b| {
        b.iter(|| s.step(&b_plain).unwrap().energies[0])
    });
    g.finish();
}

criterion_group!(benches, overhead, closed_form);
criterion_main!(benches);
