//! Running a toy configuration on the host fast path or on a tensor device: a registry sampler
//! in the engine's run loop, with the toy's collector as its observer.

use std::borrow::Cow;

use sgmcmc_engine::{Kept, Observer, Progress, Repeat, Run};
use sgmcmc_samplers::collect::{ModeTraces, Traces, WeightedMean};
use sgmcmc_samplers::density::particles::Particles;
use sgmcmc_samplers::density::toy::{self, NoiseModel, ToyTarget};
use sgmcmc_samplers::diagnostics::Coupling;
use sgmcmc_samplers::ensemble::{Ensemble, HostEnsemble, HostPoints, ModuleEnsemble};
use sgmcmc_samplers::registry::{AnySampler, BuildContext, SamplerSpec};
use sgmcmc_samplers::rng::ChainRng;
use sgmcmc_samplers::sampler::{ContourConfig, Sampler, StepReport};

use super::config::{Init, ToyConfig};
use super::replica::{ReplicaSummary, trace_row};
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
}

/// Toy chains' points as one row-major `[P, d]` array.
pub trait ToyPoints {
    /// All positions, row-major.
    fn positions(&self) -> Cow<'_, [f64]>;
}

impl ToyPoints for HostPoints {
    fn positions(&self) -> Cow<'_, [f64]> {
        Cow::Borrowed(&self.x)
    }
}

impl ToyPoints for Vec<Particles> {
    fn positions(&self) -> Cow<'_, [f64]> {
        Cow::Owned(
            self.iter()
                .flat_map(|m| m.rows().into_iter().flatten())
                .collect(),
        )
    }
}

/// The lowest energy on a grid over a 1-D/2-D target's support (else at the mode centres) or at
/// the starting points, which places the default energy partition.
fn min_energy(target: &ToyTarget, starts: &[Vec<f64>]) -> f64 {
    let p = target.potential();
    let at_starts = starts
        .iter()
        .map(|x| p.energy(x))
        .fold(f64::INFINITY, f64::min);
    // Mode centres (a mixture's means) come close to it where no grid goes (above 2-D).
    let at_centres = p.modes().map_or(f64::INFINITY, |m| {
        m.centres()
            .iter()
            .map(|c| p.energy(c))
            .fold(f64::INFINITY, f64::min)
    });
    let Some(support) = p.support().filter(|s| s.len() <= 2) else {
        return at_starts.min(at_centres);
    };
    let n = if support.len() == 1 { 20_000 } else { 400 };
    let mut umin = at_starts;
    let _ = toy::quadrature::visit_grid(p, 1.0, n, |x, _| umin = umin.min(p.energy(x)));
    umin
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
    cfg.validate()?;
    let target = build_target(cfg)?;
    let starts = starts(cfg, &target)?;
    let ctx = BuildContext::steps(cfg.iters)
        .chains(cfg.chains)
        .min_energy(min_energy(&target, &starts));
    let spec = cfg.sampler.spec(&ctx)?;
    match cfg.device.device()? {
        None => {
            let ens = HostEnsemble::new(target.clone(), &starts, cfg.seed)?;
            drive(spec, ens, cfg, target, show_progress)
        }
        Some(device) => {
            let particles = Particles::from_rows(&starts, &device)?;
            let ens = ModuleEnsemble::new(target.clone(), vec![particles], cfg.seed)?;
            drive(spec, ens, cfg, target, show_progress)
        }
    }
}

fn drive<E>(
    spec: SamplerSpec,
    ens: E,
    cfg: &ToyConfig,
    target: ToyTarget,
    show_progress: bool,
) -> Result<ToyOutcome, AppError>
where
    E: Ensemble<Batch = ()>,
    E::Snapshot: ToyPoints,
{
    let contour = match &spec {
        SamplerSpec::Contour(c) => Some(c.clone()),
        _ => None,
    };
    let mut sampler = spec.build(ens, cfg.seed)?;
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
    let c = &mut collector;
    let bar = progress::bar(
        cfg.iters,
        &cfg.sampler.name,
        show_progress && cfg.iters * cfg.chains as u64 > 2_000_000,
    );
    let mut progress = progress::report(&bar, 200);
    let report = Run::steps(cfg.iters)
        .burn_in(cfg.burn_in())
        .thin(cfg.thin)
        .observe(c)
        .observe(&mut progress)
        .run(&mut sampler, &mut Repeat(()))?;
    bar.finish_and_clear();
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
    Ok(ToyOutcome {
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
        replica: sampler
            .as_replica()
            .map(|r| ReplicaSummary::of(r, cfg.iters)),
        contour,
        replica_trace,
    })
}

/// The toy's observer: mode traces, means and traces of the kept samples, plot samples, and
/// the metrics, theta and replica rows at the log points.
struct Collector<'t> {
    dim: usize,
    chains: usize,
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
}

impl<'t> Collector<'t> {
    fn new(cfg: &ToyConfig, target: &'t ToyTarget, outputs: usize, coupling: Coupling) -> Self {
        let collected_per_chain = (cfg.iters - cfg.burn_in()) / cfg.thin;
        let mode_map = target.potential().modes();
        Self {
            dim: target.dim(),
            chains: cfg.chains,
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
    E::Snapshot: ToyPoints,
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
            if let Some(r) = sampler.as_replica() {
                self.replica_trace
                    .push(std::iter::once(k as f64).chain(trace_row(r)).collect());
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

    fn on_sample(
        &mut self,
        _: &Progress,
        kept: &Kept<'_, E::Snapshot>,
    ) -> Result<(), sgmcmc_engine::RunError> {
        let pos = kept.points.positions();
        let d = self.dim;
        debug_assert_eq!(pos.len(), self.chains * d);
        for (slot, &c) in kept.chains.iter().enumerate() {
            let x = &pos[c * d..(c + 1) * d];
            let w = kept.report.weights[c];
            if let (Some(m), Some(map)) = (self.modes.as_mut(), self.mode_map) {
                m.push_weighted(slot, map.mode_of(x), w);
            }
            self.mean.add(x, w);
            if self.collections.is_multiple_of(self.plot_every) {
                self.plot_samples.push(x.to_vec());
            }
        }
        self.collections += 1;
        self.x0.push(kept.chains.iter().map(|c| pos[c * d]));
        self.weights
            .push(kept.chains.iter().map(|&c| kept.report.weights[c]));
        Ok(())
    }
}
