//! The ResNet20 figures: steps/s at the CIFAR and Fashion-MNIST shapes, device noise against
//! host noise, the fast layers against burn's modules, and peak memory.

use burn::tensor::Device;
use sgmcmc_models::{Likelihood, Posterior, ResNetConfig, Scale};
use sgmcmc_samplers::ensemble::{ModuleEnsemble, NoiseSource};
use sgmcmc_samplers::kernel::Kernel;
use sgmcmc_samplers::sampler::{Sampler, Sgmcmc, SgmcmcConfig};
use sgmcmc_samplers::transfer;

use crate::nets::net_rates;
use crate::timing::{Step, paired, rate, record};
use crate::workloads::{
    ReferenceResNet, grey_resnet20, image_batch, resnet_sampler, resnet_sampler_with,
};
use crate::{Amount, BenchArgs, Figure};
use sgmcmc_apps::AppError;

/// ResNet20 SGHMC training steps per second on `device` (an autodiff device), at the CIFAR
/// shape (3x32x32, batch 64) and at the Fashion-MNIST preset's (1x28x28, batch 128).
pub(crate) fn resnet_steps(
    a: &BenchArgs,
    device: &Device,
    figures: &mut Vec<Figure>,
) -> Result<(), AppError> {
    for (label, channels, side, batch, n) in [
        ("resnet20_b64", 3, 32, 64, 50_000),
        ("resnet20_28x28_b128", 1, 28, 128, 60_000),
    ] {
        let net = ResNetConfig::resnet20(10)
            .with_in_channels(channels)
            .init(device)
            .map_err(|e| AppError::Run(e.to_string()))?;
        let images = image_batch(batch, channels, side, device);
        let mut sghmc = resnet_sampler(net, n)?;
        let per_second = rate(a.seconds, || {
            sghmc.step(&images).map(|_| ()).map_err(Into::into)
        })?;
        figures.push(Figure {
            name: format!("{label}/sghmc steps on {}", a.on()),
            per_second,
        });
    }
    Ok(())
}

/// The Langevin noise drawn on the device against drawn on the host and uploaded (one upload
/// per parameter tensor per step), paired, on a ResNet20 SGHMC step at the Fashion-MNIST
/// preset's shape (batch `batch`: lavapipe takes seconds per step at 128); and what one step
/// moves between host and device with each ([`transfer::counts`]).
pub(crate) fn noise_rate(
    a: &BenchArgs,
    device: &Device,
    batch: usize,
    figures: &mut Vec<Figure>,
    ratios: &mut Vec<Figure>,
) -> Result<(), AppError> {
    let images = image_batch(batch, 1, 28, device);
    let grey = || grey_resnet20(device);
    let mut on_device = resnet_sampler_with(grey()?, 60_000, NoiseSource::Device)?;
    let mut on_host = resnet_sampler_with(grey()?, 60_000, NoiseSource::Host)?;
    for (what, s) in [("device", &mut on_device), ("host", &mut on_host)] {
        s.step(&images)?;
        let before = transfer::counts();
        s.step(&images)?;
        let moved = transfer::counts() - before;
        println!(
            "resnet20_28x28_b{batch}: one step, {what} noise: {} uploads, {} reads",
            moved.uploads, moved.reads
        );
    }
    let mut fd: Step = Box::new(|| on_device.step(&images).map(|_| ()).map_err(Into::into));
    let mut fh: Step = Box::new(|| on_host.step(&images).map(|_| ()).map_err(Into::into));
    let (rd, rh, ratio) = paired(a.seconds, &mut fd, &mut fh)?;
    let label = format!("resnet20_28x28_b{batch}");
    record(
        figures,
        ratios,
        [
            (format!("{label}/sghmc steps, device noise"), rd),
            (format!("{label}/sghmc steps, host noise"), rh),
        ],
        (format!("{label}/host noise:device noise step time"), ratio),
    );
    Ok(())
}

/// The fast layers against burn's modules alone on ResNet20 at the Fashion-MNIST preset's
/// shape (1x28x28, batch 128; paired, interleaved: the speed-up of `layers` on this machine),
/// and the sampler overheads on the network.
pub(crate) fn resnet_rate(
    a: &BenchArgs,
    device: &Device,
    figures: &mut Vec<Figure>,
    ratios: &mut Vec<Figure>,
) -> Result<(), AppError> {
    let fashion = image_batch(128, 1, 28, device);
    let grey = || grey_resnet20(device);
    let mut fast = resnet_sampler(grey()?, 60_000)?;
    let mut reference = resnet_sampler(ReferenceResNet { net: grey()? }, 60_000)?;
    let mut fa: Step = Box::new(|| fast.step(&fashion).map(|_| ()).map_err(Into::into));
    let mut fb: Step = Box::new(|| reference.step(&fashion).map(|_| ()).map_err(Into::into));
    let (ra, rb, ratio) = paired(a.seconds, &mut fa, &mut fb)?;
    let label = "resnet20_28x28_b128";
    record(
        figures,
        ratios,
        [
            (format!("{label}/sghmc steps"), ra),
            (format!("{label}/sghmc steps, burn modules only"), rb),
        ],
        (format!("{label}/burn modules:fast layers step time"), ratio),
    );
    // Sampler overhead on the network (SGLD, SGHMC, CSGLD, reSGLD against SGD or SGLD).
    let post = Posterior {
        likelihood: Likelihood::Categorical,
        scale: Scale::from_weight_decay(60_000, 5e-4),
    };
    let resnet = || grey().expect("a valid config");
    net_rates(a, label, resnet, &post, &fashion, figures, ratios)?;
    Ok(())
}

/// The peak resident memory of this process so far (`VmHWM`), in bytes, where Linux reports it.
pub(crate) fn peak_resident_bytes() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024.0)
}

/// Peak resident memory of ResNet20 SGHMC training at batch 256 (28x28): after two steps of one
/// chain, then after two steps of four chains, and the memory each chain beyond the first adds
/// (`(peak_4 - peak_1) / 3`). The peak only grows, so the one-chain figure is that of the
/// network only with `--only resnet` (earlier groups' peaks may hide it).
pub(crate) fn resnet_memory(device: &Device, memory: &mut Vec<Amount>) -> Result<(), AppError> {
    let Some(start) = peak_resident_bytes() else {
        return Ok(());
    };
    let batch = image_batch(256, 1, 28, device);
    let post = Posterior {
        likelihood: Likelihood::Categorical,
        scale: Scale::from_weight_decay(60_000, 5e-4),
    };
    let mut peaks = Vec::new();
    for chains in [1usize, 4] {
        let nets = (0..chains)
            .map(|_| ResNetConfig::resnet20(10).with_in_channels(1).init(device))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| AppError::Run(e.to_string()))?;
        let ens = ModuleEnsemble::new(post.clone(), nets, 1)?;
        let mut s = Sgmcmc::new(SgmcmcConfig::constant(Kernel::sghmc(), 1e-7, 1.0), ens)?;
        for _ in 0..2 {
            s.step(&batch)?;
        }
        peaks.push(peak_resident_bytes().unwrap_or(start));
    }
    let mib = |b: f64| b / (1024.0 * 1024.0);
    for (name, value) in [
        ("peak resident MiB, 1 chain".to_string(), mib(peaks[0])),
        ("peak resident MiB, 4 chains".to_string(), mib(peaks[1])),
        (
            "MiB per chain beyond the first".to_string(),
            mib((peaks[1] - peaks[0]) / 3.0),
        ),
    ] {
        memory.push(Amount {
            name: format!("resnet20_28x28_b256/sghmc {name}"),
            value,
        });
    }
    Ok(())
}
