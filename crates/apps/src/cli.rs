//! Command-line parsing and dispatch.

use std::ffi::OsString;

use clap::parser::ValueSource;
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::demo;
use crate::error::AppError;
use crate::output::{Force, fresh_run_dir};
use crate::toy;

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
    Demo(demo::DemoArgs),
    /// Run a sampler on an analytic toy target.
    Toy(toy::cli::ToyArgs),
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
        Command::Toy(a) => toy::cli::run(&a),
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
    ("uci", &["jobs", "quiet", "distributed"]),
    ("mnist", &["stop_after", "quiet", "distributed"]),
    ("images", &["stop_after", "quiet", "distributed"]),
    ("toy", &["stop_after", "quiet", "distributed"]),
];

/// The flags `--config` takes beside it where the file is a whole run's configuration (the
/// `config.toml` a run wrote): where and how to run it, and the run's length and seeds.
const CONFIG_KEEPS: &[(&str, &[&str])] = &[
    (
        "uci",
        &["out", "force", "jobs", "data_dir", "quiet", "distributed"],
    ),
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
