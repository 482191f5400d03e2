//! `sgmcmc bench`: throughput and sampler overhead measured in one run, as ratios.
//!
//! * toy: chain-steps/s of SGLD on the 25-mode target with 1, 16 and 1000 chains, on the host
//!   `f64` path and as rows of one tensor on `--device`;
//! * the BlackJAX comparison: SGLD with a streaming BMA on a digits-shaped 64-100-10 tanh MLP
//!   (batch 100), with the autodiff `Posterior` and with the closed-form `MlpPosterior` on the
//!   plain device, paired, and the autodiff path with its Gaussian prior detached (the
//!   default) against the prior on the autodiff graph;
//! * nets: steps/s (forward + backward + update) of SGD, SGLD, SGHMC, CSGLD and reSGLD on the
//!   MLP 13-50-1 (batch 50; autodiff and closed-form gradients) and the papers' CNN (batch 256)
//!   on `--device`, and SGLD/SGD, SGHMC/SGD, CSGLD/SGLD, reSGLD/SGLD; VR-reSGLD/reSGLD per step
//!   and with its full-data pass amortised over one and two epochs.
//!
//! * resnet: ResNet20 SGHMC steps/s at the CIFAR shape and at the Fashion-MNIST preset's shape
//!   (batch 128), the fast flex layers paired with burn's modules, the same sampler overheads as
//!   the nets above, and the peak resident memory with 1 and 4 chains at batch 256.
//!
//! `--only` picks groups. The criterion benches in `benches/` measure the same things with statistics; this command
//! gives the figures on any machine from the binary alone.

use std::path::PathBuf;
use std::time::Instant;

use burn::module::{Module, ParamId};
use burn::tensor::{Device, Distribution, Int, Tensor};
use clap::Args;
use serde::Serialize;
use sgmcmc_models::mlp::MlpPosterior;
use sgmcmc_models::posterior::Batch;
use sgmcmc_models::{
    Activation, CnnConfig, Gaussian, Likelihood, Mlp, MlpConfig, Network, Posterior, Prior, ResNet,
    ResNetConfig, Scale, Targets,
};
use sgmcmc_samplers::control::{EnergyPartition, Ladder, RandomField, Smoothing, SwapScheme};
use sgmcmc_samplers::density::Target;
use sgmcmc_samplers::density::particles::Particles;
use sgmcmc_samplers::density::toy::by_name;
use sgmcmc_samplers::ensemble::{HostEnsemble, ModuleEnsemble, NoiseSource};
use sgmcmc_samplers::kernel::Kernel;
use sgmcmc_samplers::rng::ChainRng;
use sgmcmc_samplers::sampler::{
    Contour, ContourConfig, ControlSettings, ReplicaConfig, ReplicaExchange, Sampler, Sgmcmc,
    SgmcmcConfig, SwapRule, VarianceReduced, VrConfig,
};
use sgmcmc_samplers::transfer;

use crate::device::DeviceChoice;
use crate::error::AppError;
use crate::output::{self, RunHeader};

/// Options of `sgmcmc bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Tensor device for the tensor measurements: flex, ndarray, wgpu or cuda (wgpu:N or cuda:N for GPU N).
    #[arg(long, default_value_t = DeviceChoice::Flex, value_name = "DEVICE")]
    pub device: DeviceChoice,
    /// Seconds per measurement (after one warm-up step).
    #[arg(long, default_value_t = 2.0)]
    pub seconds: f64,
    /// Skip the CNN and ResNet (slow on ndarray and software GPUs).
    #[arg(long)]
    pub no_cnn: bool,
    /// Batch sizes of the `gpu` group's ResNet20 steps (3x32x32 images; the first also for
    /// the coupled chains).
    #[arg(long, value_delimiter = ',', default_values_t = [128usize, 256])]
    pub batches: Vec<usize>,
    /// Run only these groups (repeat or comma-separate; default: all but `noise`, `gpu`,
    /// `seeded` and `input`).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub only: Vec<Group>,
    /// Run directory.
    #[arg(long, default_value = "runs/bench")]
    pub out: PathBuf,
    /// Measure chains spread over the ranks of `mpirun` instead (feature `mpi`): the swap round
    /// of DEO* for 4 and 8 chains, 4 independent CNN chains over the ranks against threads, and
    /// the coupling's share of a ResNet20 step ([`crate::bench_distributed`]).
    #[arg(long)]
    pub distributed: bool,
    /// Replacing an earlier run in `--out`.
    #[command(flatten)]
    pub force: output::Force,
}

