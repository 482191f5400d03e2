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
    for s in [
        "--seconds=-1",
        "--seconds=nan",
        "--seconds=inf",
        "--seconds=1e300",
    ] {
        fails_with(&["bench", s, "--no-cnn", "--out", o], 2, "--seconds");
    }
    for command in ["mnist", "toy", "images"] {
        fails_with(
            &[command, "--stop-after", "0", "--out", o],
            2,
            "--stop-after",
        );
    }
    // `sgmcmc` alone ran nothing: the help on standard output, one error line, exit 2.
    fails_with(&[], 2, "a command is needed");
    assert!(String::from_utf8_lossy(&sgmcmc(&[]).stdout).contains("Usage"));
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
    // One warning line for the failed runs (there were one per run), then the error.
    let lines: Vec<&str> = err.trim_end().lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(lines[0].starts_with("warning: 2 of 2 runs failed"), "{err}");
    assert!(lines[1].starts_with("error: every run failed"), "{err}");
    let table = std::fs::read_to_string(out.join("table.md")).unwrap();
    assert!(table.contains("| 2 of 2 |"), "{table}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["failed_runs"], 2, "{summary}");
    assert_eq!(summary["runs"], 2, "{summary}");
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

/// An empty folder no file can be written to (`chattr +i` as root, a read-only mode
/// otherwise), writable again when dropped, also when a test fails.
struct ReadOnly(std::path::PathBuf);

impl ReadOnly {
    /// `dir` made read-only, if this machine can.
    fn new(dir: &std::path::Path) -> Option<Self> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(dir).unwrap();
        let guard = Self(dir.to_path_buf());
        let writable = || std::fs::write(dir.join("probe"), "").is_ok();
        let immutable = std::process::Command::new("chattr")
            .arg("+i")
            .arg(dir)
            .status();
        if immutable.is_ok_and(|s| s.success()) && !writable() {
            return Some(guard);
        }
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        (!writable()).then_some(guard)
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(&self.0)
            .status();
        let _ = std::fs::set_permissions(&self.0, std::fs::Permissions::from_mode(0o755));
    }
}

