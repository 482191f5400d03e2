//! Running a toy configuration on the host fast path or on a tensor device.

use std::time::Instant;

use sgmcmc_samplers::collect::{ModeTraces, Thinning, Traces, WeightedMean};
use sgmcmc_samplers::control::Phase;
use sgmcmc_samplers::ensemble::{Ensemble, HostEnsemble, ModuleEnsemble};
use sgmcmc_samplers::rng::ChainRng;
use sgmcmc_samplers::sampler::{Contour, ContourConfig, ReplicaExchange, Sampler, Sgmcmc};
use sgmcmc_samplers::target::particles::Particles;
use sgmcmc_samplers::target::toy::{self, NoiseModel, ToyTarget};

use super::config::{Init, SamplerSpec, ToyConfig};
use super::replica::{ReplicaSummary, ToyReplica};
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

/// Where toy chains keep their positions.
trait ToyChains {
    fn positions_into(&self, out: &mut Vec<f64>);
}

impl ToyChains for HostEnsemble {
    fn positions_into(&self, out: &mut Vec<f64>) {
        out.clear();
        out.extend_from_slice(self.positions());
    }
}

impl ToyChains for ModuleEnsemble<Particles, ToyTarget> {
    fn positions_into(&self, out: &mut Vec<f64>) {
        out.clear();
        for m in self.modules() {
            out.extend(m.rows().into_iter().flatten());
        }
    }
}

/// What the toy runner needs from a sampler beyond [`Sampler`].
trait ToySampler: Sampler<Batch = ()> {
    fn positions_into(&self, out: &mut Vec<f64>);
    fn theta(&self) -> Option<Vec<f64>> {
        None
    }
    /// Chains whose samples are collected: all, or one (rung 0) for replica exchange.
    fn output_chains(&self) -> usize {
        self.n_chains()
    }
    fn replica_row(&self) -> Option<Vec<f64>> {
        None
    }
    fn replica_summary(&self, _steps: u64) -> Option<ReplicaSummary> {
        None
    }
}

impl<E: Ensemble<Batch = ()> + ToyChains> ToySampler for ToyReplica<E> {
    fn positions_into(&self, out: &mut Vec<f64>) {
        self.inner.ensemble().positions_into(out);
    }
    fn output_chains(&self) -> usize {
        1
    }
    fn replica_row(&self) -> Option<Vec<f64>> {
        Some(self.trace_row())
    }
    fn replica_summary(&self, steps: u64) -> Option<ReplicaSummary> {
        Some(ReplicaSummary::of(&self.inner, steps))
    }
}

impl<E: Ensemble<Batch = ()> + ToyChains> ToySampler for Sgmcmc<E> {
    fn positions_into(&self, out: &mut Vec<f64>) {
        self.ensemble().positions_into(out);
    }
}

impl<E: Ensemble<Batch = ()> + ToyChains> ToySampler for Contour<E> {
    fn positions_into(&self, out: &mut Vec<f64>) {
        self.ensemble().positions_into(out);
    }
    fn theta(&self) -> Option<Vec<f64>> {
        Some(self.theta().theta().to_vec())
    }
}

/// The lowest energy on a grid over the target's support (or at the starting points), which
/// places the default energy partition.
fn min_energy(target: &ToyTarget, starts: &[Vec<f64>]) -> f64 {
    let p = target.potential();
    let at_starts = starts
        .iter()
        .map(|x| p.energy(x))
        .fold(f64::INFINITY, f64::min);
    let Some(support) = p.support() else {
        return at_starts;
    };
    let n = if support.len() == 1 { 20_000 } else { 400 };
    let mut umin = at_starts;
    let _ = toy::quadrature::visit_grid(p, 1.0, n, |x, _| umin = umin.min(p.energy(x)));
    umin
}

/// The target of `cfg` with its noise overrides.
pub fn build_target(cfg: &ToyConfig) -> Result<ToyTarget, AppError> {
    let target = toy::by_name(&cfg.target)?;
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
    let spec = cfg.sampler_spec(min_energy(&target, &starts))?;
    match cfg.device.device()? {
        None => {
            let ens = HostEnsemble::new(target.clone(), &starts, cfg.seed)?;
            drive_spec(spec, ens, cfg, target, show_progress)
        }
        Some(device) => {
            let particles = Particles::from_rows(&starts, &device)?;
            let ens = ModuleEnsemble::new(target.clone(), vec![particles], cfg.seed)?;
            drive_spec(spec, ens, cfg, target, show_progress)
        }
    }
}

