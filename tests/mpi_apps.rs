//! `sgmcmc mnist`, `uci` and `images` over the ranks of `mpirun` (feature `mpi`) on tiny
//! synthetic data sets: with the same seed rank 0 writes the one-process run's files byte for
//! byte (every chain's per-step energies, the evaluations, the model averages, the summary but
//! its timings), with one and with two chains per rank, for coupled (ICSGLD, DEO*) and
//! independent chains; a distributed run stopped at a checkpoint resumes on as many ranks to
//! the same files.
#![cfg(feature = "mpi")]

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::cli::tmp;
use common::mpi::{
    distributed, fails_naming, mpirun, one_process, run_within, same_files, summary,
};

/// A generous bound for one job of these tests (each takes seconds).
const LIMIT: Duration = Duration::from_secs(300);

/// A file in `dir` with `text`; its path as a string.
fn file(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

/// Runs `args` in one process into `dir/NAME-one` and over `np` ranks into `dir/NAME-npN`;
/// asserts the `files` and the summary (without `timing`) are the same; the two folders.
fn same_as_one_process(
    dir: &Path,
    name: &str,
    np: usize,
    args: &[&str],
    files: &[&str],
    timing: &[&str],
) -> (PathBuf, PathBuf) {
    let one = dir.join(format!("{name}-one"));
    let many = dir.join(format!("{name}-np{np}"));
    let (one_s, many_s) = (one.to_string_lossy(), many.to_string_lossy());
    if !one.exists() {
        let mut a = args.to_vec();
        a.extend(["--quiet", "--out", &one_s]);
        one_process(&a);
    }
    let mut a = args.to_vec();
    a.extend(["--quiet", "--distributed", "--out", &many_s]);
    let printed = distributed(np, &a, LIMIT);
    assert!(printed.contains(&format!("over {np} ranks")), "{printed}");
    let what = format!("{name} over {np} ranks");
    for f in files {
        assert!(one.join(f).exists(), "{what}: no {f}");
    }
    same_files(&one, &many, files, &what);
    assert_eq!(summary(&one, timing), summary(&many, timing), "{what}");
    (one, many)
}

/// The files of an mnist run folder compared byte for byte (the figures too: they are drawn
/// from the same numbers).
const MNIST_SAME: &[&str] = &[
    "config.toml",
    "loss.csv",
    "accuracy.csv",
    "entropy.csv",
    "loss.png",
    "multiplier.png",
    "accuracy.png",
    "entropy_cdf.png",
];

/// Timing fields of an mnist `summary.json`.
const MNIST_TIMING: &[&str] = &[
    "wall_seconds",
    "steps_per_second",
    "seconds_per_epoch",
    "eval_seconds",
];

/// A small CNN on 16x16 synthetic digits (500 training images, batch 50: 10 steps per epoch),
/// evaluated every epoch, checkpointed every epoch.
const MNIST_CONFIG: &str = "train_per_class = 0\nheldout_limit = 100\nchannels = [4, 8]\n\
hidden = 16\nbatch = 50\nlr = 0.0002\nprior_precision = 1.0\nu_min = 0.0\ndu = 5.0\n\
bins = 200\nzeta = 10.0\neval_every = 1\ncheckpoint_every = 1\nburn_fraction = 0.3\n";

#[test]
fn mnist_over_ranks_writes_the_one_process_run() {
    let dir = tmp("mpi-mnist");
    sgmcmc::data::mnist::write_synthetic(&dir.join("mnist"), 16, 10, 1000, 300, 7).unwrap();
    let config = file(&dir, "small.toml", MNIST_CONFIG);
    let data = dir.to_string_lossy().into_owned();
    // ICSGLD x 4 (one shared theta, importance-weighted averages): two chains per rank, then
    // one.
    let icsgld = [
        "mnist",
        "--config",
        &config,
        "--sampler",
        "icsgld",
        "--chains",
        "4",
        "--epochs",
        "4",
        "--data-dir",
        &data,
    ];
    for np in [2, 4] {
        same_as_one_process(&dir, "icsgld", np, &icsgld, MNIST_SAME, MNIST_TIMING);
    }
    let s = summary(&dir.join("icsgld-one"), MNIST_TIMING);
    assert!(s["bma_models"].as_u64().unwrap() >= 8, "{s}");
    let loss = std::fs::read_to_string(dir.join("icsgld-one/loss.csv")).unwrap();
    assert_eq!(loss.lines().count(), 1 + 4 * 40, "a row per chain and step");
    // SGLD x 3 over 2 ranks (2 + 1 chains): independent chains exchange nothing while they
    // run; their rows and predictions meet on rank 0.
    let sgld = [
        "mnist",
        "--config",
        &config,
        "--sampler",
        "sgld",
        "--chains",
        "3",
        "--epochs",
        "3",
        "--data-dir",
        &data,
    ];
    same_as_one_process(&dir, "sgld", 2, &sgld, MNIST_SAME, MNIST_TIMING);

    // Stopped after 2 of 4 epochs on 2 ranks (a manifest and a part per rank), refused on 4
    // ranks and in one process, finished on 2: the one-process run's files.
    let stopped = dir.join("icsgld-resumed");
    let out = stopped.to_string_lossy().into_owned();
    let mut a = icsgld.to_vec();
    a.extend([
        "--quiet",
        "--distributed",
        "--stop-after",
        "2",
        "--out",
        &out,
    ]);
    let printed = distributed(2, &a, LIMIT);
    assert!(printed.contains("stopped after 2 of 4 epochs"), "{printed}");
    assert!(stopped.join("checkpoint.rank-1.step-20.cbor").exists());
    let resume = ["mnist", "--resume", &out, "--distributed", "--quiet"];
    fails_naming(
        4,
        &resume,
        Duration::from_secs(60),
        "written by 2 ranks and this run has 4: resume with `mpirun -np 2`",
    );
    let err = common::cli::sgmcmc(&["mnist", "--resume", &out]);
    assert_eq!(err.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&err.stderr)
            .contains("a checkpoint of 2 ranks; resume it with `mpirun -np 2 sgmcmc mnist"),
        "{}",
        String::from_utf8_lossy(&err.stderr)
    );
    distributed(2, &resume, LIMIT);
    let one = dir.join("icsgld-one");
    same_files(&one, &stopped, MNIST_SAME, "icsgld resumed over 2 ranks");
    assert_eq!(summary(&one, MNIST_TIMING), summary(&stopped, MNIST_TIMING));
    if std::env::var_os("KEEP").is_none() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// A UCI run folder with the wall times taken out: `summary.json` (every `wall_seconds`),
/// `runs.csv` (its last column), `table.md` (its wall-time line) and each seed's
/// `result.json`, as text.
fn uci_outputs(dir: &Path, seeds: usize) -> Vec<String> {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                m.remove("wall_seconds");
                m.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let json = |p: PathBuf| {
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        strip(&mut v);
        v.to_string()
    };
    let text = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    let mut out = vec![
        json(dir.join("summary.json")),
        text("runs.csv")
            .lines()
            .map(|l| l.rsplit_once(',').map_or(l, |(head, _)| head).to_string())
            .collect::<Vec<_>>()
            .join("\n"),
        text("table.md")
            .lines()
            .filter(|l| !l.starts_with("wall time"))
            .collect::<Vec<_>>()
            .join("\n"),
        text("config.toml"),
    ];
    out.extend((0..seeds).map(|k| json(dir.join(format!("seed-{k}/result.json")))));
    out
}

#[test]
fn uci_over_ranks_writes_the_one_process_run() {
    let dir = tmp("mpi-uci");
    let data = dir.join("synthetic");
    sgmcmc::data::uci::write_synthetic(&data, 300, 4, 2, 0.1, 7).unwrap();
    let data = data.to_string_lossy().into_owned();
    // Two seeds (two splits) of 30 epochs (5 steps each), checkpointed (so every seed writes
    // its `result.json`): ICSGLD x 4 (shared theta, importance weights), DEO*-SGD x 4 (swaps
    // and an adaptive ladder), DEO*-mSGD x 4 (velocities sent between the ranks at swaps of
    // their chains) and SGLD x 3 (independent chains, 2 + 1 per rank).
    let runs = [
        ("icsgld", "4", 4),
        ("deo-sgd", "4", 2),
        ("deo-msgd", "4", 2),
        ("sgld", "3", 2),
    ];
    for (sampler, chains, np) in runs {
        let args = [
            "uci",
            "--dataset",
            &data,
            "--sampler",
            sampler,
            "--chains",
            chains,
            "--seeds",
            "2",
            "--epochs",
            "30",
            "--checkpoint-every",
            "40",
            "--jobs",
            "1",
        ];
        let one = dir.join(format!("{sampler}-one"));
        let many = dir.join(format!("{sampler}-np{np}"));
        let (one_s, many_s) = (one.to_string_lossy(), many.to_string_lossy());
        let mut a = args.to_vec();
        a.extend(["--out", &one_s]);
        one_process(&a);
        let mut a = args.to_vec();
        a.extend(["--distributed", "--out", &many_s]);
        let printed = distributed(np, &a, LIMIT);
        assert!(
            printed.contains(&format!("each over {np} ranks")),
            "{printed}"
        );
        let (x, y) = (uci_outputs(&one, 2), uci_outputs(&many, 2));
        for (a, b) in x.iter().zip(&y) {
            assert_eq!(a, b, "{sampler} over {np} ranks");
        }
        assert!(x[0].contains("\"rmse\""), "{}", x[0]);
    }
    // Resumed with seed 1's result gone: seed 0's is read back, seed 1 continues from its last
    // checkpoint (the final one: every rank's part holds its chains' averaged models), refused
    // on 2 ranks and in one process, and on 4 ranks gives the same result.
    let many = dir.join("icsgld-np4");
    let m = many.to_string_lossy().into_owned();
    std::fs::remove_file(many.join("seed-1/result.json")).unwrap();
    fails_naming(
        2,
        &["uci", "--resume", &m, "--distributed"],
        Duration::from_secs(60),
        "written by 4 ranks and this run has 2: resume with `mpirun -np 4`",
    );
    let err = common::cli::sgmcmc(&["uci", "--resume", &m]);
    assert!(
        String::from_utf8_lossy(&err.stderr).contains(&format!(
            "a checkpoint of 4 ranks; resume it with `mpirun -np 4 sgmcmc uci --resume {m} \
             --distributed`"
        )),
        "{}",
        String::from_utf8_lossy(&err.stderr)
    );
    distributed(4, &["uci", "--resume", &m, "--distributed"], LIMIT);
    assert_eq!(
        uci_outputs(&dir.join("icsgld-one"), 2),
        uci_outputs(&many, 2),
        "icsgld resumed over 4 ranks"
    );
    if std::env::var_os("KEEP").is_none() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// The files of an images run folder compared byte for byte.
const IMAGES_SAME: &[&str] = &[
    "config.toml",
    "energy.csv",
    "accuracy.csv",
    "calibration.csv",
    "ood_entropy.csv",
    "accuracy.png",
    "calibration.png",
    "ood_entropy_cdf.png",
];

/// Timing fields of an images `summary.json`.
const IMAGES_TIMING: &[&str] = &[
    "wall_seconds",
    "steps_per_second",
    "train_seconds",
    "eval_seconds",
];

/// ResNet20 on the synthetic 3x12x12 set (64 training images, batch 16: 4 steps per epoch),
/// 2 epochs, evaluated every epoch, models collected from the second; the weight decay of
/// `tests/images.rs` (25 per 50,000 images) and a contour partition over its energies.
const IMAGES_CONFIG: &str = "batch = 16\nepochs = 2.0\neval_every = 1.0\nburn_epochs = 1.0\n\
checkpoint_every = 1.0\nweight_decay = 0.032\nu_min = 0.0\ndu = 10.0\nbins = 40\nzeta = 2.0\n";

#[test]
fn images_over_ranks_writes_the_one_process_run() {
    let dir = tmp("mpi-images");
    let config = file(&dir, "small.toml", IMAGES_CONFIG);
    let run = |sampler: &'static str, chains: &'static str| {
        vec![
            "images",
            "--dataset",
            "synthetic",
            "--config",
            &config,
            "--sampler",
            sampler,
            "--chains",
            chains,
        ]
    };
    // ICSGHMC x 4 (shared theta; the velocities stay with their chains), one and two chains
    // per rank; M-SGD x 3 (independent); DEO*-SGD x 4 (swaps between SGD rungs, SGLD on rung
    // 0: samples from the chain on rung 0 only).
    for np in [2, 4] {
        let a = run("icsghmc", "4");
        same_as_one_process(&dir, "icsghmc", np, &a, IMAGES_SAME, IMAGES_TIMING);
    }
    for (sampler, chains) in [("msgd", "3"), ("deo-sgd", "4")] {
        let a = run(sampler, chains);
        same_as_one_process(&dir, sampler, 2, &a, IMAGES_SAME, IMAGES_TIMING);
    }
    let s = summary(&dir.join("icsghmc-one"), IMAGES_TIMING);
    assert!(s["bma_models"].as_u64().unwrap() >= 8, "{s}");

    // Stopped after 5 of 8 steps on 2 ranks, finished on 2: the one-process files.
    let stopped = dir.join("deo-resumed");
    let out = stopped.to_string_lossy().into_owned();
    let mut a = run("deo-sgd", "4");
    a.extend([
        "--quiet",
        "--distributed",
        "--stop-after",
        "5",
        "--out",
        &out,
    ]);
    let printed = distributed(2, &a, LIMIT);
    assert!(printed.contains("stopped after 5 steps"), "{printed}");
    distributed(
        2,
        &["images", "--resume", &out, "--distributed", "--quiet"],
        LIMIT,
    );
    let one = dir.join("deo-sgd-one");
    same_files(&one, &stopped, IMAGES_SAME, "deo-sgd resumed over 2 ranks");
    assert_eq!(
        summary(&one, IMAGES_TIMING),
        summary(&stopped, IMAGES_TIMING)
    );

    // Over two ranks variance-reduced replica exchange is refused: one line, exit code 2.
    let mut a = run("resghmc", "2");
    let refused = dir.join("refused").to_string_lossy().into_owned();
    a.extend(["--quiet", "--distributed", "--out", &refused]);
    let err = fails_naming(
        2,
        &a,
        Duration::from_secs(60),
        "`resghmc` runs in one process",
    );
    assert_eq!(err.matches("error:").count(), 1, "{err}");
    // A job of one rank runs what one process runs, the replica exchange that draws fresh
    // minibatches included: the one-process files.
    let a = run("resghmc", "2");
    same_as_one_process(&dir, "resghmc", 1, &a, IMAGES_SAME, IMAGES_TIMING);
    if std::env::var_os("KEEP").is_none() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn a_job_of_one_rank_refused_for_its_data_fails_as_one_process_does() {
    // No rank waits on it, so it ends as one process does, not through MPI_Abort: one line,
    // the command's exit code, and the folder it made (with its parents) taken back.
    let dir = tmp("mpi-one-rank");
    let out = dir.join("new/run");
    let o = out.to_str().unwrap();
    for command in ["mnist", "uci"] {
        let args = [
            command,
            "--distributed",
            "--data-dir",
            "/nonexistent",
            "--out",
            o,
            "--quiet",
        ];
        let (got, _) = run_within(mpirun(1, &args), LIMIT);
        let err = String::from_utf8_lossy(&got.stderr);
        assert_eq!(got.status.code(), Some(2), "{command}: {err}");
        assert_eq!(err.matches("error:").count(), 1, "{command}: {err}");
        assert!(
            err.contains("missing file /nonexistent/"),
            "{command}: {err}"
        );
        assert!(!err.contains("MPI_ABORT"), "{command}: {err}");
        assert!(!dir.join("new").exists(), "{command} left {o}");
    }
    let _ = std::fs::remove_dir_all(dir);
}
