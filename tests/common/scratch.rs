//! Scratch folders for the integration tests. All of one test process's folders live under
//! `<temp>/sgmcmc-test-<pid>/`, which is removed when the process exits, whether its tests
//! passed or failed (set `SGMCMC_KEEP_TEST_DIRS=1` to keep it for a look after a failure).
//! The tests spawn the binary, hand paths to it and read what it wrote, so a folder must
//! outlive every handle a test passes around: one removal at exit, not a guard per folder.

use std::path::PathBuf;
use std::sync::OnceLock;

/// The process's root of scratch folders, made (and its removal at exit registered) on the
/// first call.
fn root() -> &'static PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        unsafe extern "C" {
            /// The C library's exit hook: runs when the test harness returns from `main` or
            /// calls `exit` (also on failed tests).
            fn atexit(f: extern "C" fn()) -> std::ffi::c_int;
        }
        extern "C" fn remove_root() {
            if std::env::var_os("SGMCMC_KEEP_TEST_DIRS").is_none() {
                let _ = std::fs::remove_dir_all(root_path());
            }
        }
        // SAFETY: `remove_root` is a plain function that only removes a folder; registering it
        // has no other precondition.
        let registered = unsafe { atexit(remove_root) } == 0;
        assert!(registered, "registering the scratch folders' removal");
        root_path()
    })
}

fn root_path() -> PathBuf {
    std::env::temp_dir().join(format!("sgmcmc-test-{}", std::process::id()))
}

/// A fresh, empty scratch folder `name` (unique within the test binary's process).
pub fn dir(name: &str) -> PathBuf {
    let d = root().join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create a scratch folder");
    d
}
