//! Files that are never left half-written: write a sibling temp file, flush it to disk, rename
//! it into place, then flush the folder entry (so a crash or SIGKILL leaves either the old file
//! or the new one, never a torn one).

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::RunError;

/// Writes `bytes` to `path` atomically and durably.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), RunError> {
    let tmp = temp_path(path);
    let result = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        sync_dir(path)
    })();
    result.map_err(|e| {
        let _ = fs::remove_file(&tmp);
        RunError::io("cannot write", path, e)
    })
}

/// A hidden sibling of `path` for its temp file; the extension stays last (plot backends pick
/// the image format from it).
pub fn temp_path(path: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match path.extension() {
        Some(ext) => path.with_file_name(format!(".{stem}.tmp.{}", ext.to_string_lossy())),
        None => path.with_file_name(format!(".{stem}.tmp")),
    }
}

/// Moves a finished temp file into place and flushes the folder entry.
pub fn commit(tmp: &Path, path: &Path) -> Result<(), RunError> {
    let done = File::open(tmp)
        .and_then(|f| f.sync_all())
        .and_then(|()| fs::rename(tmp, path))
        .and_then(|()| sync_dir(path));
    done.map_err(|e| RunError::io("cannot write", path, e))
}

/// Flushes the folder holding `path` (the rename's directory entry).
pub fn sync_dir(path: &Path) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    // Folders can be opened read-only and synced on Unix; elsewhere this is best effort.
    match File::open(dir) {
        Ok(d) => d.sync_all().or(Ok(())),
        Err(_) => Ok(()),
    }
}

/// Writes `value` as TOML, atomically (a serialisation failure is [`RunError::Observer`]).
pub fn write_toml(path: &Path, value: &impl serde::Serialize) -> Result<(), RunError> {
    let text = toml::to_string_pretty(value).map_err(|e| RunError::Observer(e.to_string()))?;
    write_atomic(path, text.as_bytes())
}

/// Writes `value` as pretty JSON, atomically (a serialisation failure is
/// [`RunError::Observer`]).
pub fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<(), RunError> {
    let text =
        serde_json::to_string_pretty(value).map_err(|e| RunError::Observer(e.to_string()))?;
    write_atomic(path, text.as_bytes())
}

/// Writes rows of numbers as CSV under a header, atomically (each number as Rust prints it:
/// the shortest text that reads back to the same `f64`).
pub fn write_csv(path: &Path, header: &[&str], rows: &[Vec<f64>]) -> Result<(), RunError> {
    let mut text = header.join(",");
    text.push('\n');
    for r in rows {
        let cells: Vec<String> = r.iter().map(|v| format!("{v}")).collect();
        text.push_str(&cells.join(","));
        text.push('\n');
    }
    write_atomic(path, text.as_bytes())
}

/// Creates `dir` (and its parents).
pub fn create_dir(dir: &Path) -> Result<(), RunError> {
    fs::create_dir_all(dir).map_err(|e| RunError::io("cannot create folder", dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp_file() {
        let dir = std::env::temp_dir().join(format!("sgmcmc-fs-{}", std::process::id()));
        create_dir(&dir).unwrap();
        let p = dir.join("a.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert!(!temp_path(&p).exists());
        let missing = dir.join("no/such/folder/x");
        assert!(matches!(
            write_atomic(&missing, b"x"),
            Err(RunError::Io { .. })
        ));
        fs::remove_dir_all(&dir).unwrap();
    }
}
