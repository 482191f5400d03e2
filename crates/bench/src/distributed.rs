//! `sgmcmc bench --distributed` (under `mpirun`): what spreading chains over ranks costs.
//!
//! * the swap round of DEO*-SGD for `P = 4` and `8` chains over the job's ranks: an
//!   `MPI_Allgatherv` of the `P` energies alone, and a whole DEO* step on a 1-D Gaussian target
//!   (chain work ~0.1 us, so the step is the gather plus the replicated swap decision and
//!   adaptation) against the same step in one process;
//! * `P = 4` independent CNN chains (the papers' network, batch 256): the job's ranks stepping
//!   their chains (nothing exchanged) against rank 0 stepping all four on a pool of as many
//!   threads as there are ranks, interleaved;
//! * a ResNet20 SGLD step at batch 256 on rank 0, and the swap round's share of it (the issue's
//!   bound: under 5%);
//! * the velocity swap of ResNet20 chains (reSGHMC, DEO*-mSGD) between ranks 0 and 1: each
//!   rank reads its chain's velocity and gradient rows, sends them (`MPI_Sendrecv`) and puts the
//!   other's, shifted, in place; against the swap of two chains in one process.
//!
//! Every rank runs the same fixed numbers of collectives; ranks without work wait in a
//! sleeping barrier, so the measured rank has the machine to itself. Times are wall clock and,
//! beside them, the CPU time of the measuring process.

use std::time::Instant;

use burn::tensor::{Distribution, Int, Tensor};
use sgmcmc_models::posterior::Batch;
use sgmcmc_models::{Likelihood, Posterior, ResNetConfig, Scale, Targets};
use sgmcmc_samplers::comm::Placement;
use sgmcmc_samplers::ensemble::{
    Draws, Ensemble, HostEnsemble, KernelRow, ModuleEnsemble, RowSwap,
};
use sgmcmc_samplers::kernel::{Kernel, StepSize};
use sgmcmc_samplers::registry::{BuildContext, SamplerSettings};
use sgmcmc_samplers::sampler::{Sampler, Sgmcmc, SgmcmcConfig};
use sgmcmc_testfunctions::by_name;

use crate::{BenchArgs, Figure, cnn_workload, cpu_ns};
use sgmcmc_apps::AppError;
use sgmcmc_apps::output::{self, RunHeader};
use sgmcmc_engine::Ranks;

/// Wall and CPU seconds of `n` calls of `f`, per call.
fn per_call(n: u64, mut f: impl FnMut() -> Result<(), AppError>) -> Result<(f64, f64), AppError> {
    let (t, c) = (Instant::now(), cpu_ns());
    for _ in 0..n {
        f()?;
    }
    let wall = t.elapsed().as_secs_f64() / n as f64;
    let cpu = cpu_ns().saturating_sub(c) as f64 * 1e-9 / n as f64;
    Ok((wall, cpu))
}

fn comm_err(e: sgmcmc_samplers::comm::CommError) -> AppError {
    AppError::Run(e.to_string())
}

/// A DEO*-SGD sampler of `p` chains on the 1-D Gaussian target, placed by `placement`.
fn deo(p: usize, placement: Placement) -> Result<impl Sampler<Batch = ()>, AppError> {
    let mut s = SamplerSettings::named("deo-sgd");
    s.lr = 1e-3;
    s.replica.lr_max = 0.1;
    let spec = s.spec(&BuildContext::steps(1_000_000).chains(p))?;
    let here = placement.here();
    let starts = vec![vec![0.0]; here.len()];
    let ens = HostEnsemble::new_part(by_name("normal")?, &starts, 1, here.start)?;
    Ok(spec.build_placed(ens, 1, placement)?)
}

