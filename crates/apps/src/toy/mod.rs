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

use sgmcmc_engine::RunError;

use crate::error::AppError;

/// Runs `cfg` in one process ([`sgmcmc_engine::experiment::toy::run_toy`]); `show_progress`
/// draws a progress bar for a long run.
pub fn run_toy(cfg: &ToyConfig, show_progress: bool) -> Result<ToyOutcome, AppError> {
    with_progress(cfg, show_progress, |p| {
        sgmcmc_engine::experiment::toy::run_toy(cfg, p)
    })
}

/// `run` with a progress callback that draws the bar of a run of `cfg`, shown when `show` and
/// the run is long (more than 2e6 chain-steps). The bar starts at the first report (the
/// engine reports on rank 0 alone).
fn with_progress<T>(
    cfg: &ToyConfig,
    show: bool,
    run: impl FnOnce(&mut dyn FnMut(u64, u64)) -> Result<T, RunError>,
) -> Result<T, AppError> {
    let long = cfg.iters * cfg.chains as u64 > 2_000_000;
    let mut bar: Option<ProgressBar> = None;
    let out = run(&mut |done, _| {
        bar.get_or_insert_with(|| crate::progress::bar(cfg.iters, &cfg.sampler.name, show && long))
            .set_position(done)
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    Ok(out?)
}
