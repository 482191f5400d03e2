//! `sgmcmc demo`: what the papers' samplers are for, in seconds. On the two-mode mixture
//! `0.4 N(-6, 1) + 0.6 N(4, 1)` (CSGLD paper sec. 4.1, Fig. 1) the barrier between the modes is
//! about 12 nats high: SGLD stays in the mode it falls into, while CSGLD (its importance
//! weights flatten the energy landscape) and replica-exchange SGLD with corrected swaps (a hot
//! replica at temperature 10 crosses the barrier) recover both masses. Mode masses against the
//! exact ones with Monte Carlo errors, and one picture of the three weighted histograms over
//! the exact density (`density.png`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Args;
use serde::Serialize;
use sgmcmc_engine::DeviceChoice;

use crate::error::AppError;
use crate::output::{self, RunHeader};
use crate::run_flags::{DeviceFlag, OutputFlags};
use crate::toy::report::{ToySummary, summarize, write_outputs};
use crate::toy::{ToyConfig, preset, run_toy};

/// Options of `sgmcmc demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Run seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// `--device` (default host).
    #[command(flatten)]
    pub device: DeviceFlag,
    /// Iterations per chain (the paper runs one CSGLD chain for 1e7; 1e6 already tells the
    /// samplers apart).
    #[arg(long, default_value_t = 1_000_000)]
    pub iters: u64,
    /// Chains of SGLD and CSGLD (CSGLD's share theta); reSGLD runs its two replicas.
    #[arg(long, default_value_t = 4)]
    pub chains: usize,
    /// Keep every `thin`-th sample.
    #[arg(long, default_value_t = 10)]
    pub thin: u64,
    /// `--out` (default `runs/demo`), `--force` and `--quiet`.
    #[command(flatten)]
    pub output: OutputFlags,
}

/// `summary.json` of the demo.
#[derive(Serialize)]
struct DemoSummary {
    #[serde(flatten)]
    header: RunHeader,
    mode_labels: Vec<String>,
    exact_mode_masses: Vec<f64>,
    mode_masses: BTreeMap<String, Vec<f64>>,
    mode_mass_se: BTreeMap<String, Vec<f64>>,
    mode_mass_l1: BTreeMap<String, f64>,
    runs: Vec<ToySummary>,
}

/// What the demo writes into `--out`: a toy run folder per sampler and the joint summary.
pub const FILES: &[&str] = &["sgld", "csgld", "resgld", "density.png", "summary.json"];

/// The demo's runs: SGLD, CSGLD and reSGLD on the same mixture from the same start.
const PRESETS: [&str; 3] = [
    "mixture-csgld-sgld",
    "mixture-csgld-quick",
    "mixture-resgld",
];

