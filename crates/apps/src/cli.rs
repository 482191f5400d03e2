//! Command-line parsing and dispatch.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use sgmcmc_engine::DeviceChoice;
use sgmcmc_engine::flags_over;
use sgmcmc_engine::settings::{apply_sets, check_flags_vs_sets, check_sets_read, with_config};

use crate::demo;
use crate::error::AppError;
use crate::output::{Force, fresh_run_dir};
use crate::toy::{self, ToyConfig};

/// Stochastic-gradient MCMC for Bayesian deep learning (Deng et al.'s samplers on burn).
#[derive(Debug, Parser)]
#[command(name = "sgmcmc", version, about)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// SGLD, CSGLD and reSGLD on a two-mode mixture with a high barrier: mode masses against the exact ones and one picture (no data needed).
    Demo(DemoArgs),
    /// Run a sampler on an analytic toy target.
    Toy(ToyArgs),
    /// Variance-reduced replica exchange on the thesis' data posterior (sec. 3.5.1, Fig. 3.2).
    VrResgld(VrCommand),
    /// UCI regression benchmark (CSGLD paper Table 1): one dataset and sampler, or `--table`.
    Uci(crate::uci::UciArgs),
    /// MNIST mode exploration (thesis 6.4.1 / 7.2.3): ICSGLD, AWSGLD and baselines on digits 0-4.
    Mnist(crate::mnist::MnistArgs),
    /// Image classification tables (thesis 2.1-6.1): ResNets on CIFAR-10/100 (SVHN out of
    /// distribution) and Fashion-MNIST / MNIST, every sampler of the tables, BMA metrics.
    Images(crate::images::ImagesArgs),
    /// The BlackJAX comparison: SGLD on a 64-100-10 tanh MLP over the 8x8 digits, streaming BMA.
    Digits(crate::digits::DigitsArgs),
    /// The mushroom contextual bandit (thesis 6.4.3): cumulative regret of EpsGreedy, SGD and
    /// Langevin agents (pSGLD, pCSGLD, pICSGLD) with Thompson sampling.
    Bandit(crate::bandit::BanditArgs),
    /// Predict with a saved posterior (a run written with --save-samples) on new inputs.
    Predict(crate::predict::PredictArgs),
    /// Fetch or verify benchmark data.
    #[command(subcommand)]
    Data(crate::data_cmd::DataCommand),
}

/// Options of `sgmcmc demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Run directory.
    #[arg(long, default_value = "runs/demo")]
    pub out: PathBuf,
    /// Run seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Where chains run: host (f64 fast path) or a tensor device (flex, ndarray, wgpu, cuda; wgpu:N or cuda:N for GPU N).
    #[arg(long, default_value_t = DeviceChoice::Host, value_name = "DEVICE")]
    pub device: DeviceChoice,
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
    /// Replacing an earlier run in `--out`.
    #[command(flatten)]
    pub force: Force,
    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
}

/// Options of `sgmcmc toy`.
#[derive(Debug, Args)]
pub struct ToyArgs {
    /// Print every target, sampler and preset name and exit.
    #[arg(long)]
    pub list: bool,
    /// Start from a named preset (the papers' settings).
    #[arg(long)]
    pub preset: Option<String>,
    /// TOML config file (fields of the run's config.toml); flags override it.
    #[arg(long)]
    pub config: Option<PathBuf>,
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
    /// Run seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Where chains run: host, flex, ndarray, wgpu or cuda (wgpu:N or cuda:N for GPU N).
    #[arg(long, value_name = "DEVICE")]
    pub device: Option<DeviceChoice>,
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
    /// Run directory (default runs/toy-TARGET-SAMPLER-sSEED).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replacing an earlier run in `--out`.
    #[command(flatten)]
    pub force: Force,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Spread the chains over the ranks of `mpirun` (build feature `mpi`): `mpirun -np 4
    /// sgmcmc toy --preset deo-sgd-25-mode --distributed`. Rank 0 writes the run folder.
    #[arg(long)]
    pub distributed: bool,
    /// Write a checkpoint every this many steps into the run folder (`checkpoint.cbor`; with
    /// `--distributed` a manifest and one part per rank).
    #[arg(long)]
    pub checkpoint_every: Option<u64>,
    /// Stop after this many steps (>= 1), writing a checkpoint (continue with `--resume`).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub stop_after: Option<u64>,
    /// Continue the checkpointed run in this folder with the settings it recorded (with
    /// `--distributed`, on as many ranks as wrote it).
    #[arg(long)]
    pub resume: Option<PathBuf>,
}

/// `sgmcmc vr-resgld`: its options and `--force`.
#[derive(Debug, Args)]
pub struct VrCommand {
    /// The study's options.
    #[command(flatten)]
    pub args: crate::vr::VrArgs,
    /// Replacing an earlier run in `--out`.
    #[command(flatten)]
    pub force: Force,
}

/// A command that another crate adds to `sgmcmc` (the benchmark harness): its clap
/// definition (name, about, arguments) and what runs it on the parsed arguments.
pub struct External {
    /// The subcommand, as clap's builder gives it (`Args::augment_args` of a derived struct).
    pub command: clap::Command,
    /// Runs the command on its own matches.
    pub run: fn(&ArgMatches) -> Result<(), AppError>,
}

