//! Distributed runs under `mpirun` on this machine (loopback; feature `mpi`): the same seed
//! gives the one-process run's outputs byte for byte (every step's swaps, rungs and buffer in
//! `replica_trace.csv`, every step's energies in `metrics.csv`, theta, the samples and the mode
//! masses), with one and with two chains per rank; and a failing rank (a divergence, a SIGKILL)
//! stops the whole job with an error naming it, within a bounded time.
#![cfg(feature = "mpi")]

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::cli::{sgmcmc, tmp};
use common::mpi::{distributed, fails_naming, one_process, same_files, summary};

/// The files of a toy run folder that must match byte for byte (the plots too: they are drawn
/// from the same numbers).
const SAME: &[&str] = &[
    "config.toml",
    "metrics.csv",
    "samples.csv",
    "replica_trace.csv",
    "theta_trace.csv",
];

/// Timing fields of a toy `summary.json`.
const TIMING: &[&str] = &["wall_seconds", "steps_per_second", "chain_steps_per_second"];

/// Runs `args` in one process and over `np` ranks into `dir`, and compares the outputs.
fn same_as_one_process(dir: &Path, name: &str, np: usize, args: &[&str]) -> serde_json::Value {
    let one = dir.join(format!("{name}-one"));
    let many = dir.join(format!("{name}-np{np}"));
    let mut a: Vec<&str> = args.to_vec();
    let one_s = one.to_string_lossy().into_owned();
    a.extend(["--quiet", "--out", &one_s]);
    one_process(&a);
    let mut a: Vec<&str> = args.to_vec();
    let many_s = many.to_string_lossy().into_owned();
    a.extend(["--quiet", "--distributed", "--out", &many_s]);
    let printed = distributed(np, &a, Duration::from_secs(300));
    assert!(printed.contains(&format!("over {np} ranks")), "{printed}");
    same_files(&one, &many, SAME, &format!("{name} over {np} ranks"));
    let s = summary(&one, TIMING);
    assert_eq!(
        s,
        summary(&many, TIMING),
        "{name} over {np} ranks: summary.json"
    );
    s
}

