//! Run folders: one run writes into a folder it holds locked, and a fresh run does not mix its
//! files with an earlier run's.
//!
//! [`lock_run_dir`] takes an advisory lock on `dir/.sgmcmc.lock`, held until the process exits
//! (released by the system if it dies); [`fresh_run_dir`] also refuses a folder that holds
//! anything unless asked to replace the files the command writes. Refusals are
//! [`RunError::Setting`] (the folder is in use, or not empty without `force`) or
//! [`RunError::Input`] (not a folder, not writable).

use std::fs;
use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use crate::error::RunError;
use crate::fs::{temp_path, write_atomic};

/// The lock file of a run folder ([`lock_run_dir`]).
pub const LOCK_FILE: &str = ".sgmcmc.lock";

/// Whether a run folder is guarded by its lock.
#[derive(Debug)]
#[must_use = "an unguarded folder carries a warning for the user"]
pub enum Lock {
    /// This process holds the folder's lock (or the folder does not exist yet).
    Held,
    /// The file system takes no locks (some network mounts): the run goes on unguarded, and
    /// the caller should say so (the text is the warning).
    Unguarded(String),
}

impl Lock {
    /// Hands the warning of an unguarded folder to `warn`.
    pub fn warn(self, warn: impl FnOnce(&str)) {
        if let Self::Unguarded(w) = self {
            warn(&w);
        }
    }
}

/// The run folders this process holds locked (until it exits).
static LOCKS: Mutex<Vec<Held>> = Mutex::new(Vec::new());

/// A run folder this process holds locked.
struct Held {
    /// The folder, canonical.
    key: PathBuf,
    /// Its lock file, open and locked: the lock lasts as long as it is open.
    _file: fs::File,
    /// Whether this process created the lock file (the folder had never held a run).
    created: bool,
}

/// The run folders [`fresh_run_dir`] was asked for, newest last, each with the folders it made
/// for it (its missing parents outermost first, then the run folder), for a command that fails
/// before it writes into them to take back ([`unmake_empty_run_dirs`]).
static MADE: Mutex<Vec<(PathBuf, Vec<PathBuf>)>> = Mutex::new(Vec::new());

