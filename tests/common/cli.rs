//! Running the `sgmcmc` binary from tests.

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs the binary with `args`.
pub fn sgmcmc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sgmcmc"))
        .args(args)
        .output()
        .expect("binary runs")
}

/// A fresh scratch folder for `name` (removed when the test process exits).
pub fn tmp(name: &str) -> PathBuf {
    super::scratch::dir(&format!("cli-{name}"))
}

/// A UCI run of seconds on the dataset `dataset` into `out`: one seed, 20 epochs, one job,
/// a checkpoint (so it writes `seed-0/`).
pub fn short_uci_run<'a>(dataset: &'a str, out: &'a str) -> Vec<&'a str> {
    vec![
        "uci",
        "--dataset",
        dataset,
        "--seeds",
        "1",
        "--epochs",
        "20",
        "--jobs",
        "1",
        "--checkpoint-every",
        "1000",
        "--out",
        out,
    ]
}

/// Runs the CLI and asserts success.
pub fn succeeds(args: &[&str]) {
    let out = sgmcmc(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {err}");
}

/// Asserts exit `code` and a single stderr line containing `needle`.
pub fn fails_with(args: &[&str], code: i32, needle: &str) {
    let out = sgmcmc(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: stderr {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: not one line: {err}"
    );
    assert!(err.starts_with("error: "), "{args:?}: {err}");
    assert!(
        err.contains(needle),
        "{args:?}: expected `{needle}` in {err}"
    );
    assert!(!err.contains("panicked"), "{args:?}: {err}");
}