#[test]
fn an_output_folder_that_cannot_be_written_exits_2_before_the_run() {
    let root = tmp("read-only");
    let dir = root.join("ro");
    let Some(read_only) = ReadOnly::new(&dir) else {
        eprintln!("skipped: no way to make a read-only folder here (root without chattr)");
        return;
    };
    let o = dir.to_str().unwrap();
    // Before, each computed first and failed at its first write with exit 1 (demo with 2).
    let runs: &[&[&str]] = &[
        &["toy", "--iters", "1000", "--out", o],
        &["demo", "--iters", "1000", "--chains", "1", "--out", o],
        &["bench", "--seconds", "0.01", "--no-cnn", "--out", o],
        &["vr-resgld", "--quick", "--iters", "100", "--out", o],
        &["uci", "--data-dir", "/nonexistent", "--out", o],
        &["mnist", "--data-dir", "/nonexistent", "--out", o],
        &["digits", "--data-dir", "/nonexistent", "--out", o],
    ];
    for args in runs {
        fails_with(args, 2, &format!("output folder {o} is not writable"));
    }
    drop(read_only);
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn uci_table_refuses_the_flags_of_one_run() {
    for flag in [
        &["--dataset", "energy"][..],
        &["--sampler", "sgld"],
        &["--checkpoint-every", "10"],
        &["--save-samples"],
    ] {
        // No data: were the flag taken, the table would stop at once on the missing data.
        let mut args = vec!["uci", "--table", "--data-dir", "/nonexistent"];
        args.extend(flag);
        fails_with(&args, 2, &format!("cannot be used with '{}", flag[0]));
    }
}

#[test]
fn ladder_and_temperature_errors_name_the_real_problem() {
    let dir = tmp("ladder");
    let o = dir.join("run");
    let o = o.to_str().unwrap();
    let toy = |sampler: &str, chains: &str, set: &str, needle: &str| {
        let mut args = vec!["toy", "--sampler", sampler, "--chains", chains];
        if !set.is_empty() {
            args.extend(["--set", set]);
        }
        args.extend(["--iters", "100", "--out", o]);
        fails_with(&args, 2, needle);
    };
    // Was "`chains` = 1: replica exchange needs P >= 2" although two chains were asked for.
    toy(
        "resgld",
        "2",
        "replica.lrs=[0.1]",
        "replica.lrs has 1 values but there are 2 chains",
    );
    // Was "`temperatures` = 2: needs one temperature per learning rate".
    toy(
        "resgld",
        "2",
        "replica.lrs=[0.1, 0.1, 0.1]",
        "replica.lrs has 3 values but there are 2 chains",
    );
    toy(
        "deo-sgd",
        "4",
        "replica.lrs=[0.1]",
        "replica.lrs has 1 values but there are 4 chains",
    );
    toy(
        "resgld",
        "2",
        "replica.temperatures=[1.0, 2.0, 3.0]",
        "replica.temperatures has 3 values but there are 2 chains",
    );
    toy("resgld", "4", "", "give 4 temperatures for 4 chains");
    // Was "`temperatures` = 1: must be finite and > 0", naming the good value.
    toy(
        "resgld",
        "2",
        "replica.temperatures=[1.0, nan]",
        "`temperatures` = NaN",
    );
    toy(
        "resgld",
        "3",
        "replica.temperatures=[1.0, 3.0, 2.0]",
        "`temperatures` = 2: must increase",
    );
    toy(
        "resgld",
        "2",
        "replica.temperatures=[1.0, 1e300]",
        "`temperatures` = 1e300: must be finite, >= 0 and at most 1e10",
    );
    // Was accepted: a run of pure noise that exited 0 (or diverged, blaming the lr).
    for cmd in [
        &["toy"][..],
        &["toy", "--sampler", "csgld"],
        &["uci", "--data-dir", "/nonexistent"],
        &["mnist", "--data-dir", "/nonexistent"],
    ] {
        let mut args = cmd.to_vec();
        args.extend(["--temperature", "1e300", "--out", o]);
        fails_with(
            &args,
            2,
            "`temperature` = 1e300: must be finite, >= 0 and at most 1e10",
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Issue 32 items 8 and 9, one line each and exit 2 before any work: budgets beyond any run
/// (they ran until killed or overflowed), thread counts that hung, a partition that aborted in
/// the allocator, and samplers asked to run with fewer chains than they need.
#[test]
fn absurd_budgets_and_senseless_chain_counts_are_refused() {
    let dir = tmp("absurd");
    let o = dir.join("run");
    let o = o.to_str().unwrap();
    let max = "18446744073709551615";
    let cases: &[(&[&str], &str)] = &[
        (&["toy", "--iters", "9223372036854775808"], "beyond any run"),
        (&["demo", "--iters", max], "beyond any run"),
        (&["mnist", "--epochs", max], "beyond any run"),
        (&["mnist", "--checkpoint-every", max], "beyond any run"),
        (&["images", "--epochs", "1e300"], "beyond any run"),
        (&["digits", "--steps", max], "beyond any run"),
        (
            &["digits", "--threads", "5000"],
            "at most 1024 compute threads",
        ),
        (
            &[
                "toy",
                "--sampler",
                "csgld",
                "--set",
                "contour.bins=1000000000000",
            ],
            "at most 2^24",
        ),
        (
            &["toy", "--sampler", "icsgld", "--chains", "1"],
            "icsgld runs at least 2 chains",
        ),
        (
            &["uci", "--sampler", "icsgld", "--chains", "1"],
            "icsgld runs at least 2 chains",
        ),
        (
            &["uci", "--sampler", "resgld", "--chains", "1"],
            "resgld runs at least 2 chains",
        ),
        (
            &["mnist", "--sampler", "icsgld", "--chains", "1"],
            "icsgld runs at least 2 chains",
        ),
        (&["bandit", "--agents", "psgld,psgld"], "listed twice"),
        (&["bandit", "--seeds", "1000000000"], "at most 100000"),
    ];
    for (args, needle) in cases {
        let mut a = args.to_vec();
        a.extend(["--out", o]);
        fails_with(&a, 2, needle);
    }
    assert!(!dir.join("run").exists(), "a refused run left its folder");
    let _ = std::fs::remove_dir_all(dir);
}

/// A UCI `config.toml` is checked as the flags are (`--config` and `--resume` read one):
/// values the flags refuse, and keys no run reads, are refused in one line naming the file;
/// so are a `[data]` digest the recorded folder does not hold and a `dataset` that is not the
/// recorded folder's (before, both ran, the second under the other data set's name).
#[test]
fn a_uci_config_file_is_checked_as_the_flags_are() {
    let dir = tmp("uci-config");
    let data = dir.join("data");
    write_synthetic(&data, 200, 3, 1, 0.1, 1).unwrap();
    let first = dir.join("first");
    let out = sgmcmc(&common::cli::short_uci_run(
        data.to_str().unwrap(),
        first.to_str().unwrap(),
    ));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(first.join("config.toml")).unwrap();
    let config: toml::Table = text.parse().unwrap();
    let edits: &[(&[&str], toml::Value, &str)] = &[
        (&["seeds"], toml::Value::Integer(0), "seeds must lie in"),
        (
            &["run", "chains"],
            toml::Value::Integer(0),
            "chains must lie in",
        ),
        (
            &["run", "models"],
            toml::Value::Integer(0),
            "models must be >= 1",
        ),
        (
            &["run", "batch"],
            toml::Value::Integer(0),
            "batch and models",
        ),
        (
            &["run", "weight_decay"],
            toml::Value::Float(-1.0),
            "weight_decay must be finite",
        ),
        (
            &["run", "weight_decay"],
            toml::Value::Float(f64::NAN),
            "weight_decay must be finite",
        ),
        (
            &["run", "typo"],
            toml::Value::Integer(1),
            "unknown field `typo`",
        ),
        (&["typo"], toml::Value::Integer(1), "unknown field `typo`"),
        (
            &["data", "sha256"],
            toml::Value::String("0".repeat(64)),
            "its [data] records SHA-256 000000000000",
        ),
        (
            &["dataset"],
            toml::Value::String("yacht".into()),
            "dataset `yacht` but its data folder is",
        ),
    ];
    let path = dir.join("edited.toml");
    for (keys, value, needle) in edits {
        let mut c = config.clone();
        let mut table = &mut c;
        for k in &keys[..keys.len() - 1] {
            table = table[*k].as_table_mut().unwrap();
        }
        table.insert(keys[keys.len() - 1].to_string(), value.clone());
        std::fs::write(&path, toml::to_string(&c).unwrap()).unwrap();
        let o = dir.join("again");
        fails_with(
            &[
                "uci",
                "--config",
                path.to_str().unwrap(),
                "--out",
                o.to_str().unwrap(),
            ],
            2,
            needle,
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A run whose energy blows up to a large finite value (digits, SGHMC at lr 1: 3.3e3 -> 6e11
/// within five steps, then accuracy at chance) reported its metrics with exit 0; it now stops
/// naming the chain, the step and the blow-up, exit 1. The same run at its default lr finishes.
#[test]
fn a_blown_up_network_run_exits_1_naming_it() {
    let dir = tmp("blow-up");
    let data = dir.join("data");
    sgmcmc::data::digits::write_synthetic(&data.join("digits"), 1000, 3).unwrap();
    let run = |lr: &str, out: &str| {
        let o = dir.join(out);
        let mut args = vec!["digits", "--sampler", "sghmc", "--steps", "300"];
        args.extend(["--burn-in", "100", "--bma-every", "20"]);
        args.extend(["--data-dir", data.to_str().unwrap()]);
        args.extend(["--out", o.to_str().unwrap(), "--quiet"]);
        if !lr.is_empty() {
            args.extend(["--lr", lr]);
        }
        args.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let blown = run("1", "blown");
    let blown: Vec<&str> = blown.iter().map(String::as_str).collect();
    fails_with(&blown, 1, "blew up to over 1e6 times its start");
    let fine = run("", "fine");
    let fine: Vec<&str> = fine.iter().map(String::as_str).collect();
    common::cli::succeeds(&fine);
    let _ = std::fs::remove_dir_all(dir);
}

/// Values of config files that panicked inside burn or ran on (mnist `channels = [0, 32]`,
/// `hidden = 0`, `prior_precision = -1`; bandit `hidden = [0]`), and images' names that were
/// ignored or misnamed (`--protocol bogus` outside table rows, `--preset bogus` called a table
/// row): one line, exit 2, before any data is read.
#[test]
fn config_values_and_names_that_ran_or_panicked_are_refused() {
    let dir = tmp("config-values");
    let o = dir.join("run");
    let o = o.to_str().unwrap();
    let cases: &[(&str, &str, &str)] = &[
        (
            "mnist",
            "channels = [0, 32]\n",
            "channels and hidden must be >= 1",
        ),
        ("mnist", "hidden = 0\n", "channels and hidden must be >= 1"),
        (
            "mnist",
            "prior_precision = -1.0\n",
            "prior_precision must be finite",
        ),
        (
            "bandit",
            "hidden = [0]\n",
            "hidden layers must be >= 1 unit wide",
        ),
    ];
    for (command, text, needle) in cases {
        let file = dir.join(format!("{command}.toml"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(&file, text).unwrap();
        fails_with(
            &[
                command,
                "--config",
                file.to_str().unwrap(),
                "--data-dir",
                "/nonexistent",
                "--out",
                o,
            ],
            2,
            needle,
        );
    }
    fails_with(
        &["images", "--protocol", "bogus", "--out", o],
        2,
        "unknown protocol `bogus`",
    );
    fails_with(
        &[
            "images",
            "--preset",
            "bogus",
            "--sampler",
            "sghmc",
            "--out",
            o,
        ],
        2,
        "unknown preset `bogus`",
    );
    // vr-resgld runs its own periods and corrections: a file's would be recorded, not used.
    for (text, needle) in [
        (
            "period = 0\n",
            "`period` and `correction` in a config file are not read",
        ),
        ("correction = -1.0\n", "are not read"),
        ("lr = -1.0\n", "lr must be finite and > 0"),
    ] {
        let file = dir.join("vr.toml");
        std::fs::write(&file, text).unwrap();
        let args = ["vr-resgld", "--config", file.to_str().unwrap(), "--out", o];
        fails_with(&args, 2, needle);
    }
    // A mixture whose variance overflows is refused as such, not run into a "divergence".
    let file = dir.join("toy.toml");
    let mixture = "[target]\nkind = \"mixture\"\nweights = [1.0]\nmeans = [[0.0]]\nsd = [1e300]\n";
    std::fs::write(&file, mixture).unwrap();
    let args = ["toy", "--config", file.to_str().unwrap(), "--out", o];
    fails_with(&args, 2, "sd^2 and 1 / sd^2 finite");
    assert!(!dir.join("run").exists(), "a refused run left its folder");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_setting_the_sampler_does_not_read_is_refused_naming_it() {
    let dir = tmp("unread");
    let o = dir.join("run");
    let o = o.to_str().unwrap();
    // Before: sgld ran with the momentum, the contour table or the friction silently ignored.
    for set in ["momentum=0.5", "contour.zeta=2", "friction=0.2"] {
        let field = set.split(['=', '.']).next().unwrap();
        fails_with(
            &["toy", "--sampler", "sgld", "--set", set, "--out", o],
            2,
            &format!("sgld does not read `{field}`"),
        );
    }
    fails_with(
        &[
            "uci",
            "--sampler",
            "sghmc",
            "--set",
            "psgld_alpha=0.9",
            "--out",
            o,
        ],
        2,
        "sghmc does not read `psgld_alpha`",
    );
    fails_with(
        &["toy", "--sampler", "sgd", "--temperature", "2", "--out", o],
        2,
        "does not read the temperature",
    );
    fails_with(&["toy", "--set", "colour=1", "--out", o], 2, "colour");
    // Before: `--set` won over the flag without a word (toy ran at lr 0.02).
    for (command, flag, set) in [
        ("toy", "--lr=0.01", "lr=0.02"),
        ("toy", "--temperature=2", "temperature=3"),
        ("toy", "--sampler=sgld", "name=sghmc"),
        ("uci", "--lr=0.01", "lr=0.02"),
    ] {
        let field = set.split('=').next().unwrap();
        fails_with(
            &[command, flag, "--set", set, "--out", o],
            2,
            &format!("both set `{field}`"),
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}
