//! Run folders: one run writes into a folder it holds locked, and a fresh run does not mix its
//! files with an earlier run's.
//!
//! [`lock_run_dir`] takes an advisory lock on `dir/.sgmcmc.lock`, held until the process exits
//! (released by the system if it dies) or a failed command takes back the folder
//! ([`unmake_empty_run_dirs`]); [`fresh_run_dir`] also refuses a folder that holds
//! anything unless asked to replace the files the command writes. Refusals are
//! [`RunError::Setting`] (the folder is in use, or not empty without `force`) or
//! [`RunError::Input`] (not a folder, not writable).

use std::ffi::OsString;
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

/// The run folders this process holds locked (until it exits, or takes the folder back).
static LOCKS: Mutex<Vec<(PathBuf, fs::File)>> = Mutex::new(Vec::new());

/// The run folders [`fresh_run_dir`] was asked for since [`keep_made_run_dirs`], newest last,
/// for a command that fails before it writes into them to take back
/// ([`unmake_empty_run_dirs`]).
static MADE: Mutex<Vec<Made>> = Mutex::new(Vec::new());

/// What [`fresh_run_dir`] found and made for one run folder.
#[derive(Debug)]
struct Made {
    /// The run folder asked for.
    dir: PathBuf,
    /// The folders it made: missing parents outermost first, then the run folder if it was
    /// missing.
    folders: Vec<PathBuf>,
    /// Once it took the folder: what the folder held then besides its lock, and whether this
    /// process created the lock file (the folder had never held a run).
    found: Option<(Vec<OsString>, bool)>,
}

/// Takes the lock of the run folder `dir`: a second run into the folder, a `force` that would
/// delete a live run's files or a resume of a running run is refused in one line instead of
/// mixing or deleting its files. Taking a folder this process already holds is a no-op, and so
/// is a folder that does not exist (a resume of it fails on its own). In a distributed run only
/// rank 0 takes it.
pub fn lock_run_dir(dir: &Path) -> Result<Lock, RunError> {
    if !dir.is_dir() {
        return Ok(Lock::Held);
    }
    lock_dir(dir).map(|taken| taken.map_or(Lock::Held, |(lock, _)| lock))
}

/// The folder `dir`, as the locks name it.
fn canonical(dir: &Path) -> PathBuf {
    fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())
}

/// [`lock_run_dir`] of a folder that must exist: the lock and whether this call created the
/// lock file, or `None` for a folder this process held already.
fn lock_dir(dir: &Path) -> Result<Option<(Lock, bool)>, RunError> {
    let key = canonical(dir);
    let mut held = LOCKS.lock().unwrap_or_else(PoisonError::into_inner);
    if held.iter().any(|(p, _)| *p == key) {
        return Ok(None);
    }
    let path = dir.join(LOCK_FILE);
    // A lock taken on a file another run removed meanwhile (one taking back a folder it made)
    // guards nothing: the folder's lock file is opened again.
    for _ in 0..3 {
        let (file, created) = open_lock_file(dir, &path)?;
        match file.try_lock() {
            Ok(()) if is_at(&file, &path) => {
                held.push((key, file));
                return Ok(Some((Lock::Held, created)));
            }
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                return Err(RunError::Setting(format!(
                    "output folder {} is in use by another sgmcmc run; wait for it to end or \
                     choose another --out",
                    dir.display()
                )));
            }
            Err(fs::TryLockError::Error(e)) => {
                let warning = format!(
                    "warning: cannot lock {} ({e}); nothing keeps another run out of this folder",
                    path.display()
                );
                return Ok(Some((Lock::Unguarded(warning), created)));
            }
        }
    }
    Err(RunError::Setting(format!(
        "output folder {} keeps changing under another sgmcmc run; choose another --out",
        dir.display()
    )))
}

