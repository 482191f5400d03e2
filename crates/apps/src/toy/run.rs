//! Running a toy configuration on the host fast path or on a tensor device: a registry sampler
//! in the engine's run loop, with the toy's collector as its observer.

use serde::{Deserialize, Serialize};
use sgmcmc_engine::observer::{decode, encode};
use sgmcmc_engine::{Checkpoints, Kept, Observer, Progress, Repeat, Run, RunError};
use sgmcmc_samplers::collect::{ModeTraces, Traces, WeightedMean};
use sgmcmc_samplers::comm::Placement;
use sgmcmc_samplers::density::particles::Particles;
use sgmcmc_samplers::diagnostics::Coupling;
#[cfg(feature = "fault-injection")]
use sgmcmc_samplers::ensemble::Faulty;
use sgmcmc_samplers::ensemble::{Ensemble, HostEnsemble, ModuleEnsemble, Positions};
use sgmcmc_samplers::registry::{AnySampler, BuildContext, SamplerSpec};
use sgmcmc_samplers::rng::ChainRng;
use sgmcmc_samplers::sampler::{ContourConfig, ReplicaSummary, Sampler, StepReport};
use sgmcmc_testfunctions::{self as toy, NoiseModel, ToyTarget};

use super::config::{Init, ToyConfig};
use crate::distributed::{Ranks, Resume};
use crate::error::AppError;
use crate::progress;

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

/// Checkpoints of a toy run: where, how often, where to stop, and what to continue from.
#[derive(Default)]
pub struct Persist {
    /// The checkpoint file (the manifest of a distributed run).
    pub path: std::path::PathBuf,
    /// Steps between checkpoints (0: only at `stop_after`).
    pub every: u64,
    /// Stop after this many steps in all (a checkpoint is written there).
    pub stop_after: Option<u64>,
    /// The checkpoint to continue from, with this rank's part of a distributed one.
    pub resume: Option<Resume>,
    /// The caller's record of the run, stored in every checkpoint ([`sgmcmc_engine::Checkpoint::meta`]).
    pub meta: Vec<u8>,
}

/// The target of `cfg` with its noise overrides.
pub fn build_target(cfg: &ToyConfig) -> Result<ToyTarget, AppError> {
    let target = cfg.target.build()?;
    let default = *target.noise();
    let noise = NoiseModel {
        energy: cfg.energy_noise.unwrap_or(default.energy),
        gradient: cfg.gradient_noise.unwrap_or(default.gradient),
    };
    Ok(target.with_noise(noise)?)
}

