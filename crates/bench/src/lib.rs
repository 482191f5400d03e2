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
//! `--only` picks groups; `--only gpu`, `seeded` and `input` are the GPU check's figures
//! ([`gpu`], [`input`]) and `--distributed` the costs of chains over MPI ranks ([`distributed`]).
//! The criterion benches in `benches/` measure the same things with statistics; this command
//! gives the figures on any machine from the binary alone.
//!
//! The harness is a crate of its own so that the command-line crate holds experiments only; the
//! `sgmcmc` binary adds it as the `bench` command ([`command`]).

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use serde::Serialize;
use sgmcmc_apps::AppError;
use sgmcmc_apps::output::{self, RunHeader};
use sgmcmc_apps::run_flags::DeviceFlag;
use sgmcmc_engine::DeviceChoice;
use sgmcmc_models::mlp::MlpPosterior;

use crate::nets::{chain_scaling, mlp_rates, net_rates, toy_rates, vr_overhead};
use crate::resnet::{noise_rate, resnet_memory, resnet_rate, resnet_steps};
pub use crate::timing::{Step, paired, rate};
pub use crate::workloads::{cnn_workload, mlp_workload, resnet_sampler};

pub mod digits;
pub mod distributed;
pub mod gpu;
pub mod input;
pub mod nets;
pub mod resnet;
pub mod timing;
pub mod workloads;

/// `sgmcmc bench` as a command of the `sgmcmc` binary ([`sgmcmc_apps::run_with`]).
pub fn command() -> sgmcmc_apps::cli::External {
    use clap::{Args as _, FromArgMatches as _};
    sgmcmc_apps::cli::External {
        command: BenchArgs::augment_args(clap::Command::new("bench")).about(
            "Throughput and sampler overheads as ratios in one run: toy chains, MLPs, the papers' CNN, ResNet20 (--only picks groups)",
        ),
        run: |m| {
            let a = match BenchArgs::from_arg_matches(m) {
                Ok(a) => a,
                Err(e) => return sgmcmc_apps::cli::clap_error(e),
            };
            run(&a)
        },
    }
}

/// Options of `sgmcmc bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// `--device` of the tensor measurements.
    #[command(flatten)]
    pub device: DeviceFlag,
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
    /// the coupling's share of a ResNet20 step ([`crate::distributed`]).
    #[arg(long)]
    pub distributed: bool,
    /// Replacing an earlier run in `--out`.
    #[command(flatten)]
    pub force: output::Force,
}

impl BenchArgs {
    /// The device of the tensor measurements (`--device`, else flex).
    pub fn on(&self) -> DeviceChoice {
        self.device.tensor()
    }
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
    /// The one-shot GPU check's figures on `--device` ([`crate::gpu`]): ResNet20 SGHMC
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
    /// ([`crate::input`]); batch: the first `--batches` size.
    Input,
}

impl BenchArgs {
    /// The first `--batches` size.
    pub fn first_batch(&self) -> Result<usize, AppError> {
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
pub struct Figure {
    pub name: String,
    pub per_second: f64,
}

/// A measured amount that is not a rate (memory).
#[derive(Serialize)]
pub struct Amount {
    pub name: String,
    pub value: f64,
}

/// `summary.json` of a benchmark run.
#[derive(Serialize)]
pub struct BenchSummary {
    #[serde(flatten)]
    pub header: RunHeader,
    pub figures: Vec<Figure>,
    pub ratios: Vec<Figure>,
    pub memory: Vec<Amount>,
    /// The `gpu` group's seeded 20-step chain: its energies, to compare across devices.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub energies: Vec<f64>,
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

/// The longest `--seconds` a measurement may take (a day).
pub const MAX_SECONDS: f64 = 86_400.0;

/// Runs the benchmarks and writes `summary.json`.
pub fn run(a: &BenchArgs) -> Result<(), AppError> {
    // A measurement of more than a day is a typo (`1e300` ran until killed).
    if !(a.seconds > 0.0 && a.seconds <= MAX_SECONDS) {
        return Err(AppError::Usage(format!(
            "--seconds must lie in (0, {MAX_SECONDS}], got {}",
            a.seconds
        )));
    }
    if a.distributed {
        return crate::distributed::run(a);
    }
    let start = Instant::now();
    let device = a.on().tensor_device("bench")?;
    output::fresh_run_dir(&a.out, a.force.force, &["summary.json"])?;
    let ad = device.clone().autodiff();
    let (mut figures, mut ratios, mut memory) = (Vec::new(), Vec::new(), Vec::new());
    if a.runs(Group::Toy) {
        toy_rates(a, &device, &mut figures)?;
    }
    if a.runs(Group::Mlp) {
        // The small networks compute on one thread (see `sgmcmc_engine::jobs`), the CNN on all
        // cores.
        sgmcmc_engine::jobs::with_threads(1, || mlp_rates(a, &device, &mut figures, &mut ratios))??;
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
        let batch = if a.on().is_gpu() { 16 } else { 128 };
        noise_rate(a, &ad, batch, &mut figures, &mut ratios)?;
    }
    if a.runs(Group::Resnet) {
        resnet_memory(&ad, &mut memory)?;
        resnet_rate(a, &ad, &mut figures, &mut ratios)?;
    }
    if a.only.contains(&Group::Gpu) {
        let gpu = crate::gpu::measure(a, &ad)?;
        figures.extend(gpu.figures);
        memory.extend(gpu.memory);
    }
    if a.only.contains(&Group::Input) {
        let (f, r) = crate::input::measure(a, &ad)?;
        figures.extend(f);
        ratios.extend(r);
    }
    let mut energies = Vec::new();
    if a.only.contains(&Group::Seeded) {
        energies = crate::gpu::seeded_energies(&ad, a.first_batch()?.clamp(16, 32))?;
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
            device: a.on().to_string(),
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
