//! The CLI contract: outputs, `--list`, and bad input giving one clear error line and a
//! non-zero exit code (2 for bad usage or input, 1 for a failed run), never a panic.

mod common;

use std::path::PathBuf;

use common::cli::{fails_with, sgmcmc, succeeds, tmp};
use sgmcmc::data::loopback::serve;

/// The `summary.json` of a run directory.
fn summary(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn list_names_every_target_sampler_and_preset() {
    let out = sgmcmc(&["toy", "--list"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for name in [
        "nine-mode",
        "twenty-five-mode",
        "mixture-csgld",
        "rugged",
        "gaussian",
        "sgld",
        "sghmc",
        "psgld",
        "cycsgld",
        "nine-mode-cycsgld",
    ] {
        assert!(text.contains(name), "missing {name} in {text}");
    }
}

#[test]
fn bad_usage_gives_one_line_and_exit_code_2() {
    let out = tmp("bad");
    let o = out.to_str().unwrap();
    fails_with(
        &["toy", "--target", "nope", "--out", o],
        2,
        "unknown target `nope`",
    );
    fails_with(
        &["toy", "--sampler", "nope", "--out", o],
        2,
        "unknown sampler `nope`",
    );
    fails_with(
        &["toy", "--preset", "nope", "--out", o],
        2,
        "unknown preset",
    );
    fails_with(&["toy", "--lr", "0", "--out", o], 2, "lr");
    fails_with(&["toy", "--lr=-0.1", "--out", o], 2, "lr");
    fails_with(
        &["toy", "--temperature", "nan", "--out", o],
        2,
        "temperature",
    );
    fails_with(
        &["toy", "--temperature", "inf", "--out", o],
        2,
        "temperature",
    );
    fails_with(&["toy", "--chains", "0", "--out", o], 2, "chains");
    fails_with(&["toy", "--iters", "ten", "--out", o], 2, "invalid value");
    fails_with(&["toy", "--frobnicate"], 2, "unexpected argument");
    fails_with(&["toy", "--device", "tpu"], 2, "invalid value");
    fails_with(&["nosuchcommand"], 2, "unrecognized subcommand");
}

#[test]
fn bad_config_files_are_input_errors() {
    let dir = tmp("config");
    let o = dir.join("run");
    let o = o.to_str().unwrap();
    let malformed = dir.join("malformed.toml");
    std::fs::write(&malformed, "lr = [unclosed\n").unwrap();
    fails_with(
        &["toy", "--config", malformed.to_str().unwrap(), "--out", o],
        2,
        "malformed config",
    );
    let unknown = dir.join("unknown.toml");
    std::fs::write(&unknown, "learning_rate = 0.1\n").unwrap();
    fails_with(
        &["toy", "--config", unknown.to_str().unwrap(), "--out", o],
        2,
        "learning_rate",
    );
    let missing = dir.join("missing.toml");
    fails_with(
        &["toy", "--config", missing.to_str().unwrap(), "--out", o],
        2,
        "cannot read config",
    );
    // SGHMC needs beta = V lr / 2 <= 1 - mu: V = 1000, lr 0.01 gives beta 5 > 0.1.
    let sghmc = dir.join("sghmc.toml");
    std::fs::write(
        &sghmc,
        "[sampler]\nname = \"sghmc\"\nlr = 0.01\nnoise_estimate = 1000.0\n",
    )
    .unwrap();
    fails_with(
        &["toy", "--config", sghmc.to_str().unwrap(), "--out", o],
        2,
        "beta",
    );
}

#[test]
fn divergence_names_the_chain_and_the_step_and_exits_1() {
    // lr 5 on a Gaussian with eigenvalues up to ~3: |1 - 5 a| > 1 grows until U overflows.
    let dir = tmp("diverge");
    let o = dir.to_str().unwrap();
    fails_with(
        &[
            "toy",
            "--target",
            "gaussian",
            "--sampler",
            "sgld",
            "--lr",
            "5",
            "--chains",
            "3",
            "--iters",
            "5000",
            "--out",
            o,
        ],
        1,
        "chain 0 diverged at step",
    );
}

#[test]
fn a_toy_run_writes_the_contracted_outputs() {
    let dir = tmp("run");
    let o = dir.to_str().unwrap();
    succeeds(&[
        "toy",
        "--target",
        "nine-mode",
        "--sampler",
        "cycsgld",
        "--lr",
        "0.005",
        "--chains",
        "2",
        "--iters",
        "20000",
        "--seed",
        "4",
        "--out",
        o,
        "--quiet",
    ]);
    for f in [
        "config.toml",
        "metrics.csv",
        "summary.json",
        "samples.csv",
        "samples.png",
        "energy.png",
    ] {
        assert!(dir.join(f).is_file(), "missing {f}");
    }
    let s = summary(&dir);
    for key in [
        "sampler",
        "target",
        "seed",
        "device",
        "wall_seconds",
        "steps_per_second",
        "mode_masses",
        "exact_mode_masses",
        "mode_mass_l1",
    ] {
        assert!(!s[key].is_null(), "summary.json lacks {key}: {s}");
    }
    assert_eq!(s["seed"], 4);
    let masses: Vec<f64> = serde_json::from_value(s["mode_masses"].clone()).unwrap();
    assert_eq!(masses.len(), 9);
    assert!((masses.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    // config.toml round-trips: feeding it back reproduces the run exactly.
    let again = tmp("again");
    succeeds(&[
        "toy",
        "--config",
        dir.join("config.toml").to_str().unwrap(),
        "--out",
        again.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(
        std::fs::read(dir.join("samples.csv")).unwrap(),
        std::fs::read(again.join("samples.csv")).unwrap()
    );
}

#[test]
fn the_demo_shows_sgld_stuck_in_one_mode_and_csgld_and_resgld_recovering_both() {
    let dir = tmp("demo");
    let o = dir.to_str().unwrap();
    succeeds(&[
        "demo", "--iters", "400000", "--chains", "2", "--out", o, "--quiet",
    ]);
    let s = summary(&dir);
    let masses = |sampler: &str| -> Vec<f64> {
        serde_json::from_value(s["mode_masses"][sampler].clone()).unwrap()
    };
    let se = |sampler: &str| -> f64 { s["mode_mass_se"][sampler][0].as_f64().unwrap() };
    // From x = 0 SGLD falls into the heavier mode and stays behind the 12-nat barrier (it puts
    // 0 on the far mode with this seed; one crossing per chain in 4e5 steps would be rare).
    assert!(masses("sgld")[0] < 0.05, "{s}");
    // CSGLD and reSGLD put 0.4 on the far mode within 4 of their Monte Carlo standard errors
    // (0.019 and 0.009 here), and that error is small enough to tell them from SGLD.
    for sampler in ["csgld", "resgld"] {
        let (m, e) = (masses(sampler)[0], se(sampler));
        assert!(
            e < 0.03 && (m - 0.4).abs() < 4.0 * e,
            "{sampler}: {m} +- {e}"
        );
    }
    assert!(dir.join("density.png").exists());
}

#[test]
fn bench_reports_throughput_and_overhead_ratios() {
    let dir = tmp("bench");
    let o = dir.to_str().unwrap();
    succeeds(&["bench", "--seconds", "0.05", "--no-cnn", "--out", o]);
    let s = summary(&dir);
    let figures = s["figures"].as_array().unwrap();
    // toy 6; digits MLP autodiff + closed form + autodiff with the prior on the graph + drop-in
    // layers 4; MLP 13-50-1 autodiff 6 and closed form 6; one chain and two chains on threads 2.
    assert_eq!(figures.len(), 6 + 4 + 6 + 6 + 2, "{s}");
    assert!(
        figures
            .iter()
            .all(|f| f["per_second"].as_f64().unwrap() > 0.0)
    );
    // digits closed-form:autodiff, detached:graph prior and drop-in:network 3; MLP autodiff 4,
    // closed form 4; VR-reSGLD per step and amortised over 2 periods 3; chains 1.
    assert_eq!(s["ratios"].as_array().unwrap().len(), 15, "{s}");
    fails_with(
        &["bench", "--device", "host", "--out", o],
        2,
        "tensor device",
    );
    // `--only` runs just the named groups: the toy's 6 figures, no ratio.
    let only = tmp("bench-only");
    let o = only.to_str().unwrap();
    succeeds(&["bench", "--seconds", "0.01", "--only", "toy", "--out", o]);
    let s = summary(&only);
    assert_eq!(s["figures"].as_array().unwrap().len(), 6, "{s}");
    assert!(s["ratios"].as_array().unwrap().is_empty(), "{s}");
    fails_with(&["bench", "--only", "gpus", "--out", o], 2, "--only");
}

#[test]
fn a_contour_run_reports_weighted_and_raw_masses_and_theta() {
    // CSGLD on the 9-mode target (supplement D.3 settings), 4 chains sharing theta, 2e5 steps:
    // the importance-weighted masses must be closer to the exact ones than the raw (flattened)
    // visit frequencies, whose corners exceed the exact 0.049.
    let dir = tmp("csgld");
    let o = dir.to_str().unwrap();
    succeeds(&[
        "toy",
        "--preset",
        "nine-mode-csgld",
        "--chains",
        "4",
        "--iters",
        "200000",
        "--seed",
        "3",
        "--out",
        o,
        "--quiet",
    ]);
    let s = summary(&dir);
    let v = |k: &str| -> Vec<f64> { serde_json::from_value(s[k].clone()).unwrap() };
    let (w, raw, exact) = (
        v("mode_masses"),
        v("raw_mode_masses"),
        v("exact_mode_masses"),
    );
    let l1 = |m: &[f64]| {
        m.iter()
            .zip(&exact)
            .map(|(a, b)| (a - b).abs())
            .sum::<f64>()
    };
    assert!(l1(&w) < l1(&raw), "weighted {} vs raw {}", l1(&w), l1(&raw));
    assert!((raw[0] + raw[2] + raw[6] + raw[8]) / 4.0 > exact[0]);
    let theta = v("theta");
    assert_eq!(theta.len(), 100);
    assert!((theta.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    assert!(s["bouncy_moves"].as_u64().unwrap() > 0);
}

#[test]
fn vr_resgld_and_replica_presets_write_their_outputs() {
    let dir = tmp("vr");
    let o = dir.to_str().unwrap();
    succeeds(&["vr-resgld", "--quick", "--iters", "1000", "--out", o]);
    let s = summary(&dir);
    assert_eq!(s["runs"].as_array().unwrap().len(), 5, "{s}");
    // Each rung-0 trace's ESS (one chain: no R-hat).
    for r in s["runs"].as_array().unwrap() {
        let d = &r["diagnostics"];
        assert!(
            d["ess_bulk"].as_f64().unwrap() > 0.0 && d["rhat"].is_null(),
            "{r}"
        );
    }
    for f in ["variance.csv", "traces.csv", "traces.png"] {
        assert!(dir.join(f).exists(), "{f}");
    }
    let dir = tmp("deo");
    let o = dir.to_str().unwrap();
    succeeds(&[
        "toy",
        "--preset",
        "deo-sgd-25-mode",
        "--iters",
        "500",
        "--out",
        o,
        "--quiet",
    ]);
    let s = summary(&dir);
    assert_eq!(s["replica"]["window"], 8, "{s}");
    for f in ["replica_trace.csv", "index_process.png", "ladder.png"] {
        assert!(dir.join(f).exists(), "{f}");
    }
}

#[test]
fn data_verify_names_the_missing_file() {
    let dir = tmp("verify");
    fails_with(&["data", "verify", dir.to_str().unwrap()], 2, "no dataset");
    fails_with(
        &["data", "fetch", "cifar-10", "--to", dir.to_str().unwrap()],
        2,
        "unknown benchmark",
    );
}

#[test]
fn data_fetch_mnist_refuses_a_bad_checksum_and_verify_checks_image_folders() {
    // A synthetic upstream: well-formed files that fail the real MNIST checksums.
    let up = tmp("mnist-up");
    sgmcmc_data::mnist::write_synthetic(&up, 12, 4, 20, 8, 1).unwrap();
    let base = serve(up.clone(), 4);
    let to = tmp("mnist-to");
    let t = to.to_str().unwrap();
    fails_with(
        &["data", "fetch", "mnist", "--to", t, "--base-url", &base],
        2,
        "SHA-256",
    );
    assert_eq!(std::fs::read_dir(&to).unwrap().count(), 0, "left behind");

    // `data verify` checks a `mnist/` folder it finds, naming the first bad file.
    std::fs::rename(&up, to.join("mnist")).unwrap();
    fails_with(
        &["data", "verify", t],
        2,
        "train-images-idx3-ubyte.gz: SHA-256",
    );
    let _ = std::fs::remove_dir_all(&to);

    let root = std::env::var_os("SGMCMC_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| "../shared/datasets".into());
    if !root.join("mnist").is_dir() || !root.join("fashion-mnist").is_dir() {
        println!(
            "skipped: no mnist/fashion-mnist under {} (set SGMCMC_DATA_DIR)",
            root.display()
        );
        return;
    }
    let out = sgmcmc(&["data", "verify", root.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for name in ["mnist", "fashion-mnist"] {
        let line = format!("ok {}", root.join(name).display());
        assert!(text.lines().any(|l| l == line), "no `{line}` in {text}");
    }
}

#[test]
fn data_fetch_uci_writes_the_folders_uci_data_dir_reads() {
    let root = std::env::var_os("SGMCMC_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| "../shared/datasets".into());
    let names = ["energy", "concrete", "yacht", "wine-quality-red"];
    if names.iter().any(|n| !root.join("uci").join(n).is_dir()) {
        println!(
            "skipped: no uci/{{energy,concrete,yacht,wine-quality-red}} under {} (set \
             SGMCMC_DATA_DIR)",
            root.display()
        );
        return;
    }
    // An upstream in the benchmark distribution's layout (`NAME/data/FILE`), made of the data
    // at hand, which pass its checksums.
    let up = tmp("uci-up");
    let mut files = 0;
    for n in names {
        let to = up.join(n).join("data");
        std::fs::create_dir_all(&to).unwrap();
        for f in std::fs::read_dir(root.join("uci").join(n)).unwrap() {
            let f = f.unwrap();
            std::fs::copy(f.path(), to.join(f.file_name())).unwrap();
            files += 1;
        }
    }
    let base = serve(up.clone(), files);
    let to = tmp("uci-to");
    let t = to.to_str().unwrap();
    succeeds(&["data", "fetch", "uci", "--to", t, "--base-url", &base]);
    assert!(
        to.join("uci/yacht/data.txt").is_file(),
        "not in DIR/uci/NAME"
    );
    // `--data-dir` of `sgmcmc uci` reads the folder `data fetch` wrote.
    let out = tmp("uci-fetched-run");
    let o = out.to_str().unwrap();
    succeeds(&[
        "uci",
        "--dataset",
        "yacht",
        "--seeds",
        "1",
        "--epochs",
        "1",
        "--data-dir",
        t,
        "--out",
        o,
        "--quiet",
    ]);
    assert!(out.join("summary.json").is_file());
    let _ = std::fs::remove_dir_all(&up);
    let _ = std::fs::remove_dir_all(&to);
    let _ = std::fs::remove_dir_all(&out);
}
