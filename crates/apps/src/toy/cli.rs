//! The `sgmcmc toy` command: its flags, the run's settings (defaults < preset < config file <
//! flags), one run on one process or over the ranks of `mpirun`, and its printed summary.

use std::path::PathBuf;

use clap::Args;
use sgmcmc_engine::flags_over;
use sgmcmc_engine::settings::{apply_sets, check_flags_vs_sets, check_sets_read, with_config};

use crate::error::AppError;
use crate::run_flags::{DeviceFlag, JobFlags, OutputFlags, SettingsFlags};
use crate::toy::{self, ToyConfig};

/// Options of `sgmcmc toy`.
#[derive(Debug, Args)]
pub struct ToyArgs {
    /// Print every target, sampler and preset name and exit.
    #[arg(long)]
    pub list: bool,
    /// Start from a named preset (the papers' settings).
    #[arg(long)]
    pub preset: Option<String>,
    /// `--config` and `--seed`.
    #[command(flatten)]
    pub settings: SettingsFlags,
    /// Target name.
    #[arg(long)]
    pub target: Option<String>,
    /// Sampler name.
    #[arg(long)]
    pub sampler: Option<String>,
    /// Number of independent chains.
    #[arg(long)]
    pub chains: Option<usize>,
    /// Iterations per chain.
    #[arg(long)]
    pub iters: Option<u64>,
    /// `--device`.
    #[command(flatten)]
    pub device: DeviceFlag,
    /// Learning rate (peak for cyclical samplers).
    #[arg(long)]
    pub lr: Option<f64>,
    /// Temperature.
    #[arg(long)]
    pub temperature: Option<f64>,
    /// Any sampler setting, `KEY=VALUE` (repeatable): `momentum=0.95`, `contour.zeta=0.9`,
    /// `replica.temperatures=[1.0, 10.0]` (the fields of `[sampler]` in config.toml).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Burn-in steps.
    #[arg(long)]
    pub burn_in: Option<u64>,
    /// Thinning.
    #[arg(long)]
    pub thin: Option<u64>,
    /// `--out` (default `runs/toy-TARGET-SAMPLER-sSEED`), `--force` and `--quiet`.
    #[command(flatten)]
    pub output: OutputFlags,
    /// Write a checkpoint every this many steps into the run folder (`checkpoint.cbor`; with
    /// `--distributed` a manifest and one part per rank).
    #[arg(long)]
    pub checkpoint_every: Option<u64>,
    /// Stop after this many steps (>= 1), writing a checkpoint (continue with `--resume`).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub stop_after: Option<u64>,
    /// `--resume` and `--distributed` (`mpirun -np 4 sgmcmc toy --preset deo-sgd-25-mode
    /// --distributed`).
    #[command(flatten)]
    pub job: JobFlags,
}

/// Resolves defaults < preset < config file < flags.
pub fn toy_config(a: &ToyArgs) -> Result<ToyConfig, AppError> {
    let mut cfg = match &a.preset {
        Some(name) => toy::preset(name).ok_or_else(|| {
            let known: Vec<&str> = toy::PRESET_NAMES.iter().map(|p| p.0).collect();
            AppError::Usage(format!(
                "unknown preset `{name}` (known: {})",
                known.join(", ")
            ))
        })?,
        None => ToyConfig::default(),
    };
    cfg = with_config(cfg, a.settings.config.as_deref())?;
    flags_over!(cfg, a; chains, iters, thin);
    flags_over!(cfg, a.settings; seed);
    flags_over!(cfg, a.device; device);
    if let Some(t) = &a.target {
        cfg.target = t.as_str().into();
    }
    if let Some(b) = a.burn_in {
        cfg.burn_in = Some(b);
    }
    if let Some(s) = &a.sampler {
        cfg.sampler.name = s.clone();
    }
    if let Some(v) = a.lr {
        cfg.sampler.lr = v;
    }
    if let Some(v) = a.temperature {
        cfg.sampler.temperature = v;
    }
    check_flags_vs_sets(
        &[
            ("lr", "lr", a.lr.is_some()),
            ("temperature", "temperature", a.temperature.is_some()),
            ("sampler", "name", a.sampler.is_some()),
        ],
        &a.set,
    )?;
    cfg.sampler = apply_sets(&cfg.sampler, &a.set)?;
    check_sets_read(&[&cfg.sampler], &a.set)?;
    if a.temperature.is_some() && !cfg.sampler.reads("temperature")? {
        return Err(AppError::Usage(format!(
            "--temperature: {} does not read the temperature (it runs at 0, or its replica \
             ladder sets its own)",
            cfg.sampler.name
        )));
    }
    Ok(cfg)
}

