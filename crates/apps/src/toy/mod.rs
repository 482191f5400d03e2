//! `sgmcmc toy`: samplers on the papers' analytic targets.

pub mod cli;
pub mod hit_table;
pub mod presets;
pub mod report;
pub mod resume;

use indicatif::ProgressBar;
pub use presets::{PRESET_NAMES, preset};
pub use sgmcmc_engine::experiment::toy::{Init, ToyConfig, ToyOutcome, toy_sampler};
pub use sgmcmc_testfunctions::{MixtureSpec, TargetChoice, TargetSpec};

use crate::error::AppError;

/// Runs `cfg` in one process ([`sgmcmc_engine::experiment::toy::run_toy`]); `show_progress`
/// draws a progress bar for a long run.
pub fn run_toy(cfg: &ToyConfig, show_progress: bool) -> Result<ToyOutcome, AppError> {
    let bar = progress_bar(cfg, show_progress);
    let outcome = sgmcmc_engine::experiment::toy::run_toy(cfg, |done, _| bar.set_position(done));
    bar.finish_and_clear();
    Ok(outcome?)
}

/// The progress bar of a run of `cfg`, shown when `show` and the run is long (more than 2e6
/// chain-steps).
fn progress_bar(cfg: &ToyConfig, show: bool) -> ProgressBar {
    let long = cfg.iters * cfg.chains as u64 > 2_000_000;
    crate::progress::bar(cfg.iters, &cfg.sampler.name, show && long)
}
