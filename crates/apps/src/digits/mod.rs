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
//! [`MlpPosterior`](sgmcmc_models::mlp::MlpPosterior) on the plain device; after `burn_in`
//! steps, every `bma_every` steps the chain's softmax on the test set joins an equally weighted
//! average (`Bma`).

mod run;

use std::path::PathBuf;

use clap::Args;

use crate::device::DeviceChoice;
use crate::error::AppError;

pub(crate) use run::predict;
pub use run::{DigitsConfig, DigitsSummary, FILES, network, run_digits};

/// Options of `sgmcmc digits`.
#[derive(Debug, Args)]
pub struct DigitsArgs {
    /// Sampler: sgld, sghmc, psgld, sgd or msgd.
    #[arg(long, default_value = "sgld")]
    pub sampler: String,
    /// Sampler steps.
    #[arg(long, default_value_t = DigitsConfig::default().steps)]
    pub steps: u64,
    /// Learning rate at full-data scale (the step on `U`, not on the mean loss).
    #[arg(long, default_value_t = DigitsConfig::default().lr)]
    pub lr: f64,
    /// Prior precision of every weight and bias (`N(0, 1 / precision)`).
    #[arg(long, default_value_t = DigitsConfig::default().prior_precision)]
    pub prior_precision: f64,
    /// Steps before the first model joins the average.
    #[arg(long, default_value_t = DigitsConfig::default().burn_in)]
    pub burn_in: u64,
    /// Steps between models of the average.
    #[arg(long, default_value_t = DigitsConfig::default().bma_every)]
    pub bma_every: u64,
    /// Seed of the train/test split.
    #[arg(long, default_value_t = 0)]
    pub split_seed: u64,
    /// Run seed (initial weights, noise, minibatch order).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Data directory holding `digits/` (default `$SGMCMC_DATA_DIR`, else
    /// `../shared/datasets`); `sgmcmc data fetch digits --to DIR` writes it.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Compute threads of burn's CPU kernels (0: one per core). One is fastest for this small
    /// network (see `sgmcmc_apps::threads`).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Tensor backend.
    #[arg(long, value_enum, default_value_t = DeviceChoice::Flex)]
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

/// Runs `sgmcmc digits`.
pub fn run(a: &DigitsArgs) -> Result<(), AppError> {
    let device = a.device.device()?.ok_or_else(|| {
        AppError::Usage("digits needs a tensor device (flex, ndarray or wgpu)".into())
    })?;
    let dir = crate::output::data_root(a.data_dir.as_deref()).join("digits");
    let config = DigitsConfig {
        sampler: a.sampler.clone(),
        steps: a.steps,
        lr: a.lr,
        prior_precision: a.prior_precision,
        burn_in: a.burn_in,
        bma_every: a.bma_every,
        split_seed: a.split_seed,
        seed: a.seed,
        ..DigitsConfig::default()
    };
    crate::output::fresh_run_dir(&a.out, a.force.force, FILES)?;
    let s = crate::threads::with_threads(a.threads, || {
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
