//! Sampler overhead: a full step (forward + backward + update) of SGLD and SGHMC against plain
//! SGD, on the MLP 13-50-1 (batch 50) and the papers' CNN (batch 256, 28x28, 5 classes).
//! Reports absolute steps/s per CPU backend; the ratio SGLD/SGD is the sampler's overhead.
//!
//! `cargo bench --bench sampler_overhead` (set `SGMCMC_BENCH_NDARRAY_CNN=1` to include the slow
//! ndarray CNN).

use criterion::{Criterion, criterion_group, criterion_main};
use sgmcmc::apps::bench::{cnn_workload, mlp_workload};
use sgmcmc::apps::device::DeviceChoice;
use sgmcmc::burn::tensor::Device;
use sgmcmc::models::posterior::Batch;
use sgmcmc::models::{Network, Posterior};
use sgmcmc::samplers::ensemble::ModuleEnsemble;
use sgmcmc::samplers::kernel::Kernel;
use sgmcmc::samplers::sampler::{Sampler, Sgmcmc, SgmcmcConfig};
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

criterion_group!(benches, overhead);
criterion_main!(benches);
