//! Running a toy configuration on the host fast path or on a tensor device: a registry sampler
//! in the engine's run loop, with the toy's collector as its observer.

use sgmcmc_samplers::collect::{ModeTraces, Traces, WeightedMean};
use sgmcmc_samplers::comm::Placement;
use sgmcmc_samplers::density::particles::Particles;
use sgmcmc_samplers::diagnostics::Coupling;
#[cfg(feature = "fault-injection")]
use sgmcmc_samplers::ensemble::Faulty;
use sgmcmc_samplers::ensemble::{Ensemble, HostEnsemble, ModuleEnsemble, Positions};
use sgmcmc_samplers::registry::{AnySampler, BuildContext, SamplerSpec};
use sgmcmc_samplers::rng::ChainRng;
use sgmcmc_samplers::sampler::{ContourConfig, ReplicaSummary, Sampler};
use sgmcmc_testfunctions::{self as toy, NoiseModel, ToyTarget};

use super::collector::{Collector, Record};
use super::persist::Persist;
use super::{Init, ToyConfig};
use crate::error::RunError;
use crate::observers::ProgressReport;
use crate::ranks::Ranks;
use crate::{Checkpoints, Repeat, Run};

/// What a toy run produced.
pub struct ToyOutcome {
    /// The target (with the noise actually used).
    pub target: ToyTarget,
    /// Mode index traces (targets with named modes).
    pub modes: Option<ModeTraces>,
    /// Weighted (here: plain) mean of the collected samples.
    pub mean: WeightedMean,
    /// First-coordinate traces per chain (for R-hat and ESS).
    pub x0: Traces,
    /// The importance weight of each sample of `x0` (1 for plain samplers).
    pub weights: Traces,
    /// How the chains count for errors: [`Coupling::Shared`] for the chains of a contour
    /// sampler (they share `theta`), independent otherwise.
    pub coupling: Coupling,
    /// A thinned subset of the samples, for plots and `samples.csv`.
    pub plot_samples: Vec<Vec<f64>>,
    /// `metrics.csv` rows: step, lr, temperature, energy mean/min/max.
    pub metrics: Vec<Vec<f64>>,
    /// Wall time of the sampling loop.
    pub wall_seconds: f64,
    /// Final theta of a contour sampler.
    pub theta: Option<Vec<f64>>,
    /// Theta snapshots of a contour sampler, about 100 over the run: `[step, theta_0, ..]`.
    pub theta_trace: Vec<Vec<f64>>,
    /// Moves with a negative gradient multiplier (contour samplers).
    pub bouncy_moves: u64,
    /// Replica exchange, at every log point: `[step, rung of each replica, lr of each rung, C,
    /// accepted swaps of each pair, round trips]`.
    pub replica_trace: Vec<Vec<f64>>,
    /// Final swap statistics of a replica-exchange run.
    pub replica: Option<ReplicaSummary>,
    /// The configuration of a contour run (its partition, field and zeta).
    pub contour: Option<ContourConfig>,
    /// Whether the run stopped early at a checkpoint ([`Persist::stop_after`]) and has no
    /// samples folded yet.
    pub stopped: bool,
}

/// The target of `cfg` with its noise overrides.
fn build_target(cfg: &ToyConfig) -> Result<ToyTarget, RunError> {
    let setting = |e: &dyn std::fmt::Display| RunError::Setting(e.to_string());
    let target = cfg.target.build().map_err(|e| setting(&e))?;
    let default = *target.noise();
    let noise = NoiseModel {
        energy: cfg.energy_noise.unwrap_or(default.energy),
        gradient: cfg.gradient_noise.unwrap_or(default.gradient),
    };
    target.with_noise(noise).map_err(|e| setting(&e))
}

