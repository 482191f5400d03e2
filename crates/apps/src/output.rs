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

/// Whether the folder entry `name` is one of `own` (exact names; a trailing `*` matches a
/// prefix, as in `seed-*`) or the temp file of one ([`temp_path`]).
fn is_own(name: &str, own: &[&str]) -> bool {
    own.iter().any(|o| {
        let temp = temp_path(Path::new(o));
        match o.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == *o || temp.as_os_str() == name,
        }
    })
}

/// The run folder of a fresh run: `dir` created if missing, refused if it holds anything
/// (files of an earlier run would mix with this run's: a stale `summary.json` beside a new
/// checkpoint looks like a finished run) unless `force`, which first deletes the entries of
/// `dir` named in `own`, the files and folders the command writes (folders with everything
/// in them), and leaves every other entry alone.
pub fn fresh_run_dir(dir: &Path, force: bool, own: &[&str]) -> Result<PathBuf, AppError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries
            .map(|e| e.map(|e| e.file_name()))
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
