//! `sgmcmc toy`: samplers on the papers' analytic targets.

pub mod cli;
pub mod config;
pub mod hit_table;
pub mod presets;
pub mod report;
pub mod resume;
pub mod run;

pub use config::{Init, ToyConfig, toy_sampler};
pub use presets::{PRESET_NAMES, preset};
pub use run::{ToyOutcome, run_toy};
pub use sgmcmc_testfunctions::{MixtureSpec, TargetChoice, TargetSpec};