/// Starting points of the chains.
fn starts(cfg: &ToyConfig, target: &ToyTarget) -> Result<Vec<Vec<f64>>, RunError> {
    let d = target.dim();
    match &cfg.init {
        Init::Point(p) if p.len() == d => Ok(vec![p.clone(); cfg.chains]),
        Init::Point(p) => Err(RunError::Setting(format!(
            "init point has {} coordinates, target `{}` has {d}",
            p.len(),
            cfg.target
        ))),
        Init::Uniform => {
            let support = target.potential().support();
            Ok((0..cfg.chains)
                .map(|c| {
                    let mut rng = ChainRng::new(cfg.seed ^ 0x1417_5EED, c as u64);
                    match &support {
                        Some(b) => b
                            .iter()
                            .map(|(lo, hi)| lo + (hi - lo) * rng.uniform())
                            .collect(),
                        None => vec![0.0; d],
                    }
                })
                .collect())
        }
    }
}

/// Runs `cfg` and collects its samples; `progress(done, total)` is called about 200 times.
pub fn run_toy(cfg: &ToyConfig, progress: impl FnMut(u64, u64)) -> Result<ToyOutcome, RunError> {
    let out = run_toy_on(cfg, progress, &Ranks::local(), None)?;
    out.ok_or_else(|| RunError::Observer("a one-process run has no outcome".into()))
}

/// The checked configuration's target, starting points and sampler spec.
fn prepare(cfg: &ToyConfig) -> Result<(ToyTarget, Vec<Vec<f64>>, SamplerSpec), RunError> {
    cfg.validate()?;
    let target = build_target(cfg)?;
    let starts = starts(cfg, &target)?;
    let ctx = BuildContext::steps(cfg.iters)
        .chains(cfg.chains)
        .min_energy(toy::quadrature::lowest_energy(target.potential(), &starts));
    let spec = cfg.sampler.spec(&ctx)?;
    Ok((target, starts, spec))
}

/// Checks everything a run of `cfg` checks before its first step (the device, the settings,
/// the target, the sampler), so that a command refuses a bad configuration before it touches
/// `--out`.
pub fn check(cfg: &ToyConfig) -> Result<(), RunError> {
    cfg.device.device()?;
    prepare(cfg).map(drop)
}

/// Runs this rank's chains of `cfg` (all of them in one process); the outcome, gathered from
/// every rank, on rank 0 (`None` on the others). Rank `r` steps a contiguous block of chains
/// with the random streams they have in one process, so the outcome is the one-process run's.
/// A rank that fails ends the job ([`Ranks::fail`]). With `persist` the run checkpoints (each
/// rank its part) and may stop early or continue a checkpoint; the configuration is stored in
/// every checkpoint ([`Persist::meta`]). `progress(done, total)` is called about 200 times, on
/// rank 0 alone.
pub fn run_toy_on(
    cfg: &ToyConfig,
    progress: impl FnMut(u64, u64),
    ranks: &Ranks,
    persist: Option<Persist>,
) -> Result<Option<ToyOutcome>, RunError> {
    let (target, starts, spec) = prepare(cfg)?;
    let placement = ranks.placement(cfg.chains)?;
    let here = placement.here();
    let mine = &starts[here.clone()];
    let rank = placement.rank();
    let job = Job {
        spec,
        cfg,
        target: target.clone(),
        progress: ProgressReport::new(on_leader(progress, ranks.is_leader())).updates(200),
        placement: placement.clone(),
        ranks,
        persist,
    };
    match cfg.device.device()? {
        None => {
            let ens = HostEnsemble::new_part(target, mine, cfg.seed, here.start)?;
            drive(job, faulty(ens, cfg, rank))
        }
        Some(device) => {
            let particles = Particles::from_rows(mine, &device)
                .map_err(|e| RunError::Setting(e.to_string()))?;
            let ens = ModuleEnsemble::new_part(target, vec![particles], cfg.seed, here.start)?;
            drive(job, faulty(ens, cfg, rank))
        }
    }
}