/// Parses `args` as [`Cli`] with the `external` commands beside its own, and runs the command.
pub fn dispatch<I, T>(args: I, external: &[External]) -> Result<(), AppError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let command = external
        .iter()
        .fold(Cli::command(), |c, e| c.subcommand(e.command.clone()));
    let matches = match command.try_get_matches_from(args) {
        Ok(m) => m,
        Err(e) => return clap_error(e),
    };
    if let Some((name, sub)) = matches.subcommand()
        && let Some(e) = external.iter().find(|e| e.command.get_name() == name)
    {
        return (e.run)(sub);
    }
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => return clap_error(e),
    };
    check_exclusive(&matches)?;
    match cli.command {
        Command::Demo(a) => demo::run(&a),
        Command::Toy(a) => run_toy(&a),
        Command::VrResgld(a) => {
            let base = crate::vr::config_of(&a.args)?;
            fresh_run_dir(&a.args.out, a.force.force, crate::vr::FILES)?;
            crate::vr::run_cli(&a.args, base)
        }
        Command::Uci(a) => crate::uci::run(&a),
        Command::Data(c) => crate::data_cmd::run(&c),
        Command::Mnist(a) => crate::mnist::run(&a),
        Command::Images(a) => crate::images::run(&a),
        Command::Digits(a) => crate::digits::run(&a),
        Command::Bandit(a) => crate::bandit::run(&a),
        Command::Predict(a) => crate::predict::run(&a),
    }
}

/// What a parse error means: the help or version asked for (printed, success), `sgmcmc` alone
/// (the help, then bad usage: nothing ran), or bad usage in one line.
pub fn clap_error(e: clap::Error) -> Result<(), AppError> {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        print!("{e}");
        return Ok(());
    }
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        print!("{e}");
        return Err(AppError::Usage(
            "a command is needed (the list above; `sgmcmc demo` runs the demo)".into(),
        ));
    }
    let first = e.to_string();
    let line = first
        .lines()
        .next()
        .unwrap_or("bad usage")
        .trim_start_matches("error: ");
    Err(AppError::Usage(format!("{line} (see --help)")))
}

/// The flags `--resume` takes beside it, per command: how to run, never what runs.
const RESUME_KEEPS: &[(&str, &[&str])] = &[
    ("uci", &["jobs", "distributed"]),
    ("mnist", &["stop_after", "quiet", "distributed"]),
    ("images", &["stop_after", "quiet", "distributed"]),
    ("toy", &["stop_after", "quiet", "distributed"]),
];

/// The flags `--config` takes beside it where the file is a whole run's configuration (the
/// `config.toml` a run wrote): where and how to run it, and the run's length and seeds.
const CONFIG_KEEPS: &[(&str, &[&str])] = &[
    ("uci", &["out", "force", "jobs", "data_dir", "distributed"]),
    ("vr-resgld", &["out", "force", "iters", "seed"]),
    (
        "bandit",
        &[
            "out", "force", "seeds", "data_dir", "threads", "device", "quiet",
        ],
    ),
];

/// `--resume` continues a run with the settings it recorded, and `--config` of `uci`,
/// `vr-resgld` and `bandit` repeats one: any flag given beside them that is not in [`RESUME_KEEPS`] /
/// [`CONFIG_KEEPS`] would change the run and is refused (new flags are covered without a list
/// of their own).
fn check_exclusive(matches: &ArgMatches) -> Result<(), AppError> {
    for (flag, keeps, why) in [
        (
            "resume",
            RESUME_KEEPS,
            "continues a run with the settings it recorded",
        ),
        ("config", CONFIG_KEEPS, "repeats the run the file describes"),
    ] {
        if let Some(arg) = conflicting(matches, flag, keeps) {
            return Err(AppError::Usage(format!(
                "--{flag} {why}; --{arg} would change it (start a new run instead)"
            )));
        }
    }
    Ok(())
}

/// The first flag given beside `flag` that its command's entry in `keeps` does not list
/// (`None` where `flag` was not given, or the command has no entry and takes any flag).
fn conflicting(matches: &ArgMatches, flag: &str, keeps: &[(&str, &[&str])]) -> Option<String> {
    let (name, sub) = matches.subcommand()?;
    let keeps = keeps.iter().find(|(n, _)| *n == name)?.1;
    let command = Cli::command();
    let spec = command.find_subcommand(name)?;
    let given = |id: &str| sub.value_source(id) == Some(ValueSource::CommandLine);
    if !spec.get_arguments().any(|a| a.get_id() == flag) || !given(flag) {
        return None;
    }
    spec.get_arguments()
        .find(|a| {
            let id = a.get_id().as_str();
            id != flag && !keeps.contains(&id) && given(id)
        })
        .map(|a| a.get_long().unwrap_or(a.get_id().as_str()).to_string())
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
    cfg = with_config(cfg, a.config.as_deref())?;
    flags_over!(cfg, a; chains, iters, seed, device, thin);
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

fn run_toy(a: &ToyArgs) -> Result<(), AppError> {
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
    if let Some(dir) = &a.resume {
        return toy::resume::run_cli(a, dir);
    }
    let cfg = toy_config(a)?;
    let out = a.out.clone().unwrap_or_else(|| {
        PathBuf::from(format!(
            "runs/toy-{}-{}-s{}",
            cfg.target, cfg.sampler.name, cfg.seed
        ))
    });
    if let Some(note) = cfg.target.note() {
        println!("{note}");
    }
    toy::run::check(&cfg)?;
    let persist = toy::resume::persist(a, &out, &cfg)?;
    let ranks = crate::distributed::ranks_of(a.distributed)?;
    ranks.on_leader(|| fresh_run_dir(&out, a.force.force, toy::report::FILES).map(drop))?;
    toy::resume::finish(&ranks, &cfg, &out, !a.quiet, persist)
}

/// Writes a toy run's outputs into `out` and prints its summary (`ranks`: of a distributed
/// run).
pub(crate) fn report_toy(
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
