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

/// The folder `name` in `root`, created.
pub fn dir_in(root: &std::path::Path, name: &str) -> PathBuf {
    let d = root.join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The energies of `sgmcmc bench --only seeded` on `device` at batch 16 (a seeded 20-step
/// ResNet20 SGHMC chain), run in `root` (CubeCL's kernel cache then lives in the user's cache).
pub fn seeded_energies(device: &str, root: &std::path::Path) -> Vec<f64> {
    let out = root.join("bench");
    let o = Command::new(env!("CARGO_BIN_EXE_sgmcmc"))
        .args([
            "bench",
            "--only",
            "seeded",
            "--device",
            device,
            "--batches",
            "16",
            "--out",
        ])
        .arg(&out)
        .current_dir(root)
        .output()
        .expect("binary runs");
    assert!(
        o.status.success(),
        "{device}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let e: Vec<f64> = serde_json::from_value(s["energies"].clone()).unwrap();
    assert_eq!(e.len(), 20, "{device}: {e:?}");
    assert!(e.iter().all(|x| x.is_finite()), "{device}: {e:?}");
    e
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

/// `sgmcmc predict --run dir --data images --labels labels --out out` (a classifier's run):
/// its `metrics.json` and the rows of its `predictions.csv`.
pub fn predict_classes(
    dir: &std::path::Path,
    images: &std::path::Path,
    labels: &std::path::Path,
    out: &std::path::Path,
) -> (serde_json::Value, Vec<String>) {
    let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let (dir, images, labels, o) = (s(dir), s(images), s(labels), s(out));
    succeeds(&[
        "predict", "--run", &dir, "--data", &images, "--labels", &labels, "--out", &o,
    ]);
    let metrics = std::fs::read_to_string(out.with_file_name("metrics.json")).unwrap();
    let csv = std::fs::read_to_string(out).unwrap();
    let rows = csv.lines().skip(1).map(String::from).collect();
    (serde_json::from_str(&metrics).unwrap(), rows)
}