/// Starting points of the chains.
pub fn starts(cfg: &ToyConfig, target: &ToyTarget) -> Result<Vec<Vec<f64>>, AppError> {
    let d = target.dim();
    match &cfg.init {
        Init::Point(p) if p.len() == d => Ok(vec![p.clone(); cfg.chains]),
        Init::Point(p) => Err(AppError::Usage(format!(
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

/// Runs `cfg` and collects its samples. `show_progress` draws a progress bar.
pub fn run_toy(cfg: &ToyConfig, show_progress: bool) -> Result<ToyOutcome, AppError> {
    let out = run_toy_on(cfg, show_progress, &Ranks::local(), None)?;
    out.ok_or_else(|| AppError::Run("a one-process run has no outcome".into()))
}

/// The checked configuration's target, starting points and sampler spec.
fn prepare(cfg: &ToyConfig) -> Result<(ToyTarget, Vec<Vec<f64>>, SamplerSpec), AppError> {
    cfg.validate()?;
    let target = build_target(cfg)?;
    let starts = starts(cfg, &target)?;
    let ctx = BuildContext::steps(cfg.iters)
        .chains(cfg.chains)
        .min_energy(toy::quadrature::lowest_energy(target.potential(), &starts));
    let spec = cfg.sampler.spec(&ctx)?;
    Ok((target, starts, spec))
}

/// Checks everything a run of `cfg` checks before its first step (the settings, the target,
/// the sampler), so that a command refuses a bad configuration before it touches `--out`.
pub fn check(cfg: &ToyConfig) -> Result<(), AppError> {
    prepare(cfg).map(drop)
}

/// Runs this rank's chains of `cfg` (all of them in one process); the outcome, gathered from
/// every rank, on rank 0 (`None` on the others). Rank `r` steps a contiguous block of chains
/// with the random streams they have in one process, so the outcome is the one-process run's.
/// A rank that fails ends the job ([`Ranks::fail`]). With `persist` the run checkpoints (each
/// rank its part) and may stop early or continue a checkpoint; the configuration is stored in
/// every checkpoint ([`Persist::meta`]).
pub fn run_toy_on(
    cfg: &ToyConfig,
    show_progress: bool,
    ranks: &Ranks,
    persist: Option<Persist>,
) -> Result<Option<ToyOutcome>, AppError> {
    let (target, starts, spec) = prepare(cfg)?;
    let placement = ranks.placement(cfg.chains)?;
    let here = placement.here();
    let mine = &starts[here.clone()];
    let rank = placement.rank();
    let job = Job {
        spec,
        cfg,
        target: target.clone(),
        show_progress,
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
            let particles = Particles::from_rows(mine, &device)?;
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

/// What a toy run drives its chains with, whatever ensemble holds them.
struct Job<'a> {
    spec: SamplerSpec,
    cfg: &'a ToyConfig,
    target: ToyTarget,
    show_progress: bool,
    placement: Placement,
    ranks: &'a Ranks,
    persist: Option<Persist>,
}

fn drive<E>(job: Job<'_>, ens: E) -> Result<Option<ToyOutcome>, AppError>
where
    E: Ensemble<Batch = ()>,
    E::Snapshot: Positions,
{
    let Job {
        spec,
        cfg,
        target,
        show_progress,
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
    let bar = progress::bar(
        cfg.iters,
        &cfg.sampler.name,
        ranks.is_leader() && show_progress && cfg.iters * cfg.chains as u64 > 2_000_000,
    );
    let mut progress = progress::report(bar.clone(), 200);
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
    bar.finish_and_clear();
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

/// What a rank of a distributed run keeps for rank 0: its kept samples, in step and chain
/// order, and, for independent chains (which exchange nothing while they run), its chains'
/// energies at the log points.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Record {
    /// `(step, global chain)` of each sample.
    keys: Vec<(u64, usize)>,
    /// Each sample's importance weight.
    weights: Vec<f64>,
    /// The samples' points, row-major.
    points: Vec<f64>,
    /// This rank's chains' energies at each log point, row after row.
    log_energies: Vec<Vec<f64>>,
}

/// The toy's observer: mode traces, means and traces of the kept samples, plot samples, and
/// the metrics, theta and replica rows at the log points.
struct Collector<'t> {
    dim: usize,
    iters: u64,
    mode_map: Option<&'t dyn toy::ModeMap>,
    modes: Option<ModeTraces>,
    mean: WeightedMean,
    x0: Traces,
    weights: Traces,
    plot_every: usize,
    plot_samples: Vec<Vec<f64>>,
    collections: usize,
    metrics: Vec<Vec<f64>>,
    log_every: u64,
    snapshot_every: u64,
    theta_trace: Vec<Vec<f64>>,
    replica_trace: Vec<Vec<f64>>,
    /// A rank of a distributed run records its samples for rank 0 instead of folding them.
    record: Option<Record>,
    /// Whether the energies of the log rows must be gathered at the end (independent chains).
    plain_energies: bool,
}

impl<'t> Collector<'t> {
    fn new(cfg: &ToyConfig, target: &'t ToyTarget, outputs: usize, coupling: Coupling) -> Self {
        let collected_per_chain = (cfg.iters - cfg.burn_in()) / cfg.thin;
        let mode_map = target.potential().modes();
        Self {
            dim: target.dim(),
            iters: cfg.iters,
            modes: mode_map.map(|m| ModeTraces::new(m.n_modes(), outputs).with_coupling(coupling)),
            mode_map,
            mean: WeightedMean::new(target.dim()),
            x0: Traces::new(outputs),
            weights: Traces::new(outputs),
            // Plot every chain at every `plot_every`-th collection, at most `max_plot_samples`.
            plot_every: (collected_per_chain as usize * cfg.chains)
                .div_ceil(cfg.max_plot_samples.max(1))
                .max(1),
            plot_samples: Vec::new(),
            collections: 0,
            metrics: Vec::new(),
            log_every: (cfg.iters / cfg.log_points.max(1)).max(1),
            snapshot_every: (cfg.iters / 100).max(1),
            theta_trace: Vec::new(),
            replica_trace: Vec::new(),
            record: None,
            plain_energies: false,
        }
    }

    /// Folds one kept step's samples, `(point, weight)` of each target chain in chain order.
    fn fold_step<'a>(&mut self, samples: impl Iterator<Item = (&'a [f64], f64)> + Clone) {
        for (slot, (x, w)) in samples.clone().enumerate() {
            if let (Some(m), Some(map)) = (self.modes.as_mut(), self.mode_map) {
                m.push_weighted(slot, map.mode_of(x), w);
            }
            self.mean.add(x, w);
            if self.collections.is_multiple_of(self.plot_every) {
                self.plot_samples.push(x.to_vec());
            }
        }
        self.collections += 1;
        self.x0.push(samples.clone().map(|(x, _)| x[0]));
        self.weights.push(samples.map(|(_, w)| w));
    }

    /// Rank 0 of a distributed run: folds every rank's samples in step and chain order (the
    /// order of a one-process run), and completes the log rows of independent chains.
    fn replay(&mut self, records: &[Record]) {
        let d = self.dim;
        let mut order: Vec<(u64, usize, usize, usize)> = records
            .iter()
            .enumerate()
            .flat_map(|(r, rec)| {
                rec.keys
                    .iter()
                    .enumerate()
                    .map(move |(i, k)| (k.0, k.1, r, i))
            })
            .collect();
        order.sort_unstable();
        let mut at = 0;
        while at < order.len() {
            let end = at
                + order[at..]
                    .iter()
                    .take_while(|o| o.0 == order[at].0)
                    .count();
            let step = &order[at..end];
            self.fold_step(step.iter().map(|&(_, _, r, i)| {
                let rec = &records[r];
                (&rec.points[i * d..(i + 1) * d], rec.weights[i])
            }));
            at = end;
        }
        if self.plain_energies {
            for (row, metrics) in self.metrics.iter_mut().enumerate() {
                let e: Vec<f64> = records
                    .iter()
                    .flat_map(|r| r.log_energies[row].iter().copied())
                    .collect();
                metrics[3] = e.iter().sum::<f64>() / e.len() as f64;
                metrics[4] = e.iter().copied().fold(f64::INFINITY, f64::min);
                metrics[5] = e.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            }
        }
    }

    fn log_row(report: &StepReport) -> Vec<f64> {
        let e = &report.energies;
        let s = report.step_sizes[0];
        let psi = report.step_sizes.iter().map(|s| s.multiplier);
        vec![
            report.step as f64,
            s.lr,
            s.temperature,
            e.iter().sum::<f64>() / e.len() as f64,
            e.iter().copied().fold(f64::INFINITY, f64::min),
            e.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            psi.clone().fold(f64::INFINITY, f64::min),
            psi.fold(f64::NEG_INFINITY, f64::max),
            report.bouncy_moves as f64,
        ]
    }
}

impl<E> Observer<AnySampler<E>> for Collector<'_>
where
    E: Ensemble<Batch = ()>,
    E::Snapshot: Positions,
{
    fn wants_points(&self) -> bool {
        true
    }

    fn on_step(
        &mut self,
        at: &Progress,
        sampler: &AnySampler<E>,
        report: &StepReport,
    ) -> Result<(), sgmcmc_engine::RunError> {
        let k = at.step;
        let last = k + 1 == self.iters;
        if k.is_multiple_of(self.log_every) || last {
            self.metrics.push(Self::log_row(report));
            if self.plain_energies
                && let Some(rec) = self.record.as_mut()
            {
                rec.log_energies
                    .push(report.energies[report.local.clone()].to_vec());
            }
            if let Some(r) = sampler.as_replica() {
                self.replica_trace
                    .push(std::iter::once(k as f64).chain(r.trace_row()).collect());
            }
        }
        if (k.is_multiple_of(self.snapshot_every) || last)
            && let Some(t) = sampler.theta()
        {
            self.theta_trace.push(
                std::iter::once(k as f64)
                    .chain(t.theta().iter().copied())
                    .collect(),
            );
        }
        Ok(())
    }

    fn save(&self) -> Result<Vec<u8>, RunError> {
        encode(&(
            &self.record,
            &self.metrics,
            &self.theta_trace,
            &self.replica_trace,
        ))
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RunError> {
        type State = (Option<Record>, Vec<Vec<f64>>, Vec<Vec<f64>>, Vec<Vec<f64>>);
        let (record, metrics, theta_trace, replica_trace): State = decode(state)?;
        if self.record.is_some() != record.is_some() {
            return Err(RunError::Observer(
                "the checkpoint's samples were not recorded for a resumable run".into(),
            ));
        }
        self.record = record;
        self.metrics = metrics;
        self.theta_trace = theta_trace;
        self.replica_trace = replica_trace;
        Ok(())
    }

    fn on_sample(
        &mut self,
        _: &Progress,
        kept: &Kept<'_, E::Snapshot>,
    ) -> Result<(), sgmcmc_engine::RunError> {
        let pos = kept.points.positions();
        let d = self.dim;
        let at = |c: usize| &pos[kept.index(c) * d..(kept.index(c) + 1) * d];
        match self.record.as_mut() {
            Some(rec) => {
                for &c in kept.chains {
                    rec.keys.push((kept.step, c));
                    rec.weights.push(kept.report.weights[c]);
                    rec.points.extend_from_slice(at(c));
                }
            }
            None => {
                let w = &kept.report.weights;
                self.fold_step(kept.chains.iter().map(|&c| (at(c), w[c])));
            }
        }
        Ok(())
    }
}