/// Opens (or creates) the lock file `path` of `dir`; whether it created it is what creating
/// says (an existing file, or a link by the name, is not new).
fn open_lock_file(dir: &Path, path: &Path) -> Result<(fs::File, bool), RunError> {
    let mut options = fs::OpenOptions::new();
    options.read(true).write(true);
    match options.clone().create_new(true).open(path) {
        Ok(file) => Ok((file, true)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => options
            .create(true)
            .truncate(false)
            .open(path)
            .map(|file| (file, false)),
        Err(e) => Err(e),
    }
    .map_err(|e| {
        if dir.is_dir() {
            RunError::Input(format!(
                "output folder {} is not writable (its lock {LOCK_FILE}: {e})",
                dir.display()
            ))
        } else {
            RunError::Setting(format!(
                "output folder {} was removed while this run was taking it; run again",
                dir.display()
            ))
        }
    })
}

/// Whether the open `file` is the one `path` names now (not one removed since it was opened).
#[cfg(unix)]
fn is_at(file: &fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// Whether the open `file` is the one `path` names now (here: that `path` names a file).
#[cfg(not(unix))]
fn is_at(_: &fs::File, path: &Path) -> bool {
    path.is_file()
}

/// Lets go of the lock this process holds on the folder `key` ([`canonical`]) and, when it
/// `created` the lock file `lock`, removes the file: while the lock is held, so no other run
/// takes the folder first, or once closed where an open file cannot be removed.
fn give_back(key: &Path, lock: &Path, created: bool) {
    let file = release(key);
    let removed = !created || fs::remove_file(lock).is_ok();
    drop(file);
    if !removed {
        let _ = fs::remove_file(lock);
    }
}

/// Lets go of the lock this process holds on the folder `key` ([`canonical`]), handing back
/// its file (the lock lasts while it is open).
fn release(key: &Path) -> Option<fs::File> {
    let mut held = LOCKS.lock().unwrap_or_else(PoisonError::into_inner);
    let i = held.iter().position(|(p, _)| p == key)?;
    Some(held.remove(i).1)
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
    let folders = make_dirs(dir);
    MADE.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Made {
            dir: dir.to_path_buf(),
            folders,
            found: None,
        });
    create_run_dir(dir)?;
    let (lock, created) = lock_dir(dir)?.unwrap_or((Lock::Held, false));
    let found = |entries: &[OsString]| {
        let mut made = MADE.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(m) = made.iter_mut().rev().find(|m| m.dir == dir) {
            m.found = Some((entries.to_vec(), created));
        }
    };
    found(&[]);
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
    found(&entries);
    if !entries.is_empty() && !force {
        return Err(RunError::Setting(format!(
            "output folder {} is not empty; pass --force to replace the earlier run's files \
             in it, or choose another --out",
            dir.display()
        )));
    }
    let ours: Vec<PathBuf> = entries
        .iter()
        .filter(|name| is_own(&name.to_string_lossy(), own))
        .map(|name| dir.join(name))
        .collect();
    // A folder of the command's own may be a live run's (one sampler's of a joint run): every
    // one is taken before anything is deleted, and a link is removed, never followed.
    let is_folder = |p: &Path| fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
    let mut taken = Vec::new();
    let give_back_all = |taken: &[(PathBuf, PathBuf, bool)]| {
        for (key, lock, created) in taken {
            give_back(key, lock, *created);
        }
    };
    for path in ours.iter().filter(|p| is_folder(p)) {
        match lock_dir(path) {
            Ok(Some((_, created))) => taken.push((canonical(path), path.join(LOCK_FILE), created)),
            Ok(None) => {}
            Err(e) => {
                give_back_all(&taken);
                return Err(e);
            }
        }
    }
    for path in &ours {
        let removed = if path.is_dir() {
            fs::remove_dir_all(path)
        } else {
            fs::remove_file(path)
        };
        removed.map_err(|e| RunError::Input(format!("cannot remove {}: {e}", path.display())))?;
    }
    give_back_all(&taken);
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

/// Takes back, newest first, what [`fresh_run_dir`] made since [`keep_made_run_dirs`] for a
/// run folder the command wrote nothing into (it holds nothing that it did not hold when the
/// command took it): the lock file the command created, and the folders it made that are
/// empty then (the run folder, and the parents made for it). A command refused before it
/// wrote a file (missing data, a setting found bad late) leaves the file system as it found
/// it; one that wrote a file (a diverged run's checkpoint) leaves its folder as it is. A
/// folder that was there stays, and so does a lock file that was, or one another process
/// holds (a run refused as "in use" never took the folder). For a process that runs one
/// command at a time, as the `sgmcmc` binary does.
pub fn unmake_empty_run_dirs() {
    let made = std::mem::take(&mut *MADE.lock().unwrap_or_else(PoisonError::into_inner));
    unmake(made);
}

/// [`unmake_empty_run_dirs`] of `made`.
fn unmake(made: Vec<Made>) {
    for Made {
        dir,
        folders,
        found,
    } in made.iter().rev()
    {
        if let Some((before, created)) = found {
            let now = fs::read_dir(dir).map(|d| {
                d.filter_map(Result::ok)
                    .map(|e| e.file_name())
                    .filter(|n| n != LOCK_FILE)
                    .collect::<Vec<_>>()
            });
            if !now.is_ok_and(|now| now.iter().all(|n| before.contains(n))) {
                continue;
            }
            if *created {
                give_back(&canonical(dir), &dir.join(LOCK_FILE), true);
            }
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
    fn a_lock_file_removed_since_it_was_opened_is_not_the_folders() {
        let dir = std::env::temp_dir().join(format!("sgmcmc-lock-at-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join(LOCK_FILE);
        let (file, created) = open_lock_file(&dir, &path).unwrap();
        assert!(created && is_at(&file, &path));
        let (again, created) = open_lock_file(&dir, &path).unwrap();
        assert!(!created && is_at(&again, &path));
        fs::remove_file(&path).unwrap();
        assert!(!is_at(&file, &path));
        fs::write(&path, "").unwrap();
        assert!(!is_at(&file, &path));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_command_takes_back_only_what_it_made_in_folders_it_wrote_nothing_into() {
        let root = std::env::temp_dir().join(format!("sgmcmc-unmake-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let made = |name: &str, files: &[&str], lock: bool| {
            let dir = root.join(name);
            fs::create_dir_all(&dir).unwrap();
            for f in files {
                fs::write(dir.join(f), "").unwrap();
            }
            if lock {
                fs::write(dir.join(LOCK_FILE), "").unwrap();
            }
            dir
        };
        // On a file system without locks (nothing held): the lock file it created goes, and
        // the folder it made; a folder holding a file it wrote stays whole; one that held a
        // run keeps its lock file; one it found holding a file keeps the file.
        let fresh = made("new/run", &[], true);
        let wrote = made("wrote", &["checkpoint.cbor"], true);
        let earlier = made("earlier", &[], true);
        let notes = made("notes", &["notes.txt"], true);
        let entry = |dir: &Path, folders: Vec<PathBuf>, before: &[&str], created| Made {
            dir: dir.to_path_buf(),
            folders,
            found: Some((before.iter().map(OsString::from).collect(), created)),
        };
        unmake(vec![
            entry(&fresh, vec![root.join("new"), fresh.clone()], &[], true),
            entry(&wrote, vec![wrote.clone()], &[], true),
            entry(&earlier, vec![], &[], false),
            entry(&notes, vec![], &["notes.txt"], true),
        ]);
        assert!(!root.join("new").exists());
        assert!(wrote.join(LOCK_FILE).is_file() && wrote.join("checkpoint.cbor").is_file());
        assert!(earlier.join(LOCK_FILE).is_file());
        assert!(notes.join("notes.txt").is_file() && !notes.join(LOCK_FILE).exists());
        // Refused before it took the folder (in use, or not a folder): the folders it made
        // that are empty, no more.
        let parent = made("made/for", &[], false);
        unmake(vec![Made {
            dir: parent.join("file/run"),
            folders: vec![root.join("made"), parent.clone()],
            found: None,
        }]);
        assert!(!root.join("made").exists());
        fs::remove_dir_all(&root).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn force_removes_a_link_of_its_own_and_keeps_the_folder_locked() {
        let dir = std::env::temp_dir().join(format!("sgmcmc-force-link-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(".", dir.join("sgld")).unwrap();
        fs::write(dir.join("summary.json"), "{}").unwrap();
        let own = ["sgld", "summary.json"];
        assert!(matches!(fresh_run_dir(&dir, true, &own), Ok(Lock::Held)));
        assert!(fs::symlink_metadata(dir.join("sgld")).is_err() && dir.is_dir());
        // Another open file of the lock (as another process would have) cannot take it.
        let other = fs::File::open(dir.join(LOCK_FILE)).unwrap();
        assert!(matches!(
            other.try_lock(),
            Err(fs::TryLockError::WouldBlock)
        ));
        drop(release(&canonical(&dir)));
        fs::remove_dir_all(&dir).unwrap();
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
