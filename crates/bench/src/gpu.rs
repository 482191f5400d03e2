//! `sgmcmc bench --only gpu`: the figures of the one-shot GPU check (`scripts/gpu-check.sh`)
//! on one device, at the CIFAR shape (3x32x32):
//!
//! * ResNet20 SGHMC training steps/s at each `--batches` size (128 and 256 by default);
//! * ICSGHMC over 4 chains and DEO*-SGD over 8 rungs on ResNet20 at the first batch size
//!   (chain-steps/s: every chain steps on every batch), and the UCI network (13-50-1 MLP,
//!   batch 50) with 16 independent SGLD chains;
//! * the device memory its allocator holds after the ResNet20 runs of 1 and of 4 chains, and
//!   per chain (GPU devices; burn's CPU backends report none);
//!
//! and, as `--only seeded`, the energies of 20 SGHMC steps from one seed on host-made data,
//! with the weights drawn on the CPU and the Langevin noise drawn on the host, so that every
//! device computes the same chain and the script can compare flex, wgpu and cuda (within 1e-3
//! relative).

use burn::module::Module;
use burn::tensor::{Device, Int, Tensor, TensorData};
use sgmcmc_engine::init;
use sgmcmc_models::posterior::Batch;
use sgmcmc_models::{Likelihood, Posterior, ResNet, ResNetConfig, Scale, Targets};
use sgmcmc_samplers::ensemble::{ModuleEnsemble, NoiseSource};
use sgmcmc_samplers::kernel::Kernel;
use sgmcmc_samplers::sampler::{Sampler, Sgmcmc, SgmcmcConfig};

use crate::{Amount, BenchArgs, Figure, Step, mlp_workload, rate, resnet_sampler};
use sgmcmc_apps::AppError;
use sgmcmc_apps::images::config::ImagesConfig;

/// CIFAR-10's training set size: the `N` of the energy's `N / n` scaling.
const N_CIFAR: usize = 50_000;

/// What the GPU group measured.
#[derive(Default)]
pub struct GpuFigures {
    pub figures: Vec<Figure>,
    pub memory: Vec<Amount>,
}

/// `batch` 3x32x32 images made on the host (a fixed smooth pattern per image, the same bits on
/// every device) with labels `i % 10`, uploaded to `device`.
fn host_images(batch: usize, device: &Device) -> Batch<Tensor<4>> {
    let per = 3 * 32 * 32;
    let pixels: Vec<f32> = (0..batch * per)
        .map(|k| {
            let (i, j) = (k / per, k % per);
            ((0.37 * j as f32 + 1.3 * i as f32).sin() + 0.5 * (0.011 * (j * (i + 1)) as f32).cos())
                * 0.8
        })
        .collect();
    let labels: Vec<i64> = (0..batch as i64).map(|i| i % 10).collect();
    Batch {
        x: Tensor::from_data(TensorData::new(pixels, [batch, 3, 32, 32]), device),
        y: Targets::Class(Tensor::<1, Int>::from_data(labels.as_slice(), device)),
    }
}

/// The image tables' posterior: categorical likelihood, weight decay 5e-4 on the mean loss.
fn posterior() -> Posterior {
    Posterior {
        likelihood: Likelihood::Categorical,
        scale: Scale::from_weight_decay(N_CIFAR, 5e-4),
    }
}

/// `n` ResNet20 chains for 3x32x32 images, seeded, on `device` (an autodiff device).
fn resnets(device: &Device, n: usize) -> Result<Vec<ResNet>, AppError> {
    let config = resnet20()?;
    Ok(init::chains(device, 1, n, || {
        config.init(device).expect("checked by `resnet20`")
    }))
}

/// ResNet20 for 10 classes, its depth checked.
fn resnet20() -> Result<ResNetConfig, AppError> {
    let config = ResNetConfig::resnet20(10);
    config
        .blocks_per_stage()
        .map_err(|e| AppError::Run(e.to_string()))?;
    Ok(config)
}

/// Bytes the allocator of `device` holds now (`None` on burn's CPU backends).
fn held_bytes(device: &Device) -> Option<f64> {
    device
        .clone()
        .inner()
        .memory_pool_usage()
        .map(|u| u.bytes_reserved as f64)
}

