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
use sgmcmc_engine::DeviceChoice;
use sgmcmc_engine::flags_over;
use sgmcmc_engine::settings::with_config;

use crate::error::AppError;

pub use run::predict;
pub use run::{DigitsConfig, DigitsSummary, FILES, Gradients, network, run_digits};

/// Options of `sgmcmc digits`. The run's settings resolve as defaults < `--config` < flags.
#[derive(Debug, Args)]
pub struct DigitsArgs {
    /// TOML config file (the fields of a run's `config.toml`); flags override it.
    #[arg(long)]
    pub config: Option<PathBuf>,
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
    /// Run seed (initial weights, noise, minibatch order) [default: 1].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Gradients: closed-form (hand-written backpropagation) or autodiff (burn autodiff
    /// through the network module) [default: closed-form].
    #[arg(long, value_enum)]
    pub gradients: Option<Gradients>,
    /// Data directory holding `digits/` (default `$SGMCMC_DATA_DIR`, else
    /// `../shared/datasets`); `sgmcmc data fetch digits --to DIR` writes it.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Compute threads of burn's CPU kernels (0: one per core). One is fastest for this small
    /// network (see `sgmcmc_apps::threads`).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Tensor device: flex, ndarray, wgpu or cuda; wgpu:N or cuda:N picks GPU N (without N, under mpirun, the local rank's).
    #[arg(long, default_value_t = DeviceChoice::Flex, value_name = "DEVICE")]
    pub device: DeviceChoice,
    /// Run directory.
    #[arg(long, default_value = "runs/digits")]
    pub out: PathBuf,
    /// Replacing an earlier run in `--out`.
    #[command(flatten)]
    pub force: crate::output::Force,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// The settings `a` asks for: defaults < `--config` < flags.
pub fn config_of(a: &DigitsArgs) -> Result<DigitsConfig, AppError> {
    let mut config = with_config(DigitsConfig::default(), a.config.as_deref())?;
    flags_over!(config, a; sampler, steps, lr, prior_precision, burn_in, bma_every, split_seed, seed, gradients);
    config.validate()?;
    Ok(config)
}

/// Runs `sgmcmc digits`.
pub fn run(a: &DigitsArgs) -> Result<(), AppError> {
    let device = a.device.tensor_device("digits")?;
    let dir = sgmcmc_data::data_root(a.data_dir.as_deref()).join("digits");
    let config = config_of(a)?;
    sgmcmc_engine::limits::check_threads(a.threads)?;
    crate::output::fresh_run_dir(&a.out, a.force.force, FILES)?;
    let s = sgmcmc_engine::jobs::with_threads(a.threads, || {
        run_digits(&config, &dir, &device, &a.out, a.device, !a.quiet)
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
    println!("wrote {}", a.out.join("summary.json").display());
    Ok(())
}
