//! Bad sizes and counts are refused before any work with one line and exit 2; a UCI cell whose
//! runs all failed exits 1 and says so in its table; a gap in a UCI folder's split files is
//! named.

mod common;

use common::cli::{fails_with, sgmcmc, tmp};
use sgmcmc::data::uci::write_synthetic;

#[test]
fn sizes_and_counts_outside_their_range_are_refused() {
    let dir = tmp("edges");
    let o = dir.join("run");
    let o = o.to_str().unwrap();
    fails_with(
        &["toy", "--chains", "100000000000", "--out", o],
        2,
        "chains",
    );
    fails_with(
        &["toy", "--seed", "9223372036854775808", "--out", o],
        2,
        "seed",
    );
    fails_with(
        &[
            "toy",
            "--iters",
            "1000",
            "--burn-in",
            "100",
            "--thin",
            "900",
            "--out",
            o,
        ],
        2,
        "only one sample",
    );
    fails_with(&["vr-resgld", "--iters", "0", "--out", o], 2, "--iters");
    for s in ["--seconds=-1", "--seconds=nan", "--seconds=inf"] {
        fails_with(&["bench", s, "--no-cnn", "--out", o], 2, "--seconds");
    }
    fails_with(
        &["mnist", "--stop-after", "0", "--out", o],
        2,
        "--stop-after",
    );
    fails_with(&["mnist", "--chains", "100000", "--out", o], 2, "chains");
    fails_with(&["uci", "--seeds", "1000000000000", "--out", o], 2, "seeds");
    fails_with(&["uci", "--chains", "100000", "--out", o], 2, "chains");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_uci_cell_whose_runs_all_diverge_exits_1_and_counts_them() {
    let dir = tmp("uci-fail");
    let data = dir.join("data");
    write_synthetic(&data, 200, 3, 2, 0.1, 1).unwrap();
    let out = dir.join("run");
    let run = sgmcmc(&[
        "uci",
        "--dataset",
        data.to_str().unwrap(),
        "--sampler",
        "sgld",
        "--seeds",
        "2",
        "--epochs",
        "20",
        "--lr",
        "10",
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{err}");
    // One warning per failed run, then the error.
    let last = err.trim_end().lines().last().unwrap_or_default();
    assert!(last.starts_with("error: every run failed"), "{err}");
    let table = std::fs::read_to_string(out.join("table.md")).unwrap();
    assert!(table.contains("| 2 of 2 |"), "{table}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_missing_uci_split_file_is_named() {
    let dir = tmp("uci-gap");
    let data = dir.join("data");
    write_synthetic(&data, 200, 3, 3, 0.1, 1).unwrap();
    std::fs::remove_file(data.join("index_train_1.txt")).unwrap();
    fails_with(
        &[
            "uci",
            "--dataset",
            data.to_str().unwrap(),
            "--seeds",
            "3",
            "--epochs",
            "2",
            "--out",
            dir.join("run").to_str().unwrap(),
        ],
        2,
        "index_train_1.txt",
    );
    let _ = std::fs::remove_dir_all(dir);
}
