//! Run directories and atomic file writes (temp file + rename: nothing is left half-written).

use std::path::{Path, PathBuf};

use serde::Serialize;
use sgmcmc_engine::experiment::Console;
use sgmcmc_engine::run_dir;
pub use sgmcmc_engine::run_dir::LOCK_FILE;

use crate::error::AppError;
use crate::progress::Terminal;

/// The fields every run command's `summary.json` starts with (the CLI contract).
#[derive(Clone, Debug, Serialize)]
pub struct RunHeader {
    /// Sampler name(s).
    pub sampler: String,
    /// Target or dataset name(s).
    pub target: String,
    /// Run seed.
    pub seed: u64,
    /// Device (`host` for the f64 fast path).
    pub device: String,
    /// Wall time of the measured work.
    pub wall_seconds: f64,
    /// Sampler steps per second.
    pub steps_per_second: f64,
}

/// `--force` of the commands that write a run folder.
#[derive(Clone, Copy, Debug, Default, clap::Args)]
pub struct Force {
    /// Replace an earlier run in `--out`: delete the files and folders this command writes
    /// there first (other files stay). Without it a non-empty `--out` is refused.
    #[arg(long)]
    pub force: bool,
}

/// Takes the lock of the run folder `dir` ([`run_dir::lock_run_dir`]).
pub fn lock_run_dir(dir: &Path) -> Result<(), AppError> {
    run_dir::lock_run_dir(dir)?.warn(Terminal::warn);
    Ok(())
}

/// The run folder of a fresh run ([`run_dir::fresh_run_dir`]): created, locked, and empty
/// unless `force`, which deletes the entries named in `own` first.
pub fn fresh_run_dir(dir: &Path, force: bool, own: &[&str]) -> Result<PathBuf, AppError> {
    run_dir::fresh_run_dir(dir, force, own)?.warn(Terminal::warn);
    Ok(dir.to_path_buf())
}

/// Creates the run directory.
pub fn run_dir(path: &Path) -> Result<PathBuf, AppError> {
    run_dir::create_run_dir(path)?;
    Ok(path.to_path_buf())
}

/// Writes `bytes` to `path` atomically and durably (temp file, fsync, rename, folder fsync).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), AppError> {
    Ok(sgmcmc_engine::fs::write_atomic(path, bytes)?)
}

/// Writes a value as pretty JSON, atomically.
pub fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<(), AppError> {
    Ok(sgmcmc_engine::fs::write_json(path, value)?)
}

/// Writes a value as TOML, atomically.
pub fn write_toml(path: &Path, value: &impl serde::Serialize) -> Result<(), AppError> {
    Ok(sgmcmc_engine::fs::write_toml(path, value)?)
}

/// Writes rows as CSV with a header, atomically ([`sgmcmc_engine::fs::write_csv`]).
pub fn write_csv(path: &Path, header: &[&str], rows: &[Vec<f64>]) -> Result<(), AppError> {
    Ok(sgmcmc_engine::fs::write_csv(path, header, rows)?)
}

/// The smallest and largest of `values` (`[inf, -inf]` for none, which any value widens).
pub fn range(values: impl Iterator<Item = f64>) -> [f64; 2] {
    values.fold([f64::INFINITY, f64::NEG_INFINITY], |[lo, hi], v| {
        [lo.min(v), hi.max(v)]
    })
}

/// `m +- sd` for a table: the standard deviation to two significant digits and the mean to the
/// same decimal place (`2.97 +- 0.12`); in scientific notation where that needs more than six
/// decimals or the mean is 10^6 or more (`1.36e-4 +- 5.0e-6`: fixed decimals printed naval's
/// RMSE as `0.000 +- 0.000`); with `sd` 0 (one run) the mean to three significant digits.
pub fn mean_pm(m: f64, sd: f64) -> String {
    if !m.is_finite() || !sd.is_finite() {
        return format!("{m} +- {sd}");
    }
    let magnitude = |v: f64| v.abs().log10().floor() as i32;
    let decimals = if sd > 0.0 {
        1 - magnitude(sd)
    } else if m != 0.0 {
        2 - magnitude(m)
    } else {
        0
    };
    if decimals > 6 || (m != 0.0 && magnitude(m) >= 6) {
        return format!("{m:.2e} +- {sd:.1e}");
    }
    let d = decimals.max(0) as usize;
    format!("{m:.d$} +- {sd:.d$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_pm_keeps_two_significant_digits_of_the_spread() {
        assert_eq!(mean_pm(2.9712, 0.1234), "2.97 +- 0.12");
        assert_eq!(mean_pm(1.36e-4, 5.03e-6), "1.36e-4 +- 5.0e-6");
        assert_eq!(mean_pm(0.3, 0.0), "0.300 +- 0.000");
        assert_eq!(mean_pm(12.0, 3.4), "12.0 +- 3.4");
        assert_eq!(mean_pm(123.0, 45.0), "123 +- 45");
        assert_eq!(mean_pm(2.5e7, 1.0e5), "2.50e7 +- 1.0e5");
        assert_eq!(mean_pm(0.0, 0.0), "0 +- 0");
    }
}