/// Takes the lock of the run folder `dir`: a second run into the folder, a `force` that would
/// delete a live run's files or a resume of a running run is refused in one line instead of
/// mixing or deleting its files. Taking a folder this process already holds is a no-op, and so
/// is a folder that does not exist (a resume of it fails on its own). In a distributed run only
/// rank 0 takes it.
pub fn lock_run_dir(dir: &Path) -> Result<Lock, RunError> {
    if !dir.is_dir() {
        return Ok(Lock::Held);
    }
    let key = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut held = LOCKS.lock().unwrap_or_else(|e| e.into_inner());
    if held.iter().any(|h| h.key == key) {
        return Ok(Lock::Held);
    }
    let path = dir.join(LOCK_FILE);
    let mut options = fs::OpenOptions::new();
    options.read(true).write(true);
    // Whether the file is new is what creating it says (an existing file, or a link by the
    // name, is not).
    let (file, created) = match options.clone().create_new(true).open(&path) {
        Ok(file) => Ok((file, true)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => options
            .create(true)
            .truncate(false)
            .open(&path)
            .map(|file| (file, false)),
        Err(e) => Err(e),
    }
    .map_err(|e| {
        RunError::Input(format!(
            "output folder {} is not writable (its lock {LOCK_FILE}: {e})",
            dir.display()
        ))
    })?;
    match file.try_lock() {
        Ok(()) => {
            held.push(Held {
                key,
                _file: file,
                created,
            });
            Ok(Lock::Held)
        }
        Err(fs::TryLockError::WouldBlock) => Err(RunError::Setting(format!(
            "output folder {} is in use by another sgmcmc run; wait for it to end or choose \
             another --out",
            dir.display()
        ))),
        Err(fs::TryLockError::Error(e)) => Ok(Lock::Unguarded(format!(
            "warning: cannot lock {} ({e}); nothing keeps another run out of this folder",
            path.display()
        ))),
    }
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

/// The run folder of a fresh run: `dir` created if missing and locked ([`lock_run_dir`]),
/// refused if it holds anything (files of an earlier run would mix with this run's: a stale
/// `summary.json` beside a new checkpoint looks like a finished run) unless `force`, which
/// first deletes the entries of `dir` named in `own`, the files and folders the command writes
/// (folders with everything in them), and leaves every other entry alone. A name in `own` is
/// an exact name, or ends in `#` (one or more ASCII digits) or in `*` (any rest). A folder that
/// cannot take a file is refused now, not after the run.
pub fn fresh_run_dir(dir: &Path, force: bool, own: &[&str]) -> Result<Lock, RunError> {
    if dir.is_file() {
        return Err(RunError::Input(format!(
            "output folder {} is a file",
            dir.display()
        )));
    }
    let made = make_dirs(dir);
    MADE.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push((dir.to_path_buf(), made));
    create_run_dir(dir)?;
    let lock = lock_run_dir(dir)?;
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries
            .map(|e| e.map(|e| e.file_name()))
            .filter(|e| !matches!(e, Ok(n) if n == LOCK_FILE))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| RunError::Input(format!("cannot list {}: {e}", dir.display())))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) if dir.is_file() => {
            return Err(RunError::Input(format!(
                "output folder {} is a file ({e})",
                dir.display()
            )));
        }
        Err(e) => {
            return Err(RunError::Input(format!(
                "cannot read output folder {}: {e}",
                dir.display()
            )));
        }
    };
    if !entries.is_empty() && !force {
        return Err(RunError::Setting(format!(
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
        removed.map_err(|e| RunError::Input(format!("cannot remove {}: {e}", path.display())))?;
    }
    create_run_dir(dir)?;
    let probe = dir.join(".sgmcmc-write-test");
    write_atomic(&probe, b"")
        .and_then(|()| {
            fs::remove_file(&probe).map_err(|e| RunError::io("cannot remove", &probe, e))
        })
        .map_err(|e| {
            RunError::Input(format!(
                "output folder {} is not writable ({e})",
                dir.display()
            ))
        })?;
    Ok(lock)
}

/// Creates the run folder `path` (and its parents).
pub fn create_run_dir(path: &Path) -> Result<(), RunError> {
    fs::create_dir_all(path).map_err(|e| {
        RunError::Input(format!(
            "cannot create output directory {}: {e}",
            path.display()
        ))
    })
}

/// Makes `dir` and its missing parents with one `mkdir` each and returns the folders this call
/// made, outermost first: a folder that was there (or that another process made meanwhile) is
/// not among them, whatever the path's `..` and links say. Errors are left to
/// [`create_run_dir`], which says them.
fn make_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut path = PathBuf::new();
    let mut made = Vec::new();
    for part in dir.components() {
        path.push(part);
        if matches!(part, Component::Normal(_)) && fs::create_dir(&path).is_ok() {
            made.push(path.clone());
        }
    }
    made
}

/// Forgets the run folders [`fresh_run_dir`] made so far: a command that ended well (or one
/// about to begin) keeps them.
pub fn keep_made_run_dirs() {
    MADE.lock().unwrap_or_else(PoisonError::into_inner).clear();
}

/// Takes back, newest first, what [`fresh_run_dir`] made since [`keep_made_run_dirs`]: the
/// lock files it created and holds, then the folders it made that are empty then (the run
/// folder, and the parents made for it). A command refused before it wrote a file (missing
/// data, a setting found bad late) leaves the file system as it found it; one that wrote a file
/// (a diverged run's checkpoint) keeps its folder. A folder that was there stays, and so does
/// the lock file of a folder that held a run before, or of one another process holds (a run
/// refused as "in use" never held it). For a process that runs one command at a time, as the
/// `sgmcmc` binary does.
pub fn unmake_empty_run_dirs() {
    let made = std::mem::take(&mut *MADE.lock().unwrap_or_else(PoisonError::into_inner));
    let mut held = LOCKS.lock().unwrap_or_else(PoisonError::into_inner);
    for (dir, folders) in made.iter().rev() {
        let key = fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
        let Some(i) = held.iter().position(|h| h.key == key && h.created) else {
            continue;
        };
        // The file goes while its lock is held, so no other run can have taken the folder;
        // where an open file cannot be removed, it goes once closed.
        let lock = dir.join(LOCK_FILE);
        let removed = fs::remove_file(&lock);
        drop(held.remove(i));
        if removed.is_err() {
            let _ = fs::remove_file(&lock);
        }
        for d in folders.iter().rev() {
            if fs::remove_dir(d).is_err() {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_patterns_match_names_digits_and_prefixes_only() {
        let own = ["summary.json", "seed-#", "checkpoint.rank-*"];
        for name in [
            "summary.json",
            ".summary.tmp.json",
            "seed-0",
            "seed-12",
            "checkpoint.rank-3",
        ] {
            assert!(is_own(name, &own), "{name}");
        }
        for name in [
            "seed-",
            "seed-bank",
            "seed-1a",
            "summary.jsonx",
            "notes.txt",
        ] {
            assert!(!is_own(name, &own), "{name}");
        }
    }

    #[test]
    fn a_fresh_folder_is_refused_unless_forced_and_force_deletes_only_own_files() {
        let dir = std::env::temp_dir().join(format!("sgmcmc-run-dir-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        assert!(matches!(fresh_run_dir(&dir, false, &[]), Ok(Lock::Held)));
        fs::write(dir.join("summary.json"), "{}").unwrap();
        fs::write(dir.join("notes.txt"), "mine").unwrap();
        let refused = fresh_run_dir(&dir, false, &["summary.json"]).unwrap_err();
        assert!(
            matches!(refused, RunError::Setting(ref m) if m.contains("--force")),
            "{refused}"
        );
        assert!(matches!(
            fresh_run_dir(&dir, true, &["summary.json"]),
            Ok(Lock::Held)
        ));
        assert!(!dir.join("summary.json").exists() && dir.join("notes.txt").exists());
        let file = dir.join("notes.txt");
        assert!(matches!(
            fresh_run_dir(&file, true, &[]),
            Err(RunError::Input(_))
        ));
        fs::remove_dir_all(&dir).unwrap();
    }
}