/// A group of measurements of `sgmcmc bench`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Group {
    /// Toy targets: host and tensor chains.
    Toy,
    /// The digits MLP (the BlackJAX comparison) and the 13-50-1 MLP.
    Mlp,
    /// The papers' MNIST CNN.
    Cnn,
    /// ResNet20: steps/s, the fast layers against burn's modules, sampler overheads, memory.
    Resnet,
    /// ResNet20 steps/s alone, at the CIFAR and Fashion-MNIST shapes (a few steps: what CI
    /// measures on wgpu through a software Vulkan driver).
    ResnetSteps,
    /// The Langevin noise drawn on the device against on the host (ResNet20 SGHMC, paired;
    /// batch 16 on a software device, 128 elsewhere) and the transfers of a step.
    Noise,
    /// The one-shot GPU check's figures on `--device` ([`crate::bench_gpu`]): ResNet20 SGHMC
    /// steps/s at each `--batches` size, ICSGHMC x4 and DEO*-SGD x8 chain-steps/s, the UCI MLP
    /// with 16 chains and the device memory held.
    Gpu,
    /// The energies of a seeded 20-step ResNet20 SGHMC chain that every device computes alike
    /// (weights drawn on the CPU, host noise, host-made images), batch: the first `--batches`
    /// size held to 16..=32 (on fewer images batch norm makes the chain amplify rounding: at
    /// batch 4 flex and ndarray part by 3e-4 within 20 steps, at 16 by 1e-5).
    Seeded,
    /// The input pipeline's share of a ResNet20 images step (crops, flips, normalisation,
    /// upload) and the step with its batches prepared on a background thread, paired
    /// ([`crate::bench_input`]); batch: the first `--batches` size.
    Input,
}

impl BenchArgs {
    /// The first `--batches` size.
    pub(crate) fn first_batch(&self) -> Result<usize, AppError> {
        match self.batches.first() {
            Some(&b) if self.batches.iter().all(|&b| b > 0) => Ok(b),
            _ => Err(AppError::Usage(
                "--batches needs batch sizes of at least 1".into(),
            )),
        }
    }

    fn runs(&self, g: Group) -> bool {
        let convolutional = matches!(g, Group::Cnn | Group::Resnet | Group::ResnetSteps);
        (self.only.is_empty() || self.only.contains(&g)) && !(convolutional && self.no_cnn)
    }
}

/// One measured figure (a rate, or a time where its name says so).
#[derive(Serialize)]
pub(crate) struct Figure {
    pub(crate) name: String,
    pub(crate) per_second: f64,
}

/// A measured amount that is not a rate (memory).
#[derive(Serialize)]
pub(crate) struct Amount {
    pub(crate) name: String,
    pub(crate) value: f64,
}

/// `summary.json` of a benchmark run.
#[derive(Serialize)]
pub(crate) struct BenchSummary {
    #[serde(flatten)]
    pub(crate) header: RunHeader,
    pub(crate) figures: Vec<Figure>,
    pub(crate) ratios: Vec<Figure>,
    pub(crate) memory: Vec<Amount>,
    /// The `gpu` group's seeded 20-step chain: its energies, to compare across devices.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) energies: Vec<f64>,
}

/// On-CPU nanoseconds of all threads of this process (first field of each thread's
/// `schedstat`; Linux, 0 elsewhere): with wall time, what a measurement cost this process
/// whatever its neighbours did.
pub fn cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// The MLP benchmark: 13-50-1 ReLU network, batch 50 of random regression data, Gaussian
/// likelihood, N = 1000, prior precision 1 (UCI scale).
pub fn mlp_workload(device: &Device) -> (MlpConfig, Posterior, Batch<Tensor<2>>) {
    let x = Tensor::<2>::random([50, 13], Distribution::Normal(0.0, 1.0), device);
    let y = Tensor::<2>::random([50, 1], Distribution::Normal(0.0, 1.0), device);
    let mlp = MlpConfig {
        inputs: 13,
        hidden: vec![50],
        outputs: 1,
        activation: Activation::Relu,
    };
    let post = Posterior {
        likelihood: Likelihood::Gaussian { precision: 1.0 },
        scale: Scale {
            n_data: 1000,
            prior_precision: 1.0,
        },
    };
    (
        mlp,
        post,
        Batch {
            x,
            y: Targets::Real(y),
        },
    )
}