/// Runs the demo.
pub fn run(a: &DemoArgs) -> Result<(), AppError> {
    let device = a.device.or(DeviceChoice::Host);
    device.device()?;
    let configs = PRESETS
        .into_iter()
        .map(|name| {
            let base =
                preset(name).ok_or_else(|| AppError::Run(format!("missing preset {name}")))?;
            // Replica exchange runs its two replicas (one system); the others `--chains`.
            let chains = if base.sampler.name == "resgld" {
                base.chains
            } else {
                a.chains
            };
            let cfg = ToyConfig {
                chains,
                iters: a.iters,
                seed: a.seed,
                thin: a.thin,
                device,
                ..base
            };
            cfg.validate()?;
            Ok(cfg)
        })
        .collect::<Result<Vec<_>, AppError>>()?;
    let out = a.output.dir_or(|| PathBuf::from("runs/demo"));
    a.output.fresh(&out, FILES)?;
    let mut runs = Vec::new();
    let mut samples = Vec::new();
    for cfg in &configs {
        let outcome = run_toy(cfg, a.output.progress())?;
        let summary = summarize(cfg, &outcome)?;
        write_outputs(&out.join(&cfg.sampler.name), cfg, &outcome, &summary)?;
        runs.push(summary);
        let (x, w) = (outcome.x0.chains.concat(), outcome.weights.chains.concat());
        samples.push((cfg.sampler.name.clone(), x, w, outcome.target));
    }
    let histograms: Vec<(&str, &[f64], &[f64])> = samples
        .iter()
        .map(|(name, x, w, _)| (name.as_str(), x.as_slice(), w.as_slice()))
        .collect();
    sgmcmc_plot::weighted_histograms(
        &out.join("density.png"),
        "0.4 N(-6,1) + 0.6 N(4,1): weighted samples over the exact density",
        samples[0].3.potential(),
        1.0,
        &histograms,
    )?;
    let labels = runs[0].mode_labels.clone().unwrap_or_default();
    let exact = runs[0].exact_mode_masses.clone().unwrap_or_default();
    print_table(&labels, &exact, &runs);
    let wall: f64 = runs.iter().map(|r| r.header.wall_seconds).sum();
    let steps: u64 = runs.iter().map(|r| r.iters).sum();
    let by = |f: &dyn Fn(&ToySummary) -> Option<Vec<f64>>| {
        runs.iter()
            .map(|r| (r.header.sampler.clone(), f(r).unwrap_or_default()))
            .collect()
    };
    let summary = DemoSummary {
        header: RunHeader {
            sampler: runs
                .iter()
                .map(|r| r.header.sampler.as_str())
                .collect::<Vec<_>>()
                .join(","),
            target: configs[0].target.to_string(),
            seed: a.seed,
            device: device.to_string(),
            wall_seconds: wall,
            steps_per_second: steps as f64 / wall.max(1e-12),
        },
        mode_labels: labels,
        exact_mode_masses: exact,
        mode_masses: by(&|r| r.mode_masses.clone()),
        mode_mass_se: by(&|r| r.mode_mass_se.clone()),
        mode_mass_l1: runs
            .iter()
            .map(|r| (r.header.sampler.clone(), r.mode_mass_l1.unwrap_or(f64::NAN)))
            .collect(),
        runs,
    };
    output::write_json(&out.join("summary.json"), &summary)?;
    println!("\nplot: {}", out.join("density.png").display());
    println!("wrote {}", out.join("summary.json").display());
    Ok(())
}

fn print_table(labels: &[String], exact: &[f64], runs: &[ToySummary]) {
    let r0 = &runs[0];
    println!(
        "\n0.4 N(-6,1) + 0.6 N(4,1) from x = 0, {} iterations per chain, seed {} (mass ± Monte \
         Carlo s.e.)\n",
        r0.iters, r0.header.seed
    );
    print!("{:<9} {:>7}", "mode", "exact");
    for r in runs {
        print!("   {:>16}", r.header.sampler);
    }
    println!();
    for (i, l) in labels.iter().enumerate() {
        print!("{l:<9} {:>7.3}", exact[i]);
        for r in runs {
            let m = r.mode_masses.as_ref().map_or(f64::NAN, |m| m[i]);
            let se = r.mode_mass_se.as_ref().map_or(f64::NAN, |s| s[i]);
            print!("   {:>8.3} ± {:<5.3}", m, se);
        }
        println!();
    }
    print!("{:<9} {:>7}", "L1 error", "");
    for r in runs {
        print!("   {:>16.3}", r.mode_mass_l1.unwrap_or(f64::NAN));
    }
    println!();
    print!("{:<9} {:>7}", "chains", "");
    for r in runs {
        print!("   {:>16}", r.chains);
    }
    println!();
    print!("{:<9} {:>7}", "R-hat x0", "");
    for r in runs {
        print!("   {:>16.3}", r.rhat_x0);
    }
    println!();
    print!("{:<9} {:>7}", "steps/s", "");
    for r in runs {
        print!("   {:>16.0}", r.chain_steps_per_second);
    }
    println!("  (chain-steps)");
}
