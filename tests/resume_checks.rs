//! `--resume` continues what the run recorded: the data folder it read (not the one
//! `SGMCMC_DATA_DIR` or `--data-dir` name now), refused if the data there changed, and no flag
//! that would change the run (exit 2, one line naming the flag).

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::cli::{fails_with, short_uci_run, tmp};

/// The binary with `args` and `SGMCMC_DATA_DIR` set to `data_dir`.
fn with_data_dir(args: &[&str], data_dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sgmcmc"))
        .args(args)
        .env("SGMCMC_DATA_DIR", data_dir)
        .output()
        .expect("binary runs")
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Exit 2 with `needle` in the one stderr line.
fn refused(out: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(needle), "expected `{needle}` in {err}");
}

/// Replaces the first number of `data.txt` in `dir` by another.
fn edit_one_value(dir: &Path) {
    let path = dir.join("data.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    let first = text.split_whitespace().next().unwrap().to_string();
    std::fs::write(&path, text.replacen(&first, "12345.5", 1)).unwrap();
}

#[test]
fn uci_resume_reads_the_recorded_data_refuses_changed_data_and_run_changing_flags() {
    let root = tmp("uci-resume");
    let (one, two) = (root.join("one"), root.join("two"));
    for d in [&one, &two] {
        sgmcmc::data::uci::write_synthetic(&d.join("uci/syn"), 200, 3, 1, 0.1, 1).unwrap();
    }
    let out = root.join("run");
    let o = out.to_str().unwrap();
    ok(&with_data_dir(&short_uci_run("syn", o), &one));
    let config: toml::Table = std::fs::read_to_string(out.join("config.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let recorded = &config["data"];
    assert_eq!(
        recorded["dir"].as_str().unwrap(),
        std::fs::canonicalize(one.join("uci/syn"))
            .unwrap()
            .to_str()
            .unwrap()
    );
    assert_eq!(recorded["sha256"].as_str().unwrap().len(), 64);
    // The environment now names another (identical) copy: the run's own folder is read.
    ok(&with_data_dir(&["uci", "--resume", o, "--jobs", "1"], &two));
    // config.toml edited after the start: a seed that continues from its checkpoint would run
    // on with two weight decays (or learning rates). (The seed finished: without its result.json it continues
    // from its last checkpoint.)
    let config_path = out.join("config.toml");
    let original = std::fs::read_to_string(&config_path).unwrap();
    let mut edited: toml::Table = original.parse().unwrap();
    let run = edited["run"].as_table_mut().unwrap();
    let decay = run["weight_decay"].as_float().unwrap();
    run["weight_decay"] = toml::Value::Float(2.0 * decay);
    std::fs::write(&config_path, toml::to_string(&edited).unwrap()).unwrap();
    // A finished seed is not read back under other settings either.
    refused(
        &with_data_dir(&["uci", "--resume", o], &one),
        "result.json was written with other settings than config.toml gives now (weight_decay = \
         0.0002 (was 0.0001))",
    );
    std::fs::remove_file(out.join("seed-0/result.json")).unwrap();
    refused(
        &with_data_dir(&["uci", "--resume", o], &one),
        "checkpoint.cbor was written with other settings than config.toml gives now \
         (weight_decay = ",
    );
    std::fs::write(&config_path, original).unwrap();
    ok(&with_data_dir(&["uci", "--resume", o, "--jobs", "1"], &one));
    assert!(out.join("seed-0/result.json").is_file());
    // Its data changed: refused, although the folder the environment names did not change.
    edit_one_value(&one.join("uci/syn"));
    refused(
        &with_data_dir(&["uci", "--resume", o], &two),
        "changed since the run started",
    );
    let other = root.join("elsewhere");
    let other = other.to_str().unwrap();
    for (flag, value) in [
        ("--epochs", Some("5")),
        ("--seeds", Some("2")),
        ("--sampler", Some("sghmc")),
        ("--out", Some(other)),
        ("--chains", Some("2")),
        ("--set", Some("momentum=0.9")),
        ("--lr", Some("1e-5")),
        ("--data-dir", Some(other)),
        ("--device", Some("ndarray")),
        ("--force", None),
    ] {
        let mut args = vec!["uci", "--resume", o, flag];
        args.extend(value);
        fails_with(&args, 2, &format!("{flag} would change it"));
    }
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn mnist_resume_reads_the_recorded_data_refuses_changed_data_and_run_changing_flags() {
    let root = tmp("mnist-resume");
    let data = root.join("data");
    let write = |seed| {
        sgmcmc::data::mnist::write_synthetic(&data.join("mnist"), 16, 10, 500, 200, seed).unwrap()
    };
    write(7);
    let small = root.join("small.toml");
    std::fs::write(
        &small,
        "sampler = \"sgld\"\nchannels = [4, 8]\nhidden = 16\nbatch = 50\ntrain_per_class = 0\n\
         heldout_limit = 100\neval_every = 1\ncheckpoint_every = 1\nlr = 2e-4\n\
         prior_precision = 1.0\nepochs = 3\n",
    )
    .unwrap();
    let out = root.join("run");
    let o = out.to_str().unwrap();
    ok(&with_data_dir(
        &[
            "mnist",
            "--config",
            small.to_str().unwrap(),
            "--stop-after",
            "1",
            "--out",
            o,
            "--quiet",
        ],
        &data,
    ));
    let other = root.join("elsewhere");
    let other = other.to_str().unwrap();
    for (flag, value) in [
        ("--epochs", "5"),
        ("--seed", "2"),
        ("--sampler", "sgd"),
        ("--out", other),
        ("--chains", "2"),
        ("--data-dir", other),
        ("--device", "ndarray"),
        ("--config", small.to_str().unwrap()),
        ("--temperature", "1"),
    ] {
        fails_with(
            &["mnist", "--resume", o, flag, value],
            2,
            &format!("{flag} would change it"),
        );
    }
    // Other images under the same names: refused.
    write(8);
    refused(
        &with_data_dir(&["mnist", "--resume", o, "--quiet"], &data),
        "changed since the run started",
    );
    // The same images again, and an environment naming no data at all: the recorded folder
    // is read and the run continues (one more epoch, then to the end).
    write(7);
    let nowhere = root.join("nowhere");
    ok(&with_data_dir(
        &["mnist", "--resume", o, "--stop-after", "2", "--quiet"],
        &nowhere,
    ));
    ok(&with_data_dir(
        &["mnist", "--resume", o, "--quiet"],
        &nowhere,
    ));
    assert!(out.join("summary.json").is_file());
    let _ = std::fs::remove_dir_all(root);
}
