//! Sampler overheads on the toy target and the small networks: chain-steps/s, overhead
//! ratios against SGD / SGLD, variance reduction's cost, chain scaling on threads.

use std::time::Instant;

use burn::module::Module;
use burn::tensor::Device;
use sgmcmc_models::mlp::MlpPosterior;
use sgmcmc_models::posterior::Batch;
use sgmcmc_samplers::control::{EnergyPartition, Ladder, RandomField, Smoothing, SwapScheme};
use sgmcmc_samplers::density::Target;
use sgmcmc_samplers::density::particles::Particles;
use sgmcmc_samplers::ensemble::{HostEnsemble, ModuleEnsemble};
use sgmcmc_samplers::kernel::Kernel;
use sgmcmc_samplers::sampler::{
    Contour, ContourConfig, ControlSettings, ReplicaConfig, ReplicaExchange, Sampler, Sgmcmc,
    SgmcmcConfig, SwapRule, VarianceReduced, VrConfig,
};
use sgmcmc_testfunctions::by_name;

use crate::digits::digits_rate;
use crate::timing::{Step, paired, rate, record};
use crate::workloads::mlp_workload;
use crate::{BenchArgs, Figure};
use sgmcmc_apps::AppError;

pub(crate) fn toy_rates(
    a: &BenchArgs,
    device: &Device,
    out: &mut Vec<Figure>,
) -> Result<(), AppError> {
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
            name: format!("toy/{}/{chains} chain-steps", a.on()),
            per_second: r * chains as f64,
        });
    }
    Ok(())
}

/// reSGLD over two chains at temperatures (1, 10), lr 1e-6, a Metropolis test every step.
pub(crate) fn resgld2() -> Result<ReplicaConfig, AppError> {
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

pub(crate) fn net_rates<M: Module, T: Target<M> + Clone>(
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
pub(crate) fn vr_overhead<M: Module, T: Target<M> + Clone>(
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

/// Independent SGLD chains on threads: chain-steps/s of one chain at its best thread count
/// (1 or 2 compute threads) against two chains stepped in parallel on a 2-thread pool, and the
/// ratio `two chains : one chain` (2.0 is perfect scaling on two cores).
pub(crate) fn chain_scaling<M: Module, T: Target<M> + Clone + Send>(
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
        let r = sgmcmc_engine::jobs::with_threads(threads, || {
            rate(a.seconds, || s.step(batch).map(|_| ()).map_err(Into::into))
        })??;
        one_best = one_best.max(r);
    }
    let mut s = Sgmcmc::new(sgld(), chains(2)?)?;
    let two = 2.0
        * sgmcmc_engine::jobs::with_threads(2, || {
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

/// The small-network figures: the BlackJAX comparison and the 13-50-1 MLP (autodiff and
/// closed-form gradients, variance-reduced replica exchange).
pub(crate) fn mlp_rates(
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
