//! Running a toy configuration on the host fast path or on a tensor device.

use std::time::Instant;

use sgmcmc_samplers::collect::{ModeTraces, Thinning, Traces, WeightedMean};
use sgmcmc_samplers::ensemble::{HostEnsemble, ModuleEnsemble};
use sgmcmc_samplers::rng::ChainRng;
use sgmcmc_samplers::sampler::{Sampler, Sgmcmc};
use sgmcmc_samplers::target::particles::Particles;
use sgmcmc_samplers::target::toy::{self, NoiseModel, ToyTarget};

use super::config::{Init, ToyConfig};
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
}

/// The positions of all chains after a step, for collectors.
trait Positions {
    fn positions_into(&self, out: &mut Vec<f64>);
}

impl Positions for Sgmcmc<HostEnsemble> {
    fn positions_into(&self, out: &mut Vec<f64>) {
        out.clear();
        out.extend_from_slice(self.ensemble().positions());
    }
}

impl Positions for Sgmcmc<ModuleEnsemble<Particles, ToyTarget>> {
    fn positions_into(&self, out: &mut Vec<f64>) {
        out.clear();
        for m in self.ensemble().modules() {
            out.extend(m.rows().into_iter().flatten());
        }
    }
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
    let sampler_cfg = cfg.sampler_config()?;
    let starts = starts(cfg, &target)?;
    match cfg.device.device()? {
        None => {
            let ens = HostEnsemble::new(target.clone(), &starts, cfg.seed)?;
            let mut s = Sgmcmc::new(sampler_cfg, ens)?;
            drive(&mut s, cfg, target, show_progress)
        }
        Some(device) => {
            let particles = Particles::from_rows(&starts, &device)?;
            let ens = ModuleEnsemble::new(target.clone(), vec![particles], cfg.seed)?;
            let mut s = Sgmcmc::new(sampler_cfg, ens)?;
            drive(&mut s, cfg, target, show_progress)
        }
    }
}

fn drive<S: Sampler<Batch = ()> + Positions>(
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
    let mode_map = target.potential().modes();
    let mut modes = mode_map.map(|m| ModeTraces::new(m.n_modes(), p));
    let mut mean = WeightedMean::new(d);
    let mut x0 = Traces::new(p);
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
    for k in 0..cfg.iters {
        let report = sampler.step(&())?;
        if k % log_every == 0 || k + 1 == cfg.iters {
            let e = &report.energies;
            let s = report.step_sizes[0];
            metrics.push(vec![
                k as f64,
                s.lr,
                s.temperature,
                e.iter().sum::<f64>() / e.len() as f64,
                e.iter().copied().fold(f64::INFINITY, f64::min),
                e.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            ]);
        }
        if thinning.collects(report) {
            sampler.positions_into(&mut pos);
            for (c, x) in pos.chunks(d).enumerate() {
                if let (Some(m), Some(map)) = (modes.as_mut(), mode_map) {
                    m.push(c, map.mode_of(x));
                }
                mean.add(x, 1.0);
                if n_collections.is_multiple_of(plot_every) {
                    plot_samples.push(x.to_vec());
                }
            }
            n_collections += 1;
            x0.push(pos.chunks(d).map(|x| x[0]));
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
    })
}
