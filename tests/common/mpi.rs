//! Running the `sgmcmc` binary under `mpirun` from tests, and comparing a distributed run's
//! folder with the one-process run's.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::cli::sgmcmc;

/// `mpirun -np N sgmcmc ARGS`, with Open MPI's switches for running as root and for more ranks
/// than cores.
pub fn mpirun(np: usize, args: &[&str]) -> Command {
    let mut c = Command::new("mpirun");
    let version = Command::new("mpirun").arg("--version").output();
    let open_mpi = version.is_ok_and(|v| String::from_utf8_lossy(&v.stdout).contains("Open MPI"));
    if open_mpi {
        c.args(["--oversubscribe"])
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    }
    c.args(["-np", &np.to_string(), env!("CARGO_BIN_EXE_sgmcmc")])
        .args(args);
    c
}

/// One MPI job at a time: the tests run on threads, and concurrent jobs of 4 busy-polling
/// ranks on 2 cores would slow each other tenfold.
static ONE_JOB: Mutex<()> = Mutex::new(());

/// Runs `cmd` to its end, killing it after `limit`; the output and the time it took.
pub fn run_within(mut cmd: Command, limit: Duration) -> (Output, Duration) {
    let _one = ONE_JOB.lock().unwrap_or_else(|e| e.into_inner());
    let start = Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mpirun starts (scripts/install-deps.sh installs Open MPI)");
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (child.wait_with_output().unwrap(), start.elapsed())
}

/// Runs `sgmcmc ARGS` in one process (under the MPI lock: a one-process run beside an MPI
/// job would change neither's result but slow both); asserts success.
pub fn one_process(args: &[&str]) -> Output {
    let _one = ONE_JOB.lock().unwrap_or_else(|e| e.into_inner());
    let out = sgmcmc(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs `mpirun -np N sgmcmc ARGS` within `limit`; asserts success and returns stdout.
pub fn distributed(np: usize, args: &[&str], limit: Duration) -> String {
    let (out, _) = run_within(mpirun(np, args), limit);
    assert!(
        out.status.success(),
        "-np {np} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Asserts that the job failed, within `limit`, with stderr naming `needle`; its stderr.
pub fn fails_naming(np: usize, args: &[&str], limit: Duration, needle: &str) -> String {
    let (out, took) = run_within(mpirun(np, args), limit * 2);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "the job succeeded: {err}");
    assert!(took < limit, "took {took:?}: {err}");
    assert!(err.contains(needle), "no `{needle}` in: {err}");
    err
}

/// `summary.json` of `dir` without the fields named in `timing` (wall times, rates).
pub fn summary(dir: &Path, timing: &[&str]) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    for k in timing {
        v.as_object_mut().unwrap().remove(*k);
    }
    v
}

/// Asserts that each of `files` is in both folders or in neither, with the same bytes.
pub fn same_files(one: &Path, many: &Path, files: &[&str], what: &str) {
    for f in files {
        let (a, b) = (one.join(f), many.join(f));
        assert_eq!(a.exists(), b.exists(), "{what}: {f} in one folder only");
        if a.exists() {
            assert!(
                std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(),
                "{what}: {f} differs"
            );
        }
    }
}
