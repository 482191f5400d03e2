//! `sgmcmc bandit` on a synthetic mushroom file written by the test: the tiny preset writes
//! every file with the right shape, and bad settings or missing data are one-line errors.

mod common;

use std::path::Path;

use common::cli::{fails_with, succeeds, tmp};

/// 40 mushrooms: the first attribute says poisonous (`p`) or edible (`e`) for sure, the rest
/// vary with the row (one `?`).
fn write_mushrooms(data: &Path) {
    let dir = data.join("mushroom");
    std::fs::create_dir_all(&dir).unwrap();
    let rows: Vec<String> = (0..40)
        .map(|i| {
            let class = if i % 3 == 0 { "p" } else { "e" };
            let mut cells = vec![class.to_string(), class.to_string()];
            cells.extend((1..22).map(|c| {
                if i == 7 && c == 10 {
                    "?".to_string()
                } else {
                    ["a", "b", "c"][(i + c) % 3].to_string()
                }
            }));
            cells.join(",")
        })
        .collect();
    std::fs::write(dir.join("agaricus-lepiota.data"), rows.join("\n") + "\n").unwrap();
}

#[test]
fn tiny_preset_writes_every_file() {
    let base = tmp("bandit-tiny");
    let (data, out) = (base.join("data"), base.join("run"));
    write_mushrooms(&data);
    let (data, out) = (data.to_str().unwrap(), out.to_str().unwrap());
    let args = [
        "bandit",
        "--preset",
        "tiny",
        "--agents",
        "epsgreedy,picsgld",
        "--seeds",
        "2",
        "--data-dir",
        data,
        "--out",
        out,
        "--quiet",
    ];
    succeeds(&args);
    let out = Path::new(out);
    for f in sgmcmc::apps::bandit::FILES {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    // 8 steps x 2 agents x 2 seeds, after the header; cumulative regret never decreases.
    let csv = std::fs::read_to_string(out.join("regret.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 32);
    assert_eq!(
        csv.lines().next(),
        Some("step,agent,seed,cumulative_regret")
    );
    for w in rows.windows(2).filter(|w| w[0][1..3] == w[1][1..3]) {
        let (a, b): (f64, f64) = (w[0][3].parse().unwrap(), w[1][3].parse().unwrap());
        assert!(b >= a, "{w:?}");
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let agents = summary["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 2);
    assert_eq!(agents[1]["agent"], "picsgld");
    assert_eq!(agents[1]["seeds"], 2);
    // Per seed, the 4 chains' energies at the end of bandit steps 5..=8 of 8.
    let diagnostics = agents[1]["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 2);
    for d in diagnostics {
        assert_eq!(
            (d["chains"].as_u64(), d["draws"].as_u64()),
            (Some(4), Some(4)),
            "{d}"
        );
        assert!(
            d["quantities"]["energy"]["rhat"].as_f64().unwrap() >= 1.0 - 1e-12,
            "{d}"
        );
    }
    // A second run into the same folder needs --force.
    fails_with(&args, 2, "not empty");
    let mut forced = args.to_vec();
    forced.push("--force");
    succeeds(&forced);
}

/// The Dropout agent on the tiny preset writes every file; its masks (training and acting)
/// come from the seed's streams, so a second run gives the same curves to the byte; its
/// `config.toml` holds the dropout settings, and without them the agent is ConstSGD (the same
/// curves as `constsgd`'s, which the masks change).
#[test]
fn tiny_preset_runs_the_dropout_agent() {
    let base = tmp("bandit-dropout");
    let data = base.join("data");
    write_mushrooms(&data);
    let data = data.to_str().unwrap();
    let run = |name: &str, extra: &[&str]| {
        let out = base.join(name);
        let out = out.to_str().unwrap();
        let mut args = vec!["bandit", "--data-dir", data, "--out", out, "--quiet"];
        args.extend_from_slice(extra);
        succeeds(&args);
        for f in sgmcmc::apps::bandit::FILES {
            assert!(Path::new(out).join(f).is_file(), "{name}: {f} missing");
        }
        let csv = std::fs::read_to_string(Path::new(out).join("regret.csv")).unwrap();
        // The curves without the agent's name.
        let curves: Vec<String> = csv
            .lines()
            .skip(1)
            .map(|l| {
                l.split(',')
                    .enumerate()
                    .filter(|c| c.0 != 1)
                    .map(|c| c.1)
                    .collect()
            })
            .collect();
        (csv, curves)
    };
    let tiny = ["--preset", "tiny", "--seeds", "2", "--agents"];
    let (csv, dropout) = run("first", &[&tiny[..], &["dropout"]].concat());
    assert_eq!(csv.lines().count(), 1 + 8 * 2);
    assert!(
        csv.lines()
            .skip(1)
            .all(|l| l.split(',').nth(1) == Some("dropout"))
    );
    assert_eq!(run("again", &[&tiny[..], &["dropout"]].concat()).0, csv);
    let config = base.join("first/config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let table = "[agents.dropout]\nrate = 0.5\nsamples = 5\nlayers = \"last\"\n";
    assert!(text.contains(table), "{text}");
    let (_, constsgd) = run("constsgd", &[&tiny[..], &["constsgd"]].concat());
    assert_ne!(dropout, constsgd, "the masks changed no action");
    let plain = base.join("plain.toml");
    std::fs::write(&plain, text.replace(table, "")).unwrap();
    let (_, without) = run("plain", &["--config", plain.to_str().unwrap()]);
    assert_eq!(without, constsgd);
    // A rate of 1 would drop every unit: a one-line usage error.
    let all = base.join("all.toml");
    std::fs::write(&all, text.replace("rate = 0.5", "rate = 1.0")).unwrap();
    let out = base.join("refused");
    fails_with(
        &[
            "bandit",
            "--config",
            all.to_str().unwrap(),
            "--data-dir",
            data,
            "--out",
            out.to_str().unwrap(),
        ],
        2,
        "agent dropout: invalid target parameter `dropout rate` = 1: must be in [0, 1)",
    );
}

/// A run's `config.toml` repeats it (`--config`): the same regret curves to the byte, and
/// an edited file (an agent's epsilon) gives other curves; `--seeds` may stand beside it,
/// `--agents` may not. `psgld-ts` is `psgld` acting by Thompson sampling: its config differs
/// in `acting` alone, and without that line it runs `psgld`'s curves.
#[test]
fn a_run_repeats_from_its_config_toml() {
    let base = tmp("bandit-config");
    let data = base.join("data");
    write_mushrooms(&data);
    let data = data.to_str().unwrap();
    let run = |out: &str, extra: &[&str]| {
        let mut args = vec!["bandit", "--data-dir", data, "--out", out, "--quiet"];
        args.extend_from_slice(extra);
        succeeds(&args);
        std::fs::read_to_string(Path::new(out).join("regret.csv")).unwrap()
    };
    let first = base.join("first");
    let first = first.to_str().unwrap();
    let csv = run(
        first,
        &[
            "--preset",
            "tiny",
            "--agents",
            "constsgd,psgld,psgld-ts",
            "--seeds",
            "2",
        ],
    );
    let written = Path::new(first).join("config.toml");
    let rows_of = |csv: &str, agent: &str| -> Vec<String> {
        csv.lines()
            .filter(|l| l.split(',').nth(1) == Some(agent))
            .map(|l| l.replace(agent, "_"))
            .collect()
    };
    assert_ne!(
        rows_of(&csv, "psgld"),
        rows_of(&csv, "psgld-ts"),
        "the Thompson draws changed no action"
    );
    let text = std::fs::read_to_string(&written).unwrap();
    assert_eq!(text.matches("acting = \"thompson\"").count(), 1, "{text}");
    let mean = base.join("mean.toml");
    std::fs::write(&mean, text.replace("acting = \"thompson\"\n", "")).unwrap();
    let by_mean = run(
        base.join("mean").to_str().unwrap(),
        &["--config", mean.to_str().unwrap()],
    );
    assert_eq!(rows_of(&by_mean, "psgld-ts"), rows_of(&csv, "psgld"));
    let again = base.join("again");
    let again = again.to_str().unwrap();
    assert_eq!(run(again, &["--config", written.to_str().unwrap()]), csv);
    // One seed of the same run: the first seed's rows of the first run.
    let one = base.join("one");
    let one = one.to_str().unwrap();
    let seed_one: String = csv
        .lines()
        .filter(|l| matches!(l.split(',').nth(2), Some("1" | "seed")))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        run(
            one,
            &["--config", written.to_str().unwrap(), "--seeds", "1"]
        ),
        seed_one
    );
    // A config that makes the first agent explore half the time gives other curves.
    let text = std::fs::read_to_string(&written).unwrap();
    let faster = text.replacen("epsilon = 0.0", "epsilon = 0.5", 1);
    assert_ne!(faster, text, "the written config holds the agents' epsilon");
    let edited = base.join("edited.toml");
    std::fs::write(&edited, faster).unwrap();
    let other = base.join("other");
    let other = other.to_str().unwrap();
    assert_ne!(run(other, &["--config", edited.to_str().unwrap()]), csv);
    fails_with(
        &[
            "bandit",
            "--config",
            written.to_str().unwrap(),
            "--agents",
            "psgld",
            "--out",
            base.join("refused").to_str().unwrap(),
        ],
        2,
        "--agents would change it",
    );
}

#[test]
fn bad_settings_and_missing_data_are_one_line_errors() {
    let base = tmp("bandit-bad");
    let data = base.join("data");
    write_mushrooms(&data);
    let (data, out) = (data.to_str().unwrap(), base.join("run"));
    let out = out.to_str().unwrap();
    let fails = |extra: &[&str], data: &str, needle: &str| {
        let mut args = vec!["bandit", "--data-dir", data, "--out", out];
        args.extend_from_slice(extra);
        fails_with(&args, 2, needle);
    };
    fails(
        &["--preset", "tiny", "--agents", "bogus"],
        data,
        "unknown bandit agent `bogus`",
    );
    fails(&["--preset", "huge"], data, "unknown bandit preset `huge`");
    fails(
        &["--preset", "tiny", "--seeds", "0"],
        data,
        "seeds must be positive",
    );
    fails(
        &["--preset", "tiny"],
        "/nonexistent-sgmcmc-data",
        "agaricus-lepiota.data",
    );
}

/// On the real mushrooms (when `$SGMCMC_DATA_DIR` or `../shared/datasets` holds them), a
/// quick preset cut to its first 150 bandit steps (of 500; the curves separate by step 100 and
/// the 512 random initial pulls end at step 26): pSGLD x P4 acting on its chains (Thompson sampling)
/// ends with a lower cumulative regret than EpsGreedy. The gap must exceed 3 standard errors
/// of the difference of the two means over 4 seeds (each mean's se is the seeds' standard
/// deviation / 2); an agent no better than EpsGreedy fails this with probability < 0.2%.
#[test]
fn thompson_psgld_beats_eps_greedy() {
    use sgmcmc::apps::bandit::config::BanditConfig;
    use sgmcmc::apps::bandit::report::mean_se;
    use sgmcmc::apps::bandit::run::run_agent;

    let root = std::env::var_os("SGMCMC_DATA_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/datasets"),
        std::path::PathBuf::from,
    );
    let file = root.join("mushroom/agaricus-lepiota.data");
    if !file.is_file() {
        eprintln!("skipped: no {}", file.display());
        return;
    }
    let data = sgmcmc::data::Mushrooms::load(&file).unwrap();
    let names = ["epsgreedy".to_string(), "psgld".to_string()];
    let mut config = BanditConfig::preset("quick", &names, 4).unwrap();
    config.steps = 150;
    let device = sgmcmc::burn::tensor::Device::flex();
    let finals: Vec<Vec<f64>> = config
        .agents
        .iter()
        .map(|agent| {
            (1..=config.seeds)
                .map(|seed| {
                    *run_agent(&config, agent, &data, seed, &device)
                        .unwrap()
                        .0
                        .last()
                        .unwrap()
                })
                .collect()
        })
        .collect();
    let (eps, eps_se) = mean_se(&finals[0]);
    let (sgld, sgld_se) = mean_se(&finals[1]);
    let se = eps_se.hypot(sgld_se);
    eprintln!("EpsGreedy {eps:.0} +- {eps_se:.0}, pSGLD {sgld:.0} +- {sgld_se:.0}: {finals:?}");
    assert!(
        eps - sgld > 3.0 * se,
        "EpsGreedy {eps:.0} +- {eps_se:.0}, pSGLD {sgld:.0} +- {sgld_se:.0}: {finals:?}"
    );
}
