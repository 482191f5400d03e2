//! Run folders: a command refuses an `--out` folder that already holds files (exit 2, one line
//! naming the folder and `--force`) before any work; `--force` deletes the files the command
//! writes and leaves the others; a folder another run holds is refused.

mod common;

use std::path::Path;

use common::cli::{fails_with, short_uci_run, succeeds, tmp};
use sgmcmc::data::uci::write_synthetic;

/// A folder holding one file a user put there.
fn occupied(dir: &Path) -> String {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    dir.to_str().unwrap().to_string()
}

/// The commands that read data, each pointed at a data folder that does not exist and writing
/// into `o`: each makes its folder before it reads.
fn without_data(o: &str) -> Vec<Vec<&str>> {
    let tail = ["--data-dir", "/nonexistent", "--out", o];
    let commands: [&[&str]; 7] = [
        &["uci"],
        &["uci", "--table"],
        &["mnist"],
        &["mnist", "--sampler", "all"],
        &["mnist", "--trajectory"],
        &["images", "--dataset", "mnist"],
        &["digits"],
    ];
    commands.iter().map(|c| [*c, &tail[..]].concat()).collect()
}

#[test]
fn every_run_command_refuses_a_folder_that_is_not_empty() {
    let root = tmp("occupied");
    let o = occupied(&root.join("run"));
    let o = o.as_str();
    // Each would run for seconds to hours (or fail on missing data) if the folder were not
    // checked first.
    let mut runs: Vec<Vec<&str>> = vec![
        vec!["toy", "--iters", "1000", "--out", o],
        vec!["toy", "--preset", "awsgld-table-quick", "--out", o],
        vec!["demo", "--iters", "1000", "--out", o],
        vec!["bench", "--seconds", "0.01", "--no-cnn", "--out", o],
        vec!["vr-resgld", "--quick", "--iters", "1000", "--out", o],
        vec!["mnist", "--compare", "/nonexistent", "--out", o],
    ];
    runs.extend(without_data(o));
    for args in &runs {
        fails_with(args, 2, &format!("output folder {o} is not empty"));
        fails_with(args, 2, "--force");
    }
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn force_replaces_the_runs_own_files_and_keeps_the_others() {
    let root = tmp("force");
    let dir = root.join("run");
    let o = occupied(&dir);
    let toy = |extra: &[&str]| {
        let mut args = vec!["toy", "--sampler", "sgld", "--iters", "2000", "--quiet"];
        args.extend(["--out", o.as_str()]);
        args.extend(extra);
        args.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    // A stale file of an earlier contour run (an SGLD run writes no theta trace), and the
    // checkpoint of an earlier checkpointed run, which `--resume` would otherwise continue in
    // place of this run's results.
    std::fs::write(dir.join("theta_trace.csv"), "stale").unwrap();
    std::fs::write(dir.join("checkpoint.cbor"), "stale").unwrap();
    std::fs::write(dir.join(".summary.tmp.json"), "torn").unwrap();
    let args = toy(&["--force"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    succeeds(&args);
    assert!(dir.join("summary.json").is_file());
    assert!(!dir.join("theta_trace.csv").exists(), "a stale file stayed");
    assert!(
        !dir.join("checkpoint.cbor").exists(),
        "a stale checkpoint stayed"
    );
    assert!(
        !dir.join(".summary.tmp.json").exists(),
        "a temp file stayed"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "mine"
    );
    // A folder of the command's own is taken before `--force` deletes it: here one sampler's
    // run of a joint mnist folder, live (its lock held) though it has written nothing yet.
    let joint = root.join("joint");
    let live = joint.join("sgld");
    std::fs::create_dir_all(&live).unwrap();
    // A finished sampler's run beside it: nothing goes before every own folder is taken.
    let finished = occupied(&joint.join("psgld"));
    let lock = std::fs::File::create(live.join(".sgmcmc.lock")).unwrap();
    lock.lock().unwrap();
    let j = joint.to_str().unwrap();
    let all = [
        "mnist",
        "--sampler",
        "all",
        "--force",
        "--data-dir",
        "/nonexistent",
        "--out",
        j,
    ];
    fails_with(&all, 2, "sgld is in use by another sgmcmc run");
    assert!(
        live.join(".sgmcmc.lock").is_file(),
        "--force deleted a live run"
    );
    let finished: Vec<_> = std::fs::read_dir(&finished)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(finished, ["notes.txt"], "a refused --force changed a run");
    drop(lock);
    let _ = std::fs::remove_dir_all(root);
}

/// The hazard itself: a UCI run reads back a finished seed's `result.json`, so a run into the
/// folder of an earlier run took that run's result for its own. With `--force` the old seed
/// folders are deleted and the figure is this run's.
#[test]
fn a_forced_uci_run_does_not_read_back_an_earlier_runs_results() {
    let root = tmp("uci-force");
    let data = root.join("data");
    write_synthetic(&data, 200, 3, 1, 0.1, 1).unwrap();
    let out = root.join("run");
    let run = |force: bool| {
        let mut args = short_uci_run(data.to_str().unwrap(), out.to_str().unwrap());
        if force {
            args.push("--force");
        }
        common::cli::sgmcmc(&args)
    };
    assert!(run(false).status.success());
    let result = out.join("seed-0/result.json");
    let mut stale: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&result).unwrap()).unwrap();
    let fresh_rmse = stale["rmse"].as_f64().unwrap();
    stale["rmse"] = serde_json::json!(999.0);
    std::fs::write(&result, stale.to_string()).unwrap();
    let refused = run(false);
    assert_eq!(refused.status.code(), Some(2));
    // A user's files whose names start like the run's seed folders are not the run's.
    std::fs::create_dir_all(out.join("seed-bank")).unwrap();
    std::fs::write(out.join("seed-bank/keep.txt"), "mine").unwrap();
    std::fs::write(out.join("seed-list.txt"), "mine").unwrap();
    let again = run(true);
    assert!(again.status.success());
    assert!(
        out.join("seed-bank/keep.txt").is_file(),
        "--force deleted seed-bank/"
    );
    assert!(
        out.join("seed-list.txt").is_file(),
        "--force deleted seed-list.txt"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    // The run is deterministic: the forced run gives the first run's figure, not the stale one.
    assert_eq!(summary["rmse"].as_f64(), Some(fresh_rmse), "{summary}");
    let _ = std::fs::remove_dir_all(root);
}

/// A run folder in use by another run (its lock held, here by this test process) is refused
/// in one line, with or without `--force` and on `--resume`, and nothing in it is touched;
/// once the lock is released the same command runs.
#[test]
fn a_folder_in_use_by_another_run_is_refused() {
    let root = tmp("locked");
    let dir = root.join("run");
    let o = occupied(&dir);
    let lock = std::fs::File::create(dir.join(".sgmcmc.lock")).unwrap();
    lock.lock().unwrap();
    let o = o.as_str();
    let toy = [
        "toy",
        "--sampler",
        "sgld",
        "--iters",
        "1000",
        "--quiet",
        "--out",
        o,
    ];
    for args in [
        &toy[..],
        &[&toy[..], &["--force"]].concat(),
        &["toy", "--resume", o],
        &["uci", "--resume", o],
        &["mnist", "--resume", o],
        &["images", "--resume", o],
    ] {
        fails_with(args, 2, "is in use by another sgmcmc run");
    }
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        2,
        "the folder was touched"
    );
    // A live run that has written nothing yet: its folder holds only its lock, which a run
    // refused there (then failing on its data) must leave, and the folder with it.
    let fresh = root.join("fresh");
    std::fs::create_dir_all(&fresh).unwrap();
    let live = std::fs::File::create(fresh.join(".sgmcmc.lock")).unwrap();
    live.lock().unwrap();
    let f = fresh.to_str().unwrap();
    for args in without_data(f) {
        fails_with(&args, 2, "is in use by another sgmcmc run");
        assert!(
            fresh.join(".sgmcmc.lock").is_file(),
            "{args:?} took the live lock"
        );
    }
    drop((lock, live));
    succeeds(&[&toy[..], &["--force"]].concat());
    assert!(dir.join("summary.json").is_file());
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn a_device_the_command_cannot_use_is_refused_before_the_folder_is_touched() {
    // A folder that holds a file, without `--force`: a command that touched it first would be
    // refused as "not empty".
    let out = tmp("bad-device");
    let o = &occupied(&out);
    // `host` is the toy targets' f64 path, not a tensor device; the test build has no `cuda`
    // (scripts/features.sh). The data never need reading: the device comes first.
    let refused: &[(&[&str], &str)] = &[
        (&["toy", "--device", "cuda", "--out", o], "`cuda`"),
        (&["demo", "--device", "cuda", "--out", o], "`cuda`"),
        (
            &["uci", "--device", "host", "--out", o],
            "uci needs a tensor device",
        ),
        (
            &["uci", "--table", "--device", "host", "--out", o],
            "uci needs a tensor device",
        ),
        (
            &["mnist", "--device", "host", "--out", o],
            "mnist needs a tensor device",
        ),
        (
            &[
                "images",
                "--dataset",
                "synthetic",
                "--device",
                "host",
                "--out",
                o,
            ],
            "images needs",
        ),
        (
            &["digits", "--device", "host", "--out", o],
            "digits needs a tensor device",
        ),
        (
            &["bandit", "--device", "host", "--out", o],
            "bandit needs a tensor device",
        ),
    ];
    for (args, needle) in refused {
        fails_with(args, 2, needle);
        let left: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["notes.txt"], "{args:?} touched {o}");
    }
    let _ = std::fs::remove_dir_all(out);
}

#[test]
fn a_run_refused_for_its_data_leaves_no_folder_behind() {
    let root = tmp("no-data");
    // Its parents are made for it too, and taken back with it.
    let out = root.join("new/run");
    let o = out.to_str().unwrap();
    let mut runs = without_data(o);
    runs.push(vec!["bandit", "--data-dir", "/nonexistent", "--out", o]);
    for args in &runs {
        fails_with(args, 2, "missing file /nonexistent/");
        assert!(!root.join("new").exists(), "{args:?} left {o}");
        assert!(root.is_dir(), "{args:?} removed a folder it did not make");
    }
    // Only the folders the command made go: `keep` was there (empty), `made` was not.
    let keep = root.join("keep");
    std::fs::create_dir_all(&keep).unwrap();
    let through = root.join("made/../keep/run");
    fails_with(
        &[
            "uci",
            "--data-dir",
            "/nonexistent",
            "--out",
            through.to_str().unwrap(),
        ],
        2,
        "missing file",
    );
    assert!(keep.is_dir() && !root.join("made").exists() && !keep.join("run").exists());
    // An empty folder that was there stays, as empty as it was: no stale lock file.
    fails_with(
        &[
            "mnist",
            "--data-dir",
            "/nonexistent",
            "--out",
            keep.to_str().unwrap(),
        ],
        2,
        "missing file",
    );
    assert!(keep.is_dir() && std::fs::read_dir(&keep).unwrap().next().is_none());
    // A run that wrote a file keeps its folder, though it failed (a divergence, exit 1).
    let diverged = root.join("new/diverged");
    let d = diverged.to_str().unwrap();
    fails_with(
        &[
            "toy",
            "--iters",
            "2000",
            "--lr",
            "1",
            "--checkpoint-every",
            "100",
            "--out",
            d,
        ],
        1,
        "diverged",
    );
    assert!(diverged.join("checkpoint.cbor").is_file());
    assert!(
        diverged.join(".sgmcmc.lock").is_file(),
        "the run's folder was changed"
    );
    // A folder that was there before stays, with what it held.
    let kept = occupied(&out);
    fails_with(
        &[
            "uci",
            "--data-dir",
            "/nonexistent",
            "--out",
            &kept,
            "--force",
        ],
        2,
        "missing",
    );
    assert!(out.join("notes.txt").is_file());
    assert!(!out.join(".sgmcmc.lock").exists(), "a stale lock in {kept}");
    let _ = std::fs::remove_dir_all(root);
}