/// The swap round for `p` chains: gather alone, a DEO* step over the ranks, and the same step in
/// one process (rank 0, the others waiting).
fn swap_round(ranks: &Ranks, p: usize, out: &mut Vec<Figure>) -> Result<(), AppError> {
    const ROUNDS: u64 = 20_000;
    let placement = ranks.placement(p)?;
    let local = vec![0.5; placement.here().len()];
    let mut global = vec![0.0; p];
    let comm = ranks.comm();
    comm.barrier().map_err(comm_err)?;
    let gather = per_call(ROUNDS, || Ok(placement.gather(&local, &mut global)?))?;
    let mut s = deo(p, placement)?;
    comm.barrier().map_err(comm_err)?;
    let step = per_call(ROUNDS, || s.step(&()).map(|_| ()).map_err(Into::into))?;
    comm.barrier().map_err(comm_err)?;
    let one = if ranks.rank() == 0 {
        let mut s = deo(p, Placement::local(p))?;
        per_call(ROUNDS, || s.step(&()).map(|_| ()).map_err(Into::into))?
    } else {
        (0.0, 0.0)
    };
    comm.barrier().map_err(comm_err)?;
    let np = ranks.size();
    push_times(
        out,
        &format!("allgather {p} f64 over {np} ranks"),
        gather,
        "us",
    );
    push_times(
        out,
        &format!("deo-sgd x{p} step over {np} ranks"),
        step,
        "us",
    );
    push_times(out, &format!("deo-sgd x{p} step in one process"), one, "us");
    Ok(())
}

/// Adds the wall and CPU times `(wall, cpu)` (seconds) of `name` to `out` in `unit` (`us` or
/// `ms`), as `NAME wall UNIT` and `NAME cpu UNIT`.
fn push_times(out: &mut Vec<Figure>, name: &str, (wall, cpu): (f64, f64), unit: &str) {
    let scale = if unit == "ms" { 1e3 } else { 1e6 };
    for (kind, seconds) in [("wall", wall), ("cpu", cpu)] {
        out.push(Figure {
            name: format!("{name} {kind} {unit}"),
            per_second: seconds * scale,
        });
    }
}

/// `P = 4` independent CNN chains: over the ranks (each steps its block on one thread) and on
/// rank 0 alone with one thread per rank, interleaved `rounds` times; chain-steps per second.
fn independent_chains(a: &BenchArgs, ranks: &Ranks, out: &mut Vec<Figure>) -> Result<(), AppError> {
    const P: usize = 4;
    let steps: u64 = if a.seconds >= 2.0 { 6 } else { 3 };
    let device = a.on().tensor_device("bench")?;
    let ad = device.autodiff();
    let (cnn, post, batch) = cnn_workload(&ad);
    let placement = ranks.placement(P)?;
    let comm = ranks.comm();
    let sgld = || SgmcmcConfig::constant(Kernel::Sgld, 1e-6, 1.0);
    let (mut spread, mut threads) = ((0.0, 0.0), (0.0, 0.0));
    for _ in 0..2 {
        let here = placement.here();
        let modules = (0..here.len()).map(|_| cnn.init(&ad)).collect();
        let ens = ModuleEnsemble::new_part(post.clone(), modules, 1, here.start)?;
        let mut s = Sgmcmc::placed(sgld(), ens, placement.clone())?;
        s.step(&batch)?;
        comm.barrier().map_err(comm_err)?;
        let r = sgmcmc_engine::jobs::with_threads(1, || {
            per_call(steps, || s.step(&batch).map(|_| ()).map_err(Into::into))
        })??;
        comm.barrier().map_err(comm_err)?;
        spread = (spread.0 + r.0, spread.1 + r.1);
        if ranks.rank() == 0 {
            let modules = (0..P).map(|_| cnn.init(&ad)).collect();
            let mut s = Sgmcmc::new(sgld(), ModuleEnsemble::new(post.clone(), modules, 1)?)?;
            let r = sgmcmc_engine::jobs::with_threads(ranks.size(), || {
                s.step(&batch)?;
                per_call(steps, || s.step(&batch).map(|_| ()).map_err(Into::into))
            })??;
            threads = (threads.0 + r.0, threads.1 + r.1);
        }
        comm.barrier().map_err(comm_err)?;
    }
    let np = ranks.size();
    let per_rank = placement.here().len() as f64;
    out.push(Figure {
        name: format!("cnn_b256 sgld x4 over {np} ranks chain-steps"),
        per_second: 2.0 * per_rank * np as f64 / spread.0,
    });
    out.push(Figure {
        name: format!("cnn_b256 sgld x4 on {np} threads chain-steps"),
        per_second: 2.0 * P as f64 / threads.0,
    });
    out.push(Figure {
        name: format!("cnn_b256 sgld x4 on {np} threads cpu s per step"),
        per_second: threads.1 / 2.0,
    });
    Ok(())
}

