//! Temporary folders for the crate's tests: fresh (unique per process and call) and, as
//! [`TempDir`], removed on drop.

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A new empty folder under the system's temp dir, named after `name`.
pub(crate) fn fresh(name: &str) -> PathBuf {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("sgmcmc-{name}-{}-{n}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).expect("create temp dir");
    d
}

/// A [`fresh`] folder, removed on drop.
pub(crate) struct TempDir(pub(crate) PathBuf);

impl TempDir {
    pub(crate) fn new(name: &str) -> Self {
        Self(fresh(name))
    }

    /// Writes `text` to `name` in the folder.
    pub(crate) fn write(&self, name: &str, text: &str) {
        fs::write(self.0.join(name), text).expect("write temp file");
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}
