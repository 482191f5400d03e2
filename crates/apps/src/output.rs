//! Run directories and atomic file writes (temp file + rename: nothing is left half-written).

use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::AppError;

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

/// Whether the folder entry `name` is one of `own` or the temp file of one ([`temp_path`]).
/// A pattern is an exact name, or ends in `#` (one or more ASCII digits: `seed-#` is `seed-0`,
/// `seed-12`, not a user's `seed-bank`) or in `*` (any rest: `checkpoint.rank-*`).
fn is_own(name: &str, own: &[&str]) -> bool {
    own.iter().any(|o| {
        let temp = temp_path(Path::new(o));
        if let Some(prefix) = o.strip_suffix('#') {
            name.strip_prefix(prefix)
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        } else if let Some(prefix) = o.strip_suffix('*') {
            name.starts_with(prefix)
        } else {
            name == *o || temp.as_os_str() == name
        }
    })
}

/// The lock file of a run folder ([`lock_run_dir`]).
pub const LOCK_FILE: &str = ".sgmcmc.lock";

/// The run folders this process holds locked (until it exits).
static LOCKS: std::sync::Mutex<Vec<(PathBuf, fs::File)>> = std::sync::Mutex::new(Vec::new());

/// Takes the lock of the run folder `dir` (an advisory lock on `dir/.sgmcmc.lock`, held until
/// the process exits, released by the system if it dies): a second run into the folder, a
/// `--force` that would delete a live run's files or a `--resume` of a running run is refused
/// in one line instead of mixing or deleting its files. Taking a folder this process already
/// holds is a no-op, and so is a folder that does not exist (a `--resume` of it fails on its
/// own). In a distributed run only rank 0 takes it.
pub fn lock_run_dir(dir: &Path) -> Result<(), AppError> {
    if !dir.is_dir() {
        return Ok(());
    }
    let key = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut held = LOCKS.lock().unwrap_or_else(|e| e.into_inner());
    if held.iter().any(|(p, _)| *p == key) {
        return Ok(());
    }
    let path = dir.join(LOCK_FILE);
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| {
            AppError::Input(format!(
                "output folder {} is not writable (its lock {LOCK_FILE}: {e})",
                dir.display()
            ))
        })?;
    match file.try_lock() {
        Ok(()) => held.push((key, file)),
        Err(fs::TryLockError::WouldBlock) => {
            return Err(AppError::Usage(format!(
                "output folder {} is in use by another sgmcmc run; wait for it to end or \
                 choose another --out",
                dir.display()
            )));
        }
        // A file system without locks (some network mounts): the run goes on unguarded.
        Err(fs::TryLockError::Error(e)) => {
            eprintln!(
                "warning: cannot lock {} ({e}); nothing keeps another run out of this folder",
                path.display()
            );
        }
    }
    Ok(())
}

