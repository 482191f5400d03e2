//! `sgmcmc mnist`, `digits`, `uci` and `vr-resgld` write their resolved settings to `config.toml`, and a run
//! from that file (`--config`) repeats the run: the same outputs to the bit. Flags beside
//! `--config` override it.

mod common;

use std::path::Path;

use common::cli::{fails_with, succeeds, tmp};

/// `summary.json` without the fields that measure time.
fn summary(dir: &Path) -> serde_json::Value {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    for timing in [
        "wall_seconds",
        "steps_per_second",
        "seconds_per_epoch",
        "train_seconds",
        "eval_seconds",
    ] {
        v.as_object_mut().unwrap().remove(timing);
    }
    v
}

fn config(dir: &Path) -> toml::Table {
    std::fs::read_to_string(dir.join("config.toml"))
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn a_digits_run_repeats_from_its_config_toml() {
    let root = tmp("digits-config");
    sgmcmc::data::digits::write_synthetic(&root.join("digits"), 600, 2).unwrap();
    let data = root.to_str().unwrap();
    let digits = |out: &Path, flags: &[&str]| {
        let mut args = vec!["digits", "--data-dir", data, "--quiet"];
        args.extend(flags);
        args.extend(["--out", out.to_str().unwrap()]);
        succeeds(&args);
    };
    let first = root.join("first");
    let short = [
        "--steps",
        "120",
        "--burn-in",
        "40",
        "--bma-every",
        "20",
        "--lr",
        "1e-4",
        "--seed",
        "7",
    ];
    digits(&first, &short);
    let written = config(&first);
    assert_eq!(written["steps"].as_integer(), Some(120));
    assert_eq!(written["seed"].as_integer(), Some(7));
    assert_eq!(written["lr"].as_float(), Some(1e-4));
    let file = first.join("config.toml");
    let file = file.to_str().unwrap();
    let again = root.join("again");
    digits(&again, &["--config", file]);
    // Without the file the defaults (20000 steps, seed 1) would run: a different run.
    println!("digits summary: {}", summary(&first));
    assert_eq!(summary(&first), summary(&again));
    assert_eq!(
        std::fs::read(first.join("bma.csv")).unwrap(),
        std::fs::read(again.join("bma.csv")).unwrap()
    );
    assert_eq!(config(&again), written);
    // A flag overrides the file.
    let seeded = root.join("seeded");
    digits(&seeded, &["--config", file, "--seed", "8"]);
    let c = config(&seeded);
    assert_eq!(
        (c["seed"].as_integer(), c["steps"].as_integer()),
        (Some(8), Some(120))
    );
    let typo = root.join("typo.toml");
    std::fs::write(&typo, "stepz = 10\n").unwrap();
    fails_with(
        &[
            "digits",
            "--config",
            typo.to_str().unwrap(),
            "--out",
            root.join("t").to_str().unwrap(),
        ],
        2,
        "stepz",
    );
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn an_mnist_run_repeats_from_its_config_toml() {
    let root = tmp("mnist-config");
    sgmcmc::data::mnist::write_synthetic(&root.join("mnist"), 16, 10, 500, 200, 7).unwrap();
    let data = root.to_str().unwrap();
    // A small CNN for seconds: settings no flag reaches, through a hand-written config file.
    let small = root.join("small.toml");
    std::fs::write(
        &small,
        "preset = \"cpu\"\nsampler = \"sgld\"\nchannels = [4, 8]\nhidden = 16\nbatch = 50\n\
         train_per_class = 0\nheldout_limit = 100\neval_every = 1\nlr = 2e-4\n\
         prior_precision = 1.0\n",
    )
    .unwrap();
    let first = root.join("first");
    succeeds(&[
        "mnist",
        "--config",
        small.to_str().unwrap(),
        "--epochs",
        "2",
        "--data-dir",
        data,
        "--out",
        first.to_str().unwrap(),
        "--quiet",
    ]);
    let written = config(&first);
    assert_eq!(written["epochs"].as_integer(), Some(2));
    assert_eq!(written["hidden"].as_integer(), Some(16));
    // "all training images" survives the file (the cpu preset's own count is 400).
    assert_eq!(written["train_per_class"].as_integer(), Some(0));
    let again = root.join("again");
    succeeds(&[
        "mnist",
        "--config",
        first.join("config.toml").to_str().unwrap(),
        "--data-dir",
        data,
        "--out",
        again.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(config(&again), written);
    println!("mnist summary: {}", summary(&first));
    assert_eq!(summary(&first), summary(&again));
    for f in ["loss.csv", "accuracy.csv", "entropy.csv"] {
        assert_eq!(
            std::fs::read(first.join(f)).unwrap(),
            std::fs::read(again.join(f)).unwrap(),
            "{f}"
        );
    }
    fails_with(
        &[
            "mnist",
            "--config",
            small.to_str().unwrap(),
            "--sampler",
            "all",
            "--data-dir",
            data,
            "--out",
            root.join("all").to_str().unwrap(),
        ],
        2,
        "--sampler all",
    );
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn uci_repeats_a_run_from_its_config_toml() {
    let root = tmp("uci-config");
    let data = root.join("data");
    sgmcmc::data::uci::write_synthetic(&data, 300, 3, 2, 0.1, 21).unwrap();
    let (a, b) = (root.join("a"), root.join("b"));
    let d = data.to_str().unwrap();
    succeeds(&[
        "uci",
        "--dataset",
        d,
        "--sampler",
        "sghmc",
        "--seeds",
        "2",
        "--epochs",
        "20",
        "--set",
        "momentum=0.8",
        "--jobs",
        "1",
        "--out",
        a.to_str().unwrap(),
    ]);
    let file = a.join("config.toml");
    let f = file.to_str().unwrap();
    succeeds(&[
        "uci",
        "--config",
        f,
        "--jobs",
        "1",
        "--out",
        b.to_str().unwrap(),
    ]);
    // The same runs: the predictions of both seeds agree to the bit (timings aside).
    let cells = |dir: &Path| {
        let mut v = summary(dir)["cells"].clone();
        for run in v[0]["runs"].as_array_mut().unwrap() {
            run.as_object_mut().unwrap().remove("wall_seconds");
        }
        v
    };
    assert_eq!(cells(&a), cells(&b));
    assert_eq!(config(&a), config(&b));
    // Settings come from the file: a flag that would change the run is refused.
    for flag in [["--seeds", "3"], ["--sampler", "sgld"], ["--epochs", "5"]] {
        let out = root.join("c");
        fails_with(
            &[
                "uci",
                "--config",
                f,
                flag[0],
                flag[1],
                "--out",
                out.to_str().unwrap(),
            ],
            2,
            "would change it",
        );
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn vr_resgld_repeats_a_study_from_its_config_toml() {
    let root = tmp("vr-config");
    let (a, b, c) = (root.join("a"), root.join("b"), root.join("c"));
    succeeds(&[
        "vr-resgld",
        "--quick",
        "--iters",
        "300",
        "--seed",
        "4",
        "--out",
        a.to_str().unwrap(),
    ]);
    let f = a.join("config.toml");
    let f = f.to_str().unwrap();
    succeeds(&["vr-resgld", "--config", f, "--out", b.to_str().unwrap()]);
    let read = |d: &Path, name: &str| std::fs::read(d.join(name)).unwrap();
    assert_eq!(read(&a, "variance.csv"), read(&b, "variance.csv"));
    assert_eq!(read(&a, "traces.csv"), read(&b, "traces.csv"));
    assert_eq!(config(&a), config(&b));
    // `--seed` beside the file overrides it.
    succeeds(&[
        "vr-resgld",
        "--config",
        f,
        "--seed",
        "5",
        "--out",
        c.to_str().unwrap(),
    ]);
    assert_eq!(config(&c)["seed"].as_integer(), Some(5));
    assert_ne!(read(&a, "traces.csv"), read(&c, "traces.csv"));
    fails_with(
        &[
            "vr-resgld",
            "--config",
            f,
            "--quick",
            "--out",
            root.join("d").to_str().unwrap(),
        ],
        2,
        "--quick",
    );
    let _ = std::fs::remove_dir_all(&root);
}
