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
use common::mpi::{distributed, fails_naming, one_process, same_files, summary};

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