/// The run folder of a fresh run: `dir` created if missing and locked ([`lock_run_dir`]),
/// refused if it holds anything (files of an earlier run would mix with this run's: a stale
/// `summary.json` beside a new checkpoint looks like a finished run) unless `force`, which
/// first deletes the entries of `dir` named in `own`, the files and folders the command writes
/// (folders with everything in them), and leaves every other entry alone.
pub fn fresh_run_dir(dir: &Path, force: bool, own: &[&str]) -> Result<PathBuf, AppError> {
    if dir.is_file() {
        return Err(AppError::Input(format!(
            "output folder {} is a file",
            dir.display()
        )));
    }
    run_dir(dir)?;
    lock_run_dir(dir)?;
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries
            .map(|e| e.map(|e| e.file_name()))
            .filter(|e| !matches!(e, Ok(n) if n == LOCK_FILE))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| AppError::Input(format!("cannot list {}: {e}", dir.display())))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) if dir.is_file() => {
            return Err(AppError::Input(format!(
                "output folder {} is a file ({e})",
                dir.display()
            )));
        }
        Err(e) => {
            return Err(AppError::Input(format!(
                "cannot read output folder {}: {e}",
                dir.display()
            )));
        }
    };
    if !entries.is_empty() && !force {
        return Err(AppError::Usage(format!(
            "output folder {} is not empty; pass --force to replace the earlier run's files \
             in it, or choose another --out",
            dir.display()
        )));
    }
    for name in entries {
        let path = dir.join(&name);
        if !is_own(&name.to_string_lossy(), own) {
            continue;
        }
        let removed = if path.is_dir() {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
        removed.map_err(|e| AppError::Input(format!("cannot remove {}: {e}", path.display())))?;
    }
    run_dir(dir)?;
    // A folder that cannot take a file is refused now, not after the run.
    let probe = dir.join(".sgmcmc-write-test");
    write_atomic(&probe, b"")
        .and_then(|()| {
            fs::remove_file(&probe)
                .map_err(|e| AppError::Input(format!("cannot remove {}: {e}", probe.display())))
        })
        .map_err(|e| {
            AppError::Input(format!(
                "output folder {} is not writable ({e})",
                dir.display()
            ))
        })?;
    Ok(dir.to_path_buf())
}

/// Creates the run directory.
pub fn run_dir(path: &Path) -> Result<PathBuf, AppError> {
    fs::create_dir_all(path).map_err(|e| {
        AppError::Input(format!(
            "cannot create output directory {}: {e}",
            path.display()
        ))
    })?;
    Ok(path.to_path_buf())
}

/// Writes `bytes` to `path` atomically and durably (temp file, fsync, rename, folder fsync).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), AppError> {
    Ok(sgmcmc_engine::fs::write_atomic(path, bytes)?)
}

/// A sibling temp path for atomic writes of files produced by other writers (e.g. plots).
pub fn temp_path(path: &Path) -> PathBuf {
    sgmcmc_engine::fs::temp_path(path)
}

/// Moves a finished temp file into place (fsync, rename, folder fsync).
pub fn commit(tmp: &Path, path: &Path) -> Result<(), AppError> {
    Ok(sgmcmc_engine::fs::commit(tmp, path)?)
}

/// Writes a value as pretty JSON, atomically.
pub fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<(), AppError> {
    let text = serde_json::to_string_pretty(value).map_err(|e| AppError::Run(e.to_string()))?;
    write_atomic(path, text.as_bytes())
}

/// Writes a value as TOML, atomically.
pub fn write_toml(path: &Path, value: &impl serde::Serialize) -> Result<(), AppError> {
    let text = toml::to_string_pretty(value).map_err(|e| AppError::Run(e.to_string()))?;
    write_atomic(path, text.as_bytes())
}

/// Writes rows as CSV with a header, atomically.
pub fn write_csv(path: &Path, header: &[&str], rows: &[Vec<f64>]) -> Result<(), AppError> {
    let mut text = header.join(",");
    text.push('\n');
    for r in rows {
        let cells: Vec<String> = r.iter().map(|v| format!("{v}")).collect();
        text.push_str(&cells.join(","));
        text.push('\n');
    }
    write_atomic(path, text.as_bytes())
}

/// The data directory of a run: `flag` if given, else `$SGMCMC_DATA_DIR` (an empty value counts
/// as unset), else `../shared/datasets`.
pub fn data_root(flag: Option<&Path>) -> PathBuf {
    flag.map(Path::to_path_buf)
        .or_else(|| {
            std::env::var_os("SGMCMC_DATA_DIR")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| PathBuf::from("../shared/datasets"))
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

/// Checks that a seed fits the signed 64-bit integers of TOML configs (`config.toml`).
pub fn check_seed(seed: u64) -> Result<(), AppError> {
    if i64::try_from(seed).is_err() {
        return Err(AppError::Usage(format!(
            "seed {seed} is too large (at most {}, the largest integer a config file holds)",
            i64::MAX
        )));
    }
    Ok(())
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