/// `sgmcmc toy`.
pub fn run(a: &ToyArgs) -> Result<(), AppError> {
    if a.list {
        print_list();
        return Ok(());
    }
    if let Some(p) = a
        .preset
        .as_deref()
        .filter(|p| p.starts_with("awsgld-table"))
    {
        return toy::hit_table::run_cli(p, a);
    }
    if let Some(dir) = &a.job.resume {
        return toy::resume::run_cli(a, dir);
    }
    let cfg = toy_config(a)?;
    let out = a.output.dir_or(|| {
        PathBuf::from(format!(
            "runs/toy-{}-{}-s{}",
            cfg.target, cfg.sampler.name, cfg.seed
        ))
    });
    if let Some(note) = cfg.target.note() {
        println!("{note}");
    }
    sgmcmc_engine::experiment::toy::check(&cfg)?;
    let persist = toy::resume::persist(a, &out, &cfg)?;
    toy::resume::run_fresh(a, &cfg, &out, persist)
}

/// Writes a toy run's outputs into `out` and prints its summary (`ranks`: of a distributed
/// run).
pub fn report_toy(
    cfg: &ToyConfig,
    outcome: &toy::ToyOutcome,
    out: &std::path::Path,
    ranks: Option<usize>,
) -> Result<(), AppError> {
    let summary = toy::report::summarize(cfg, outcome)?;
    toy::report::write_outputs(out, cfg, outcome, &summary)?;
    let over = ranks.map_or(String::new(), |r| format!(" over {r} ranks"));
    println!(
        "{} on {}: {} chains{over} x {} iters in {:.2} s ({:.0} chain-steps/s)",
        cfg.sampler.name,
        cfg.target,
        cfg.chains,
        cfg.iters,
        summary.header.wall_seconds,
        summary.chain_steps_per_second
    );
    if let (Some(m), Some(e), Some(l1)) = (
        &summary.mode_masses,
        &summary.exact_mode_masses,
        summary.mode_mass_l1,
    ) {
        println!(
            "mode masses {:?}",
            m.iter()
                .map(|v| (v * 1000.0).round() / 1000.0)
                .collect::<Vec<_>>()
        );
        println!(
            "exact       {:?}",
            e.iter()
                .map(|v| (v * 1000.0).round() / 1000.0)
                .collect::<Vec<_>>()
        );
        if let Some(se) = &summary.exact_mode_mass_se {
            let max = se.iter().copied().fold(0.0, f64::max);
            println!("(exact by Monte Carlo, standard error <= {max:.1e})");
        }
        println!("L1 error {l1:.3}");
    }
    println!("wrote {}", out.display());
    Ok(())
}

fn print_list() {
    println!("targets:");
    for (n, d) in sgmcmc_testfunctions::TARGET_NAMES {
        println!("  {n:<18} {d}");
    }
    println!("samplers:");
    for e in sgmcmc_samplers::registry::ENTRIES {
        println!("  {:<18} {}", e.name, e.about);
    }
    println!("presets:");
    for (n, d) in toy::PRESET_NAMES {
        println!("  {n:<26} {d}");
    }
}