fn drive_spec<E: Ensemble<Batch = ()> + ToyChains>(
    spec: SamplerSpec,
    ens: E,
    cfg: &ToyConfig,
    target: ToyTarget,
    show_progress: bool,
) -> Result<ToyOutcome, AppError> {
    match spec {
        SamplerSpec::Plain(c) => drive(&mut Sgmcmc::new(c, ens)?, cfg, target, show_progress),
        SamplerSpec::Contour(c) => {
            let mut out = drive(
                &mut Contour::new(c.clone(), ens)?,
                cfg,
                target,
                show_progress,
            )?;
            out.contour = Some(c);
            Ok(out)
        }
        SamplerSpec::Replica(c) => {
            let inner = ReplicaExchange::new(c, ens, cfg.seed)?;
            drive(
                &mut ToyReplica::new(inner, &cfg.replica),
                cfg,
                target,
                show_progress,
            )
        }
    }
}

fn drive<S: ToySampler>(
    sampler: &mut S,
    cfg: &ToyConfig,
    target: ToyTarget,
    show_progress: bool,
) -> Result<ToyOutcome, AppError> {
    let p = cfg.chains;
    let d = target.dim();
    let thinning = Thinning {
        burn_in: cfg.burn_in(),
        thin: cfg.thin,
    };
    let collected_per_chain = (cfg.iters - thinning.burn_in) / thinning.thin;
    // Plot every chain at every `plot_every`-th collection, at most `max_plot_samples` points.
    let plot_every = (collected_per_chain as usize * p)
        .div_ceil(cfg.max_plot_samples.max(1))
        .max(1);
    let log_every = (cfg.iters / cfg.log_points.max(1)).max(1);
    let snapshot_every = (cfg.iters / 100).max(1);
    let mut theta_trace = Vec::new();
    let mode_map = target.potential().modes();
    let outputs = sampler.output_chains();
    let mut modes = mode_map.map(|m| ModeTraces::new(m.n_modes(), outputs));
    let mut mean = WeightedMean::new(d);
    let mut x0 = Traces::new(outputs);
    let mut chosen: Vec<usize> = Vec::with_capacity(p);
    let mut replica_trace = Vec::new();
    let mut plot_samples = Vec::new();
    let mut metrics = Vec::new();
    let mut pos = Vec::with_capacity(p * d);
    let mut n_collections = 0usize;
    let pb = progress::bar(
        cfg.iters,
        &cfg.sampler,
        show_progress && cfg.iters * p as u64 > 2_000_000,
    );
    let tick = (cfg.iters / 200).max(1);
    let start = Instant::now();
    let mut bouncy_moves = 0;
    for k in 0..cfg.iters {
        // A sample is the pre-move point x_k: the report of step k carries its weight.
        let keep = thinning.keeps(k);
        if keep {
            sampler.positions_into(&mut pos);
        }
        let report = sampler.step(&())?;
        bouncy_moves = report.bouncy_moves;
        if k % log_every == 0 || k + 1 == cfg.iters {
            let e = &report.energies;
            let s = report.step_sizes[0];
            let psi = report.step_sizes.iter().map(|s| s.multiplier);
            metrics.push(vec![
                k as f64,
                s.lr,
                s.temperature,
                e.iter().sum::<f64>() / e.len() as f64,
                e.iter().copied().fold(f64::INFINITY, f64::min),
                e.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                psi.clone().fold(f64::INFINITY, f64::min),
                psi.fold(f64::NEG_INFINITY, f64::max),
                report.bouncy_moves as f64,
            ]);
        }
        if keep && report.phase != Some(Phase::Exploration) {
            // Replica exchange collects the chain on rung 0 (after this step's swaps).
            chosen.clear();
            if report.rungs.is_empty() {
                chosen.extend(0..p);
            } else {
                chosen.extend(report.rungs.iter().position(|r| *r == 0));
            }
            for (slot, &c) in chosen.iter().enumerate() {
                let x = &pos[c * d..(c + 1) * d];
                let w = report.weights[c];
                if let (Some(m), Some(map)) = (modes.as_mut(), mode_map) {
                    m.push_weighted(slot, map.mode_of(x), w);
                }
                mean.add(x, w);
                if n_collections.is_multiple_of(plot_every) {
                    plot_samples.push(x.to_vec());
                }
            }
            n_collections += 1;
            x0.push(chosen.iter().map(|c| pos[c * d]));
        }
        if (k % log_every == 0 || k + 1 == cfg.iters)
            && let Some(row) = sampler.replica_row()
        {
            replica_trace.push(std::iter::once(k as f64).chain(row).collect());
        }
        if (k % snapshot_every == 0 || k + 1 == cfg.iters)
            && let Some(t) = sampler.theta()
        {
            theta_trace.push(std::iter::once(k as f64).chain(t).collect());
        }
        if k % tick == 0 {
            pb.set_position(k);
        }
    }
    pb.finish_and_clear();
    Ok(ToyOutcome {
        target,
        modes,
        mean,
        x0,
        plot_samples,
        metrics,
        wall_seconds: start.elapsed().as_secs_f64(),
        theta: sampler.theta(),
        theta_trace,
        bouncy_moves,
        replica: sampler.replica_summary(cfg.iters),
        contour: None,
        replica_trace,
    })
}
