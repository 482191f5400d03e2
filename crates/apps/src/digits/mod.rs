//! `sgmcmc digits`: the BlackJAX comparison task. SGLD (or another kernel) on a 64-100-10 tanh
//! MLP over the handwritten digits (the 1797 8x8 images scikit-learn ships as `load_digits`,
//! UCI's optdigits test set), batch 100, with a streaming Bayesian model average of the test
//! predictions every 100 steps; reports the average's accuracy, NLL and ECE, and the steps per
//! second of the whole loop (stepping and averaging).
//!
//! Protocol (ours; the BlackJAX figures quoted in the issue give no settings): pixels / 16;
//! a seeded 80/20 split (1437 train, 360 test, scikit-learn's `train_test_split` sizes);
//! each epoch a fresh permutation of the training set cut into windows of 100 (the last
//! partial window dropped); posterior `U(theta) = (N / n) sum_batch CE + prior_precision / 2
//! |theta|^2` at temperature 1; the closed-form gradients of
//! [`MlpPosterior`](sgmcmc_models::mlp::MlpPosterior) on the plain device (or, with
//! `--gradients autodiff`, burn autodiff through the network module); after `burn_in`
//! steps, every `bma_every` steps the chain's softmax on the test set joins an equally weighted
//! average (`Bma`).

mod run;

use std::path::PathBuf;

use clap::Args;
use sgmcmc_engine::flags_over;
use sgmcmc_engine::settings::with_config;

use crate::error::AppError;
use crate::run_flags::{DataDir, DeviceFlag, OutputFlags, SettingsFlags};

pub use run::predict;
pub use run::{DigitsConfig, DigitsSummary, FILES, Gradients, network, run_digits};

/// Options of `sgmcmc digits`. The run's settings resolve as defaults < `--config` < flags.
#[derive(Debug, Args)]
pub struct DigitsArgs {
    /// `--config` and `--seed` (initial weights, noise, minibatch order).
    #[command(flatten)]
    pub settings: SettingsFlags,
    /// Sampler: sgld, sghmc, psgld, sgnht, sgd or msgd [default: sgld].
    #[arg(long)]
    pub sampler: Option<String>,
    /// Sampler steps [default: 20000].
    #[arg(long)]
    pub steps: Option<u64>,
    /// Learning rate at full-data scale (the step on `U`, not on the mean loss) [default: 5e-5].
    #[arg(long)]
    pub lr: Option<f64>,
    /// Prior precision of every weight and bias (`N(0, 1 / precision)`) [default: 1].
    #[arg(long)]
    pub prior_precision: Option<f64>,
    /// Steps before the first model joins the average [default: 2000].
    #[arg(long)]
    pub burn_in: Option<u64>,
    /// Steps between models of the average [default: 100].
    #[arg(long)]
    pub bma_every: Option<u64>,
    /// Seed of the train/test split [default: 0].
    #[arg(long)]
    pub split_seed: Option<u64>,
    /// Gradients: closed-form (hand-written backpropagation) or autodiff (burn autodiff
    /// through the network module) [default: closed-form].
    #[arg(long, value_enum)]
    pub gradients: Option<Gradients>,
    /// `--data-dir` (holding `digits/`).
    #[command(flatten)]
    pub data: DataDir,
    /// Compute threads of burn's CPU kernels (0: one per core). One is fastest for this small
    /// network (see `sgmcmc_apps::threads`).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// `--device`.
    #[command(flatten)]
    pub device: DeviceFlag,
    /// `--out` (default `runs/digits`), `--force` and `--quiet`.
    #[command(flatten)]
    pub output: OutputFlags,
}

/// The settings `a` asks for: defaults < `--config` < flags.
pub fn config_of(a: &DigitsArgs) -> Result<DigitsConfig, AppError> {
    let mut config = with_config(DigitsConfig::default(), a.settings.config.as_deref())?;
    flags_over!(config, a; sampler, steps, lr, prior_precision, burn_in, bma_every, split_seed,
        gradients);
    flags_over!(config, a.settings; seed);
    config.validate()?;
    Ok(config)
}

/// Runs `sgmcmc digits`.
pub fn run(a: &DigitsArgs) -> Result<(), AppError> {
    let choice = a.device.tensor();
    let device = choice.tensor_device("digits")?;
    let dir = a.data.root().join("digits");
    let config = config_of(a)?;
    sgmcmc_engine::limits::check_threads(a.threads)?;
    let out = a.output.dir_or(|| PathBuf::from("runs/digits"));
    a.output.fresh(&out, FILES)?;
    let s = sgmcmc_engine::jobs::with_threads(a.threads, || {
        run_digits(&config, &dir, &device, &out, choice, a.output.progress())
    })??;
    println!(
        "{}: BMA of {} models: accuracy {:.4}, NLL {:.4}, ECE {:.4}; {:.0} steps/s ({:.2} s)",
        config.sampler,
        s.models,
        s.accuracy,
        s.nll,
        s.ece,
        s.header.steps_per_second,
        s.header.wall_seconds
    );
    println!("wrote {}", out.join("summary.json").display());
    Ok(())
}