/// A config file in `dir` (the run's own settings on top of a preset).
fn config(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn replica_exchange_and_icsgld_over_ranks_match_the_one_process_runs() {
    let dir = tmp("mpi-equivalence");
    // reSGLD x P4 on the 1-D mixture with Gaussian energy noise: corrected swaps, sigma2
    // refreshed every 100 steps from 10 gathered draws; a log row every step, so every swap
    // decision and every rung is compared.
    let resgld = config(
        &dir,
        "resgld4.toml",
        "iters = 10000\nlog_points = 10000\n[sampler.replica]\ntemperatures = [1.0, 2.0, 4.0, \
         10.0]\ncorrection = 1.0\nvariance_period = 100\nvariance_draws = 10\ninitial_variance \
         = 100.0\n",
    );
    let r = resgld.to_string_lossy().into_owned();
    let base = [
        "toy", "--preset", "resgld-1", "--chains", "4", "--config", &r,
    ];
    let s = same_as_one_process(&dir, "resgld4", 4, &base);
    let accepts: u64 = s["replica"]["accepts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_u64().unwrap())
        .sum();
    assert!(accepts > 100, "few swaps to compare: {accepts}");

    // DEO*-SGD x P8 on the 25-mode target (W* = 6): two chains per rank.
    let deo = config(&dir, "deo8.toml", "iters = 10000\nlog_points = 10000\n");
    let d = deo.to_string_lossy().into_owned();
    let args = [
        "toy",
        "--preset",
        "deo-sgd-25-mode",
        "--chains",
        "8",
        "--config",
        &d,
    ];
    let s = same_as_one_process(&dir, "deo8", 4, &args);
    assert!(s["replica"]["round_trips"].as_u64().unwrap() > 0, "{s}");
    assert!(s["mode_masses"].is_array());

    // ICSGLD x P4 on the 25-mode target: one shared theta, one and two chains per rank.
    let args = [
        "toy",
        "--preset",
        "twenty-five-mode-icsgld",
        "--chains",
        "4",
        "--iters",
        "20000",
    ];
    let s = same_as_one_process(&dir, "icsgld4", 4, &args);
    same_as_one_process(&dir, "icsgld4-two-per-rank", 2, &args);
    assert!(s["theta"].is_array() && s["mode_masses"].is_array(), "{s}");

    // Independent chains: nothing crosses until rank 0 gathers the samples.
    let args = ["toy", "--preset", "bimodal-sgld", "--iters", "20000"];
    same_as_one_process(&dir, "sgld8", 3, &args);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn velocities_cross_ranks_at_accepted_swaps() {
    // reSGHMC x 4 (momentum, Metropolis swaps): an accepted swap between chains of two ranks
    // sends both chains' velocities between the ranks (`MPI_Sendrecv`). Host chains over 4
    // ranks (every swap crosses), and the chains as rows of one tensor per rank on flex over 2
    // ranks (the middle pair crosses when its replicas sit on different ranks).
    let dir = tmp("mpi-velocities");
    let toml = "iters = 6000\nlog_points = 6000\n[sampler.replica]\ntemperatures = [1.0, \
                2.0, 4.0, 10.0]\ninitial_variance = 1.0\n";
    let c = config(&dir, "resghmc4.toml", toml);
    let c = c.to_string_lossy().into_owned();
    let base = [
        "toy",
        "--preset",
        "resgld-1",
        "--sampler",
        "resghmc",
        "--chains",
        "4",
        "--config",
        &c,
    ];
    let s = same_as_one_process(&dir, "resghmc4", 4, &base);
    let accepts: Vec<u64> = s["replica"]["accepts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_u64().unwrap())
        .collect();
    assert!(accepts.iter().all(|a| *a > 50), "few swaps: {accepts:?}");
    let mut flex = base.to_vec();
    flex.extend(["--device", "flex", "--iters", "2000"]);
    same_as_one_process(&dir, "resghmc4-flex", 2, &flex);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A distributed toy run of `preset` on `np` ranks with the config `toml` (a `[fault]`), which
/// must fail within 30 s naming `needle`; its stderr. Faults need the `fault-injection` feature,
/// which the tests' build has (scripts/features.sh).
#[cfg(feature = "fault-injection")]
fn faulty_run(dir: &Path, name: &str, preset: &str, np: usize, toml: &str, needle: &str) -> String {
    let f = config(dir, &format!("{name}.toml"), toml)
        .to_string_lossy()
        .into_owned();
    let out = dir.join(name).to_string_lossy().into_owned();
    let args = [
        "toy",
        "--preset",
        preset,
        "--config",
        &f,
        "--distributed",
        "--quiet",
        "--out",
        &out,
    ];
    fails_naming(np, &args, Duration::from_secs(30), needle)
}

#[cfg(feature = "fault-injection")]
#[test]
fn a_failing_rank_stops_the_job_with_its_rank_and_step() {
    let dir = tmp("mpi-faults");
    // Rank 2 of 4 diverges at step 3000 of a DEO* run: every rank sees the gathered NaN, rank
    // 2 names itself and aborts, the others wait for it.
    let err = faulty_run(
        &dir,
        "diverge",
        "deo-sgd-25-mode",
        4,
        "[fault]\nrank = 2\nstep = 3000\nkind = \"diverge\"\n",
        "error: rank 2 of 4 at step 3000: chain 8 diverged",
    );
    assert_eq!(err.matches("error: rank").count(), 1, "one line: {err}");
    // Independent chains exchange nothing while they run: rank 1's divergence is its own.
    faulty_run(
        &dir,
        "plain",
        "bimodal-sgld",
        2,
        "[fault]\nrank = 1\nstep = 100\nkind = \"diverge\"\n",
        "error: rank 1 of 2 at step 100: chain 4 diverged",
    );
    // Rank 1 is killed (SIGKILL) mid-run of a run far longer than the limit: mpirun notices
    // and ends the job instead of leaving the others waiting in their next exchange.
    faulty_run(
        &dir,
        "kill",
        "deo-sgd-25-mode",
        4,
        "iters = 100000000\n[fault]\nrank = 1\nstep = 2000\nkind = \"kill\"\n",
        "rank 1",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ranks_checkpoint_their_parts_and_resume_only_on_as_many_ranks() {
    let dir = tmp("mpi-resume");
    let one = dir.join("one").to_string_lossy().into_owned();
    let many = dir.join("many").to_string_lossy().into_owned();
    let run = [
        "toy",
        "--preset",
        "deo-sgd-25-mode",
        "--iters",
        "10000",
        "--quiet",
    ];
    let mut a = run.to_vec();
    a.extend(["--out", &one]);
    one_process(&a);
    // Four ranks stop at step 5000 (checkpoints at 2000, 4000, 5000).
    let mut a = run.to_vec();
    a.extend([
        "--distributed",
        "--checkpoint-every",
        "2000",
        "--stop-after",
        "5000",
        "--out",
        &many,
    ]);
    distributed(4, &a, Duration::from_secs(120));
    let mut parts: Vec<String> = std::fs::read_dir(&many)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".rank-"))
        .collect();
    parts.sort();
    let want: Vec<String> = (0..4)
        .map(|r| format!("checkpoint.rank-{r}.step-5000.cbor"))
        .collect();
    assert_eq!(parts, want);
    // Two ranks, or one process, are refused with the command that works.
    let resume = ["toy", "--resume", &many, "--distributed", "--quiet"];
    fails_naming(
        2,
        &resume,
        Duration::from_secs(30),
        "written by 4 ranks and this run has 2: resume with `mpirun -np 4`",
    );
    let out = sgmcmc(&["toy", "--resume", &many]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("a checkpoint of 4 ranks; resume it with `mpirun -np 4"),
        "{err}"
    );
    // The same four ranks finish the run: the one-process run's outputs.
    distributed(4, &resume, Duration::from_secs(120));
    let (one, many) = (Path::new(&one), Path::new(&many));
    same_files(one, many, SAME, "after the resume");
    assert_eq!(summary(one, TIMING), summary(many, TIMING));
    std::fs::remove_dir_all(&dir).unwrap();
}
