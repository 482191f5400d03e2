//! The run-control flags the commands share (`sgmcmc_apps::run_flags`): one declaration each,
//! so a flag reads the same in every command's `--help`, with the same value names and
//! defaults, except in the commands that declare their own on purpose.

use std::collections::BTreeMap;

use clap::CommandFactory;
use sgmcmc::apps::cli::Cli;

/// What `--help` says of the flag `id` in each `sgmcmc` command that takes it (the benchmark
/// harness, a command of its own crate, included): its help, long help, value names and
/// defaults.
fn reading(id: &str) -> BTreeMap<String, String> {
    Cli::command()
        .subcommand(sgmcmc_bench::command().command)
        .get_subcommands()
        .filter_map(|c| {
            let a = c.get_arguments().find(|a| a.get_id() == id)?;
            let text = format!(
                "{:?} {:?} {:?} {:?}",
                a.get_help().map(ToString::to_string),
                a.get_long_help().map(ToString::to_string),
                a.get_value_names(),
                a.get_default_values()
            );
            Some((c.get_name().to_string(), text))
        })
        .collect()
}

#[test]
fn a_shared_flag_reads_the_same_in_every_command_but_the_named_ones() {
    let runs = ["demo", "toy", "uci", "mnist", "images", "digits", "bandit"];
    let with = |more: &[&'static str]| [&runs[..], more].concat();
    // (flag, the commands that must take it, the commands that declare their own)
    let shared: [(&str, Vec<&str>, &[&str]); 9] = [
        ("out", runs.to_vec(), &["vr-resgld", "predict", "bench"]),
        ("force", with(&["vr-resgld", "bench"]), &[]),
        ("quiet", runs.to_vec(), &[]),
        ("device", with(&["predict", "bench"]), &[]),
        (
            "data_dir",
            vec!["uci", "mnist", "images", "digits", "bandit"],
            &[],
        ),
        (
            "config",
            vec!["toy", "mnist", "images", "digits"],
            &["uci", "bandit", "vr-resgld"],
        ),
        (
            "seed",
            vec!["toy", "mnist", "images", "digits"],
            &["demo", "vr-resgld"],
        ),
        ("resume", vec!["toy", "uci", "mnist", "images"], &[]),
        (
            "distributed",
            vec!["toy", "uci", "mnist", "images"],
            &["bench"],
        ),
    ];
    for (id, takes, own) in shared {
        let reading = reading(id);
        for c in &takes {
            assert!(reading.contains_key(*c), "`sgmcmc {c}` has no --{id}");
        }
        let first = &reading[takes[0]];
        assert!(!first.starts_with("None"), "--{id} has no help");
        for (c, text) in &reading {
            if !own.contains(&c.as_str()) {
                assert_eq!(text, first, "--{id} of `sgmcmc {c}` reads differently");
            }
        }
    }
}