/// ResNet20 chains (CIFAR shape, 10 classes) on the autodiff device of `a`, and a random
/// batch of `n` images.
fn resnet_chains(
    a: &BenchArgs,
    chains: usize,
    n: usize,
) -> Result<
    (
        ModuleEnsemble<sgmcmc_models::ResNet, Posterior>,
        Batch<Tensor<4>>,
    ),
    AppError,
> {
    let device = a.on().tensor_device("bench")?;
    let ad = device.autodiff();
    let x = Tensor::<4>::random([n, 3, 32, 32], Distribution::Normal(0.0, 1.0), &ad);
    let labels: Vec<i64> = (0..n as i64).map(|i| i % 10).collect();
    let batch = Batch {
        x,
        y: Targets::Class(Tensor::<1, Int>::from_data(labels.as_slice(), &ad)),
    };
    let post = Posterior {
        likelihood: Likelihood::Categorical,
        scale: Scale::from_weight_decay(50_000, 25.0 / 50_000.0),
    };
    let nets = (0..chains)
        .map(|_| ResNetConfig::resnet20(10).init(&ad))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| AppError::Run(e.to_string()))?;
    Ok((ModuleEnsemble::new(post, nets, 1)?, batch))
}

/// Seconds of one ResNet20 SGLD step at batch 256 (CIFAR shape) on rank 0.
fn resnet_step(a: &BenchArgs) -> Result<(f64, f64), AppError> {
    let (ens, batch) = resnet_chains(a, 1, 256)?;
    let mut s = Sgmcmc::new(SgmcmcConfig::constant(Kernel::Sgld, 1e-7, 1.0), ens)?;
    s.step(&batch)?;
    per_call(2, || s.step(&batch).map(|_| ()).map_err(Into::into))
}

/// The velocity swap of ResNet20 chains: rank `r < 2` of the job holds one chain with a
/// velocity (one SGHMC move) and the gradient of its next estimate, and trades kernel states
/// with rank `1 - r` (its half of the swap: read its rows, exchange, put the other's in place);
/// rank 0 alone then swaps two such chains in one ensemble.
fn velocity_swap(a: &BenchArgs, ranks: &Ranks, out: &mut Vec<Figure>) -> Result<(), AppError> {
    const ROUNDS: u64 = 20;
    let kernel = Kernel::sghmc();
    let coefs = kernel.coefficients(&StepSize::new(1e-7, 1.0))?;
    let draws = Draws {
        refresh: false,
        noise: true,
    };
    let ready = |chains: usize| -> Result<_, AppError> {
        let (mut ens, batch) = resnet_chains(a, chains, 16)?;
        ens.estimate(&batch)?;
        ens.apply(&kernel, &vec![coefs; chains], draws);
        ens.estimate(&batch)?;
        Ok(ens)
    };
    let comm = ranks.comm();
    let rank = ranks.rank();
    let pair = rank < 2 && ranks.size() >= 2;
    let mut values = 0;
    let mut ens = if pair { Some(ready(1)?) } else { None };
    comm.barrier().map_err(comm_err)?;
    let over = match ens.as_mut() {
        Some(ens) => per_call(ROUNDS, || {
            let mine = ens.kernel_row(0)?.to_values();
            values = mine.len();
            let theirs = comm.exchange(1 - rank, &mine).map_err(comm_err)?;
            let swap = RowSwap {
                peer: KernelRow::from_values(&theirs)?,
                lag: 1e-8,
                first: rank == 0,
            };
            Ok(ens.take_kernel_row(0, &swap)?)
        })?,
        None => (0.0, 0.0),
    };
    comm.barrier().map_err(comm_err)?;
    let one = if rank == 0 {
        let mut ens = ready(2)?;
        per_call(ROUNDS, || {
            ens.swap_kernel_state(0, 1, (1e-8, 1e-8));
            // Flex runs eagerly; reading one value makes sure nothing is left pending.
            ens.kernel_row(0).map(drop).map_err(Into::into)
        })?
    } else {
        (0.0, 0.0)
    };
    comm.barrier().map_err(comm_err)?;
    let np = ranks.size();
    for (name, (wall, cpu)) in [
        (format!("resnet20 velocity half-swap over {np} ranks"), over),
        (
            "resnet20 velocity swap (+ a row read) in one process".to_string(),
            one,
        ),
    ] {
        out.push(Figure {
            name: format!("{name} wall ms"),
            per_second: wall * 1e3,
        });
        out.push(Figure {
            name: format!("{name} cpu ms"),
            per_second: cpu * 1e3,
        });
    }
    out.push(Figure {
        name: "resnet20 kernel row values sent per half-swap".into(),
        per_second: values as f64,
    });
    Ok(())
}