/// The chains failing as the config's `[fault]` says for this rank (tests only).
#[cfg(feature = "fault-injection")]
fn faulty<E: Ensemble>(ens: E, cfg: &ToyConfig, rank: usize) -> Faulty<E> {
    Faulty::new(ens, cfg.fault.filter(|f| f.rank == rank))
}

/// The chains as they are (a build without `fault-injection`).
#[cfg(not(feature = "fault-injection"))]
fn faulty<E: Ensemble>(ens: E, _: &ToyConfig, _: usize) -> E {
    ens
}

/// `progress` on rank 0; a callback that does nothing on the other ranks.
fn on_leader(mut progress: impl FnMut(u64, u64), leader: bool) -> impl FnMut(u64, u64) {
    move |done, total| {
        if leader {
            progress(done, total);
        }
    }
}

/// What a toy run drives its chains with, whatever ensemble holds them.
struct Job<'a, F> {
    spec: SamplerSpec,
    cfg: &'a ToyConfig,
    target: ToyTarget,
    progress: ProgressReport<F>,
    placement: Placement,
    ranks: &'a Ranks,
    persist: Option<Persist>,
}

fn drive<E, F>(job: Job<'_, F>, ens: E) -> Result<Option<ToyOutcome>, RunError>
where
    E: Ensemble<Batch = ()>,
    E::Snapshot: Positions,
    F: FnMut(u64, u64),
{
    let Job {
        spec,
        cfg,
        target,
        mut progress,
        placement,
        ranks,
        persist,
    } = job;
    let contour = match &spec {
        SamplerSpec::Contour(c) => Some(c.clone()),
        _ => None,
    };
    let mut sampler = spec.build_placed(ens, cfg.seed, placement)?;
    let outputs = if sampler.as_replica().is_some() {
        1
    } else {
        cfg.chains
    };
    let coupling = if contour.is_some() && outputs > 1 {
        Coupling::Shared
    } else {
        Coupling::Independent
    };
    let mut collector = Collector::new(cfg, &target, outputs, coupling);
    // Distributed and checkpointed runs record their samples and fold them at the end (in the
    // order of a one-process run): the record travels to rank 0 and into checkpoints.
    let distributed = ranks.is_distributed();
    if distributed || persist.is_some() {
        collector.record = Some(Record::default());
        collector.plain_energies = distributed && matches!(sampler, AnySampler::Sgmcmc(_));
    }
    let mut run = Run::steps(cfg.iters)
        .burn_in(cfg.burn_in())
        .thin(cfg.thin)
        .observe(&mut collector)
        .observe(&mut progress)
        .over(ranks);
    if let Some(p) = persist {
        run = run.checkpoints(Checkpoints::new(p.path, p.every).with_meta(p.meta));
        if let Some(n) = p.stop_after {
            run = run.stop_after(n);
        }
        if let Some(r) = p.resume {
            run = r.apply(run);
        }
    }
    let report = run.run(&mut sampler, &mut Repeat(()))?;
    if report.stopped && !ranks.is_leader() {
        return Ok(None);
    }
    if let Some(record) = collector.record.take()
        && !report.stopped
    {
        let Some(records) = ranks.check(ranks.gather(record))? else {
            return Ok(None);
        };
        collector.replay(&records);
    }
    let Collector {
        modes,
        mean,
        x0,
        weights,
        plot_samples,
        metrics,
        theta_trace,
        replica_trace,
        ..
    } = collector;
    Ok(Some(ToyOutcome {
        target,
        modes,
        mean,
        x0,
        weights,
        coupling,
        plot_samples,
        metrics,
        wall_seconds: report.wall_seconds,
        theta: sampler.theta().map(|t| t.theta().to_vec()),
        theta_trace,
        bouncy_moves: sampler.report().bouncy_moves,
        replica: sampler.as_replica().map(|r| r.summary(cfg.iters)),
        contour,
        replica_trace,
        stopped: report.stopped,
    }))
}