/// The CNN benchmark: the papers' network (conv 1->32 5x5, pool, conv 32->64 5x5, pool, fc 50,
/// fc 5) on a batch of 256 random 28x28 images, categorical likelihood, N = 30,000.
pub fn cnn_workload(device: &Device) -> (CnnConfig, Posterior, Batch<Tensor<4>>) {
    let x = Tensor::<4>::random([256, 1, 28, 28], Distribution::Normal(0.0, 1.0), device);
    let labels: Vec<i64> = (0..256).map(|i| i % 5).collect();
    let y = Tensor::<1, Int>::from_data(labels.as_slice(), device);
    let cnn = CnnConfig {
        classes: 5,
        ..CnnConfig::default()
    };
    let post = Posterior {
        likelihood: Likelihood::Categorical,
        scale: Scale::from_weight_decay(30_000, 1e-3),
    };
    (
        cnn,
        post,
        Batch {
            x,
            y: Targets::Class(y),
        },
    )
}

/// ResNet20 through burn's own `Conv2d` and `BatchNorm` modules only
/// ([`ResNet::forward_reference`]): the path the fast layers replace, measured beside them.
#[derive(Module, Debug)]
struct ReferenceResNet {
    net: ResNet,
}

impl Network for ReferenceResNet {
    type Input = Tensor<4>;

    fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        self.net.forward_reference(x)
    }
}

/// A batch of `batch` random `[channels, side, side]` images with labels `i % 10`.
fn image_batch(batch: usize, channels: usize, side: usize, device: &Device) -> Batch<Tensor<4>> {
    let x = Tensor::<4>::random(
        [batch, channels, side, side],
        Distribution::Normal(0.0, 1.0),
        device,
    );
    let labels: Vec<i64> = (0..batch as i64).map(|i| i % 10).collect();
    Batch {
        x,
        y: Targets::Class(Tensor::<1, Int>::from_data(labels.as_slice(), device)),
    }
}

/// SGHMC on ResNet20 with the image tables' prior (weight decay 5e-4 on the mean loss, i.e.
/// precision `N * 5e-4` at full-data scale), categorical likelihood, one chain.
pub(crate) fn resnet_sampler<M: Network<Input = Tensor<4>>>(
    net: M,
    n_data: usize,
) -> Result<Sgmcmc<ModuleEnsemble<M, Posterior>>, AppError> {
    resnet_sampler_with(net, n_data, NoiseSource::Auto)
}

/// [`resnet_sampler`] with its Langevin noise drawn from `noise`.
fn resnet_sampler_with<M: Network<Input = Tensor<4>>>(
    net: M,
    n_data: usize,
    noise: NoiseSource,
) -> Result<Sgmcmc<ModuleEnsemble<M, Posterior>>, AppError> {
    let post = Posterior {
        likelihood: Likelihood::Categorical,
        scale: Scale::from_weight_decay(n_data, 5e-4),
    };
    let ens = ModuleEnsemble::new(post, vec![net], 1)?.with_noise(noise);
    Ok(Sgmcmc::new(
        SgmcmcConfig::constant(Kernel::sghmc(), 1e-7, 1.0),
        ens,
    )?)
}

/// ResNet20 SGHMC training steps per second on `device` (an autodiff device), at the CIFAR
/// shape (3x32x32, batch 64) and at the Fashion-MNIST preset's (1x28x28, batch 128).
fn resnet_steps(a: &BenchArgs, device: &Device, figures: &mut Vec<Figure>) -> Result<(), AppError> {
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
            name: format!("{label}/sghmc steps on {}", a.device),
            per_second,
        });
    }
    Ok(())
}

/// ResNet20 for one-channel images (the Fashion-MNIST preset's network) on `device`.
fn grey_resnet20(device: &Device) -> Result<ResNet, AppError> {
    ResNetConfig::resnet20(10)
        .with_in_channels(1)
        .init(device)
        .map_err(|e| AppError::Run(e.to_string()))
}

/// The Langevin noise drawn on the device against drawn on the host and uploaded (one upload
/// per parameter tensor per step), paired, on a ResNet20 SGHMC step at the Fashion-MNIST
/// preset's shape (batch `batch`: lavapipe takes seconds per step at 128); and what one step
/// moves between host and device with each ([`transfer::counts`]).
fn noise_rate(
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
fn resnet_rate(
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
fn peak_resident_bytes() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024.0)
}