/// Runs the distributed benchmarks; rank 0 prints and writes `summary.json`.
pub fn run(a: &BenchArgs) -> Result<(), AppError> {
    let ranks = sgmcmc_engine::Ranks::of(true)?;
    let start = Instant::now();
    ranks
        .on_leader(|| output::fresh_run_dir(&a.out, a.force.force, &["summary.json"]).map(drop))?;
    let result = (|| {
        let mut figures = Vec::new();
        for p in [4usize, 8].into_iter().filter(|p| *p >= ranks.size()) {
            swap_round(&ranks, p, &mut figures)?;
        }
        if !a.no_cnn {
            independent_chains(a, &ranks, &mut figures)?;
            velocity_swap(a, &ranks, &mut figures)?;
        }
        let mut ratios = Vec::new();
        if ranks.rank() == 0 && !a.no_cnn {
            let (resnet, resnet_cpu) = resnet_step(a)?;
            figures.push(Figure {
                name: "resnet20_b256 sgld step wall s".into(),
                per_second: resnet,
            });
            figures.push(Figure {
                name: "resnet20_b256 sgld step cpu s".into(),
                per_second: resnet_cpu,
            });
            ratios.extend(coupling_shares(&figures, ranks.size(), resnet));
        }
        ranks.comm().barrier().map_err(comm_err)?;
        Ok::<_, AppError>((figures, ratios))
    })();
    let (figures, ratios) = ranks.check(result)?;
    if ranks.rank() != 0 {
        return Ok(());
    }
    for f in &figures {
        println!("{:<52} {:>14.3}", f.name, f.per_second);
    }
    for r in &ratios {
        println!("{:<52} {:>14.2e}", r.name, r.per_second);
    }
    output::run_dir(&a.out)?;
    let summary = crate::BenchSummary {
        header: RunHeader {
            sampler: "deo-sgd,sgld".into(),
            target: "normal,cnn,resnet20".into(),
            seed: 1,
            device: a.on().to_string(),
            wall_seconds: start.elapsed().as_secs_f64(),
            steps_per_second: 0.0,
        },
        figures,
        ratios,
        memory: Vec::new(),
        energies: Vec::new(),
    };
    output::write_json(&a.out.join("summary.json"), &summary)?;
    println!("wrote {}", a.out.join("summary.json").display());
    Ok(())
}

/// The MPI coupling of a DEO* step (the step over the ranks minus the step in one process) as
/// a share of a ResNet20 step of `resnet` seconds, for each `P` measured.
fn coupling_shares(figures: &[Figure], np: usize, resnet: f64) -> Vec<Figure> {
    let get = |name: String| {
        figures
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.per_second)
    };
    [4usize, 8]
        .into_iter()
        .filter_map(|p| {
            let over = get(format!("deo-sgd x{p} step over {np} ranks wall us"))?;
            let one = get(format!("deo-sgd x{p} step in one process wall us"))?;
            Some(Figure {
                name: format!("deo-sgd x{p} coupling / resnet20_b256 step"),
                per_second: (over - one).max(0.0) * 1e-6 / resnet,
            })
        })
        .collect()
}