/// Four steps of each of `steps` on a GPU device (none on the CPU backends): the first steps
/// there compile kernels, and autotune picks among them by timing.
pub fn warm_up(a: &BenchArgs, steps: &mut [&mut Step<'_>]) -> Result<(), AppError> {
    if a.on().is_gpu() {
        for _ in 0..4 {
            for step in steps.iter_mut() {
                step()?;
            }
        }
    }
    Ok(())
}

/// Steps per second of `step` after [`warm_up`].
fn warm_rate(a: &BenchArgs, mut step: Step<'_>) -> Result<f64, AppError> {
    warm_up(a, &mut [&mut step])?;
    rate(a.seconds, step)
}

/// Chain-steps per second of `name` over `chains` ResNet20 chains with the image tables'
/// CIFAR settings (`sgmcmc images --preset gpu`: its lr, temperature, ladder and partition).
fn resnet_chains_rate(
    a: &BenchArgs,
    device: &Device,
    name: &str,
    chains: usize,
    batch: &Batch<Tensor<4>>,
) -> Result<f64, AppError> {
    let mut config = ImagesConfig::preset("gpu", "cifar10", "resnet20", name)?;
    config.chains = chains;
    config.batch = batch.x.dims()[0];
    let per_epoch = (N_CIFAR / config.batch) as u64;
    let spec = config.spec(500 * per_epoch, per_epoch)?;
    let ens = ModuleEnsemble::new(posterior(), resnets(device, chains)?, 1)?;
    let mut s = spec.build(ens, 1)?;
    let r = warm_rate(
        a,
        Box::new(|| s.step(batch).map(|_| ()).map_err(Into::into)),
    )?;
    Ok(r * chains as f64)
}

/// The seeded chain's lr (5e-4 on the mean loss): small enough that rounding differences of
/// 1e-7 between backends stay far under the check's 1e-3 over 20 steps (at 1e-7, the benches'
/// lr, the energy falls threefold in 10 steps of a batch of 4 and flex and ndarray part by
/// 1.2e-3; at 1e-8 and batch 16 they part by 1e-5, flex and wgpu by 5e-6).
const SEEDED_LR: f64 = 1e-8;

/// The energies of 20 SGHMC steps of ResNet20 from seed 1: weights drawn on flex and moved to
/// `device`, host noise, host-made images (the same chain on every device up to rounding).
pub fn seeded_energies(device: &Device, batch: usize) -> Result<Vec<f64>, AppError> {
    let cpu = Device::flex().autodiff();
    let config = resnet20()?;
    let net = init::seeded(&cpu, 1, || {
        config.init(&cpu).expect("checked by `resnet20`")
    })
    .fork(device);
    let ens = ModuleEnsemble::new(posterior(), vec![net], 1)?.with_noise(NoiseSource::Host);
    let mut s = Sgmcmc::new(SgmcmcConfig::constant(Kernel::sghmc(), SEEDED_LR, 1.0), ens)?;
    let images = host_images(batch, device);
    let mut energies = Vec::with_capacity(20);
    for _ in 0..20 {
        s.step(&images)?;
        energies.push(s.report().energies[0]);
    }
    Ok(energies)
}

/// Runs the group on `device` (an autodiff device).
pub fn measure(a: &BenchArgs, device: &Device) -> Result<GpuFigures, AppError> {
    let mut out = GpuFigures::default();
    let on = a.on();
    let first = a.first_batch()?;
    for &b in &a.batches {
        let images = host_images(b, device);
        let net = resnets(device, 1)?.remove(0);
        let mut s = resnet_sampler(net, N_CIFAR)?;
        let r = warm_rate(
            a,
            Box::new(|| s.step(&images).map(|_| ()).map_err(Into::into)),
        )?;
        out.figures.push(Figure {
            name: format!("resnet20_3x32x32_b{b}/sghmc steps on {on}"),
            per_second: r,
        });
        if b == first
            && let Some(bytes) = held_bytes(device)
        {
            out.memory.push(Amount {
                name: format!("resnet20_3x32x32_b{b}/sghmc x1 device bytes held on {on}"),
                value: bytes,
            });
        }
    }
    let images = host_images(first, device);
    for (name, chains) in [("icsghmc", 4), ("deo-sgd", 8)] {
        let r = resnet_chains_rate(a, device, name, chains, &images)?;
        out.figures.push(Figure {
            name: format!("resnet20_3x32x32_b{first}/{name} x{chains} chain-steps on {on}"),
            per_second: r,
        });
        if chains == 4
            && let Some(bytes) = held_bytes(device)
        {
            let one = out.memory.first().map_or(0.0, |m| m.value);
            out.memory.push(Amount {
                name: format!("resnet20_3x32x32_b{first}/{name} x4 device bytes held on {on}"),
                value: bytes,
            });
            out.memory.push(Amount {
                name: format!("resnet20_3x32x32_b{first}/device bytes per extra chain on {on}"),
                value: (bytes - one) / 3.0,
            });
        }
    }
    let plain = device.clone().inner();
    let (mlp, post, batch) = mlp_workload(&plain);
    let nets = init::chains(&plain, 1, 16, || mlp.init(&plain));
    let ens = ModuleEnsemble::new(sgmcmc_models::mlp::MlpPosterior::new(post), nets, 1)?;
    let mut s = Sgmcmc::new(SgmcmcConfig::constant(Kernel::Sgld, 1e-6, 1.0), ens)?;
    let r = warm_rate(
        a,
        Box::new(|| s.step(&batch).map(|_| ()).map_err(Into::into)),
    )?;
    out.figures.push(Figure {
        name: format!("mlp13-50-1_b50/sgld x16 chain-steps on {on}"),
        per_second: 16.0 * r,
    });
    Ok(out)
}