/// Peak resident memory of ResNet20 SGHMC training at batch 256 (28x28): after two steps of one
/// chain, then after two steps of four chains, and the memory each chain beyond the first adds
/// (`(peak_4 - peak_1) / 3`). The peak only grows, so the one-chain figure is that of the
/// network only with `--only resnet` (earlier groups' peaks may hide it).
fn resnet_memory(device: &Device, memory: &mut Vec<Amount>) -> Result<(), AppError> {
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

/// Steps per second of `step` over about `seconds`.
pub(crate) fn rate(
    seconds: f64,
    mut step: impl FnMut() -> Result<(), AppError>,
) -> Result<f64, AppError> {
    step()?;
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed().as_secs_f64() < seconds || n < 3 {
        step()?;
        n += 1;
    }
    Ok(n as f64 / start.elapsed().as_secs_f64())
}

fn toy_rates(a: &BenchArgs, device: &Device, out: &mut Vec<Figure>) -> Result<(), AppError> {
    let cfg = SgmcmcConfig::constant(Kernel::Sgld, 3e-3, 1.0);
    for chains in [1usize, 16, 1000] {
        let starts = vec![vec![0.5, -0.5]; chains];
        let t = by_name("twenty-five-mode")?;
        let mut host = Sgmcmc::new(cfg.clone(), HostEnsemble::new(t.clone(), &starts, 1)?)?;
        let r = rate(a.seconds, || host.step(&()).map(|_| ()).map_err(Into::into))?;
        out.push(Figure {
            name: format!("toy/host/{chains} chain-steps"),
            per_second: r * chains as f64,
        });
        let p = Particles::from_rows(&starts, device)?;
        let mut dev = Sgmcmc::new(cfg.clone(), ModuleEnsemble::new(t, vec![p], 1)?)?;
        let r = rate(a.seconds, || dev.step(&()).map(|_| ()).map_err(Into::into))?;
        out.push(Figure {
            name: format!("toy/{}/{chains} chain-steps", a.device),
            per_second: r * chains as f64,
        });
    }
    Ok(())
}

/// reSGLD over two chains at temperatures (1, 10), lr 1e-6, a Metropolis test every step.
fn resgld2() -> Result<ReplicaConfig, AppError> {
    Ok(ReplicaConfig {
        kernel: Kernel::Sgld,
        ladder: Ladder::tempered(vec![1.0, 10.0], vec![1e-6, 1e-6])?,
        scheme: SwapScheme::Adjacent,
        rule: SwapRule::Metropolis {
            correction: 1.0,
            initial_variance: 1.0,
            smoothing: Smoothing::RunningMean,
            cooling: 0,
        },
        refresh: None,
        lr_scale: None,
    })
}

/// A step under measurement.
pub(crate) type Step<'a> = Box<dyn FnMut() -> Result<(), AppError> + 'a>;

/// Interleaved timing of `b` against `a` in 8 alternating bursts of `seconds / 8` each (so both
/// see the same machine state): the two rates and the median over bursts of the step-time ratio
/// `time(b) / time(a)`.
pub(crate) fn paired(
    seconds: f64,
    a: &mut Step,
    b: &mut Step,
) -> Result<(f64, f64, f64), AppError> {
    let rounds = 8;
    let (mut ra, mut rb, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let x = rate(seconds / rounds as f64, &mut *a)?;
        let y = rate(seconds / rounds as f64, &mut *b)?;
        ra.push(x);
        rb.push(y);
        ratios.push(x / y);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    ratios.sort_by(f64::total_cmp);
    Ok((mean(&ra), mean(&rb), 0.5 * (ratios[3] + ratios[4])))
}

fn net_rates<M: Module, T: Target<M> + Clone>(
    a: &BenchArgs,
    label: &str,
    make: impl Fn() -> M,
    target: &T,
    batch: &T::Batch,
    figures: &mut Vec<Figure>,
    ratios: &mut Vec<Figure>,
) -> Result<(), AppError> {
    let one = || ModuleEnsemble::new(target.clone(), vec![make()], 1);
    let two = || ModuleEnsemble::new(target.clone(), vec![make(), make()], 1);
    let plain = |k: Kernel| SgmcmcConfig::constant(k, 1e-6, 1.0);
    let mut sgd = Sgmcmc::new(plain(Kernel::Sgd), one()?)?;
    let mut sgld = Sgmcmc::new(plain(Kernel::Sgld), one()?)?;
    let mut sghmc = Sgmcmc::new(plain(Kernel::sghmc()), one()?)?;
    // CSGLD: 100 bins, power field (O(m) scalar work per step).
    let csgld_cfg = ContourConfig::new(
        plain(Kernel::Sgld),
        EnergyPartition::new(0.0, 100.0, 100)?,
        RandomField::Power,
        0.75,
    );
    let mut csgld = Contour::new(csgld_cfg, one()?)?;
    // reSGLD x 2 (a Metropolis swap test every step) against two independent SGLD chains.
    let mut sgld2 = Sgmcmc::new(plain(Kernel::Sgld), two()?)?;
    let re_cfg = resgld2()?;
    let mut resgld = ReplicaExchange::new(re_cfg, two()?, 1)?;
    let mut sgd_b = Sgmcmc::new(plain(Kernel::Sgd), one()?)?;
    let mut sgld_b = Sgmcmc::new(plain(Kernel::Sgld), one()?)?;
    fn step<'a, S: Sampler>(s: &'a mut S, b: &'a S::Batch) -> Step<'a> {
        Box::new(move || s.step(b).map(|_| ()).map_err(Into::into))
    }
    let comparisons: [(&str, &str, Step, Step); 4] = [
        ("sgd", "sgld", step(&mut sgd, batch), step(&mut sgld, batch)),
        (
            "sgd",
            "sghmc",
            step(&mut sgd_b, batch),
            step(&mut sghmc, batch),
        ),
        (
            "sgld",
            "csgld",
            step(&mut sgld_b, batch),
            step(&mut csgld, batch),
        ),
        (
            "sgld x2",
            "resgld x2",
            step(&mut sgld2, batch),
            step(&mut resgld, batch),
        ),
    ];
    for (na, nb, mut fa, mut fb) in comparisons {
        let (ra, rb, ratio) = paired(a.seconds, &mut fa, &mut fb)?;
        for (n, r) in [(na, ra), (nb, rb)] {
            let name = format!("{label}/{n} steps");
            if !figures.iter().any(|f: &Figure| f.name == name) {
                figures.push(Figure {
                    name,
                    per_second: r,
                });
            }
        }
        ratios.push(Figure {
            name: format!("{label}/{nb}:{na} step time"),
            per_second: ratio,
        });
    }
    Ok(())
}

/// VR-reSGLD x2 against reSGLD x2 on a network: per step, each chain's snapshot is evaluated
/// on the step's minibatch (a forward pass, `Target::batch_energies`), and every `m` steps each
/// chain takes a new snapshot and a full-data pass (`passes` forward passes). The per-step
/// ratio is timed paired with no full pass in the window; the full pass is timed on its own
/// (a step with `m = 1`, less a step without) and amortised over each `m` of `periods`.
#[allow(clippy::too_many_arguments)]
fn vr_overhead<M: Module, T: Target<M> + Clone>(
    a: &BenchArgs,
    label: &str,
    make: impl Fn() -> M,
    target: &T,
    batch: &T::Batch,
    passes: usize,
    periods: &[u64],
    ratios: &mut Vec<Figure>,
) -> Result<(), AppError>
where
    T::Batch: Clone + Send + Sync + 'static,
{
    let cfg = resgld2()?;
    let two = || ModuleEnsemble::new(target.clone(), vec![make(), make()], 1);
    let vr = |period: u64| -> Result<VarianceReduced<_>, AppError> {
        let vr_cfg = VrConfig {
            replica: cfg.clone(),
            control: Some(ControlSettings {
                period,
                coefficient: -1.0,
                adapt: None,
            }),
            refresh: None,
        };
        let (b1, b2) = (batch.clone(), batch.clone());
        Ok(
            VarianceReduced::new(vr_cfg, two()?, Box::new(move |_, _| b1.clone()), 1)?
                .with_full_pass(Box::new(move |i| (i < passes).then(|| b2.clone()))),
        )
    };
    let mut plain = ReplicaExchange::new(cfg.clone(), two()?, 1)?;
    // The snapshot at step 0 falls in the warm-up step; none after it.
    let mut steady = vr(u64::MAX)?;
    let mut a_step: Step = Box::new(|| plain.step(batch).map(|_| ()).map_err(Into::into));
    let mut b_step: Step = Box::new(|| steady.step(batch).map(|_| ()).map_err(Into::into));
    let (r_plain, r_steady, ratio) = paired(a.seconds, &mut a_step, &mut b_step)?;
    ratios.push(Figure {
        name: format!("{label}/vr-resgld x2 (no full pass):resgld x2 step time"),
        per_second: ratio,
    });
    // Every step takes a snapshot and a full pass: two timed steps after a warm-up.
    let mut every = vr(1)?;
    every.step(batch)?;
    let start = Instant::now();
    for _ in 0..2 {
        every.step(batch)?;
    }
    let full_pass = (start.elapsed().as_secs_f64() / 2.0 - 1.0 / r_steady).max(0.0);
    for &m in periods {
        ratios.push(Figure {
            name: format!("{label}/vr-resgld x2 (m = {m}, amortised):resgld x2 step time"),
            per_second: (1.0 / r_steady + full_pass / m as f64) * r_plain,
        });
    }
    Ok(())
}

/// The digits-shaped data of the BlackJAX comparison (random values: the speed does not depend
/// on them), on one device.
struct Digits {
    x: Tensor<2>,
    y: Tensor<1, Int>,
    x_test: Tensor<2>,
}

impl Digits {
    fn new(device: &Device) -> Self {
        let (n, n_test) = (1437usize, 360usize);
        let labels: Vec<i64> = (0..n as i64).map(|i| i % 10).collect();
        Self {
            x: Tensor::<2>::random([n, 64], Distribution::Normal(0.0, 1.0), device),
            y: Tensor::<1, Int>::from_data(labels.as_slice(), device),
            x_test: Tensor::<2>::random([n_test, 64], Distribution::Normal(0.0, 1.0), device),
        }
    }
}

/// One SGLD step of the BlackJAX comparison on `target`: a random window of 100 consecutive
/// training points (a `slice`, no index upload), and every 100 steps the softmax predictions on
/// the test set added to a streaming Bayesian model average (forward pass on the plain device).
fn digits_step<'a, T>(
    device: &Device,
    target: T,
    data: &'a Digits,
    seed: u64,
) -> Result<Step<'a>, AppError>
where
    T: Target<Mlp, Batch = Batch<Tensor<2>>> + 'a,
{
    let ens = ModuleEnsemble::new(target, vec![crate::digits::network(100).init(device)], seed)?;
    let mut s = Sgmcmc::new(SgmcmcConfig::constant(Kernel::Sgld, 1e-5, 1.0), ens)?;
    let mut bma = sgmcmc_models::metrics::Bma::default();
    let mut rng = ChainRng::new(3, seed);
    let n = data.x.dims()[0];
    let x_test = data.x_test.clone().inner();
    let mut k = 0u64;
    Ok(Box::new(move || {
        let start = rng.below(n - 100);
        let b = Batch {
            x: data.x.clone().slice(start..start + 100),
            y: Targets::Class(data.y.clone().slice(start..start + 100)),
        };
        s.step(&b)?;
        k += 1;
        if k.is_multiple_of(100) {
            let m = s.ensemble().modules().next().expect("one chain");
            bma.add(1.0, &crate::digits::predict(m, &x_test)?);
        }
        Ok(())
    }))
}

/// The BlackJAX comparison: SGLD on a 64-100-10 tanh MLP at batch 100 (the shape of sklearn's
/// digits: 1437 training and 360 test points, 10 classes), with a streaming Bayesian model
/// average of the test predictions every 100 steps. Reports steps/s including the averaging,
/// for the autodiff [`Posterior`] and for the closed-form [`MlpPosterior`] on the plain device
/// (paired, interleaved), and their step-time ratio; then the autodiff path with the Gaussian
/// prior detached (its default, [`Prior::add_detached`]) against the prior on the graph.
fn digits_rate(
    a: &BenchArgs,
    device: &Device,
    figures: &mut Vec<Figure>,
    ratios: &mut Vec<Figure>,
) -> Result<(), AppError> {
    let ad = device.clone().autodiff();
    let post = Posterior {
        likelihood: Likelihood::Categorical,
        scale: Scale::from_weight_decay(1437, 1e-4),
    };
    let (on_ad, plain) = (Digits::new(&ad), Digits::new(device));
    let mut autodiff = digits_step(&ad, post.clone(), &on_ad, 1)?;
    let mut closed = digits_step(device, MlpPosterior::new(post.clone()), &plain, 1)?;
    let (ra, rb, ratio) = paired(a.seconds, &mut autodiff, &mut closed)?;
    let label = "mlp64-100-10_tanh_b100";
    record(
        figures,
        ratios,
        [
            (format!("{label}/sgld+bma steps"), ra),
            (format!("{label}/closed-form sgld+bma steps"), rb),
        ],
        (format!("{label}/closed-form:autodiff step time"), ratio),
    );
    let on_graph = post.as_model_posterior().with_prior(OnGraph(post.prior()));
    let mut graph = digits_step(&ad, on_graph, &on_ad, 1)?;
    let mut autodiff = digits_step(&ad, post, &on_ad, 1)?;
    let (rg, _, ratio) = paired(a.seconds, &mut graph, &mut autodiff)?;
    figures.push(Figure {
        name: format!("{label}/sgld+bma steps, prior on the graph"),
        per_second: rg,
    });
    ratios.push(Figure {
        name: format!("{label}/detached:graph prior step time"),
        per_second: ratio,
    });
    Ok(())
}

/// A prior on the autodiff graph only (no [`Prior::add_detached`]): the reference the detached
/// Gaussian prior is timed against.
struct OnGraph(Gaussian);

impl<M: Module> Prior<M> for OnGraph {
    fn energy(&self, model: &M, exclude: &[ParamId]) -> Option<Tensor<1>> {
        self.0.energy(model, exclude)
    }
}

/// Adds two rates and their ratio to the figures.
fn record(
    figures: &mut Vec<Figure>,
    ratios: &mut Vec<Figure>,
    rates: [(String, f64); 2],
    ratio: (String, f64),
) {
    for (name, per_second) in rates {
        figures.push(Figure { name, per_second });
    }
    ratios.push(Figure {
        name: ratio.0,
        per_second: ratio.1,
    });
}

/// Independent SGLD chains on threads: chain-steps/s of one chain at its best thread count
/// (1 or 2 compute threads) against two chains stepped in parallel on a 2-thread pool, and the
/// ratio `two chains : one chain` (2.0 is perfect scaling on two cores).
fn chain_scaling<M: Module, T: Target<M> + Clone + Send>(
    a: &BenchArgs,
    label: &str,
    make: impl Fn() -> M + Sync,
    target: &T,
    batch: &T::Batch,
    figures: &mut Vec<Figure>,
    ratios: &mut Vec<Figure>,
) -> Result<(), AppError> {
    let chains =
        |n: usize| ModuleEnsemble::new(target.clone(), (0..n).map(|_| make()).collect(), 1);
    let sgld = || SgmcmcConfig::constant(Kernel::Sgld, 1e-6, 1.0);
    let mut one_best = 0.0f64;
    for threads in [1, 2] {
        let mut s = Sgmcmc::new(sgld(), chains(1)?)?;
        let r = crate::threads::with_threads(threads, || {
            rate(a.seconds, || s.step(batch).map(|_| ()).map_err(Into::into))
        })??;
        one_best = one_best.max(r);
    }
    let mut s = Sgmcmc::new(sgld(), chains(2)?)?;
    let two = 2.0
        * crate::threads::with_threads(2, || {
            rate(a.seconds, || s.step(batch).map(|_| ()).map_err(Into::into))
        })??;
    record(
        figures,
        ratios,
        [
            (
                format!("{label}/sgld x1 chain-steps (best of 1, 2 threads)"),
                one_best,
            ),
            (format!("{label}/sgld x2 chain-steps (2 threads)"), two),
        ],
        (
            format!("{label}/2 chains:1 chain chain-steps"),
            two / one_best,
        ),
    );
    Ok(())
}

/// Runs the benchmarks and writes `summary.json`.
pub fn run(a: &BenchArgs) -> Result<(), AppError> {
    if !(a.seconds.is_finite() && a.seconds > 0.0) {
        return Err(AppError::Usage(format!(
            "--seconds must be finite and > 0, got {}",
            a.seconds
        )));
    }
    if a.distributed {
        return crate::bench_distributed::run(a);
    }
    let start = Instant::now();
    let device = a.device.tensor_device("bench")?;
    output::fresh_run_dir(&a.out, a.force.force, &["summary.json"])?;
    let ad = device.clone().autodiff();
    let (mut figures, mut ratios, mut memory) = (Vec::new(), Vec::new(), Vec::new());
    if a.runs(Group::Toy) {
        toy_rates(a, &device, &mut figures)?;
    }
    if a.runs(Group::Mlp) {
        // The small networks compute on one thread (see `crate::threads`), the CNN on all cores.
        crate::threads::with_threads(1, || mlp_rates(a, &device, &mut figures, &mut ratios))??;
        let (mlp, post, batch) = mlp_workload(&device);
        chain_scaling(
            a,
            "mlp13-50-1_b50/closed-form",
            || mlp.init(&device),
            &MlpPosterior::new(post),
            &batch,
            &mut figures,
            &mut ratios,
        )?;
    }
    if a.runs(Group::Cnn) {
        let (cnn, post, batch) = cnn_workload(&ad);
        net_rates(
            a,
            "cnn_b256",
            || cnn.init(&ad),
            &post,
            &batch,
            &mut figures,
            &mut ratios,
        )?;
        chain_scaling(
            a,
            "cnn_b256",
            || cnn.init(&ad),
            &post,
            &batch,
            &mut figures,
            &mut ratios,
        )?;
        // Full passes of one and two epochs (two: the papers' CIFAR period).
        let passes = post.scale.n_data / 256;
        let periods = [passes as u64, 2 * passes as u64];
        let make = || cnn.init(&ad);
        vr_overhead(
            a,
            "cnn_b256",
            make,
            &post,
            &batch,
            passes,
            &periods,
            &mut ratios,
        )?;
    }
    if a.runs(Group::Resnet) || a.runs(Group::ResnetSteps) {
        resnet_steps(a, &ad, &mut figures)?;
    }
    if a.only.contains(&Group::Noise) {
        let batch = if a.device.is_gpu() { 16 } else { 128 };
        noise_rate(a, &ad, batch, &mut figures, &mut ratios)?;
    }
    if a.runs(Group::Resnet) {
        resnet_memory(&ad, &mut memory)?;
        resnet_rate(a, &ad, &mut figures, &mut ratios)?;
    }
    if a.only.contains(&Group::Gpu) {
        let gpu = crate::bench_gpu::measure(a, &ad)?;
        figures.extend(gpu.figures);
        memory.extend(gpu.memory);
    }
    if a.only.contains(&Group::Input) {
        let (f, r) = crate::bench_input::measure(a, &ad)?;
        figures.extend(f);
        ratios.extend(r);
    }
    let mut energies = Vec::new();
    if a.only.contains(&Group::Seeded) {
        energies = crate::bench_gpu::seeded_energies(&ad, a.first_batch()?.clamp(16, 32))?;
        println!("seeded 20-step energies: {energies:?}");
    }
    for f in &figures {
        println!("{:<40} {:>14.1} /s", f.name, f.per_second);
    }
    for r in &ratios {
        println!("{:<40} {:>14.3}", r.name, r.per_second);
    }
    for m in &memory {
        println!("{:<40} {:>14.1}", m.name, m.value);
    }
    output::run_dir(&a.out)?;
    let wall = start.elapsed().as_secs_f64();
    let summary = BenchSummary {
        header: RunHeader {
            sampler: "sgd,sgld,sghmc,csgld,resgld".into(),
            target: "twenty-five-mode,mlp13-50-1,cnn".into(),
            seed: 1,
            device: a.device.to_string(),
            wall_seconds: wall,
            steps_per_second: figures.first().map_or(0.0, |f| f.per_second),
        },
        figures,
        ratios,
        memory,
        energies,
    };
    output::write_json(&a.out.join("summary.json"), &summary)?;
    println!("wrote {}", a.out.join("summary.json").display());
    Ok(())
}

/// The small-network figures: the BlackJAX comparison and the 13-50-1 MLP (autodiff and
/// closed-form gradients, variance-reduced replica exchange).
fn mlp_rates(
    a: &BenchArgs,
    device: &Device,
    figures: &mut Vec<Figure>,
    ratios: &mut Vec<Figure>,
) -> Result<(), AppError> {
    digits_rate(a, device, figures, ratios)?;
    let ad = device.clone().autodiff();
    let (mlp, post, batch) = mlp_workload(&ad);
    net_rates(
        a,
        "mlp13-50-1_b50",
        || mlp.init(&ad),
        &post,
        &batch,
        figures,
        ratios,
    )?;
    // The same MLP with closed-form gradients on the plain device.
    let plain_batch = Batch {
        x: batch.x.clone().inner(),
        y: batch.y.inner(),
    };
    net_rates(
        a,
        "mlp13-50-1_b50/closed-form",
        || mlp.init(device),
        &MlpPosterior::new(post.clone()),
        &plain_batch,
        figures,
        ratios,
    )?;
    let passes = post.scale.n_data / batch.x.dims()[0];
    vr_overhead(
        a,
        "mlp13-50-1_b50",
        || mlp.init(&ad),
        &post,
        &batch,
        passes,
        &[50, 392],
        ratios,
    )
}
