//! A network run killed with SIGKILL after a checkpoint and resumed gives the bits of the
//! uninterrupted run (`sgmcmc uci` on an MLP: sgld, icsgld x 2, resgld x 2, deo-sgd x 4), and
//! `sgmcmc predict` on the saved posterior gives the run's own model average.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::cli::{succeeds, tmp};
use sgmcmc::apps::uci::protocol::uci_mlp;
use sgmcmc::burn::tensor::Device;
use sgmcmc::data::UciDataset;
use sgmcmc::data::uci::write_synthetic;
use sgmcmc::engine::SavedPosterior;
use sgmcmc::samplers::checkpoint::TensorState;
use sgmcmc::samplers::ensemble::module_values;

fn uci_args<'a>(
    data: &'a str,
    sampler: &'a str,
    chains: &'a str,
    epochs: &'a str,
    out: &'a str,
) -> Vec<&'a str> {
    vec![
        "uci",
        "--dataset",
        data,
        "--sampler",
        sampler,
        "--chains",
        chains,
        "--seeds",
        "1",
        "--epochs",
        epochs,
        "--jobs",
        "1",
        "--checkpoint-every",
        "1400",
        "--save-samples",
        "--out",
        out,
    ]
}

/// `result.json` without its wall time.
fn result(dir: &Path) -> serde_json::Value {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("seed-0/result.json")).unwrap())
            .unwrap();
    v.as_object_mut().unwrap().remove("wall_seconds");
    v
}

/// Every saved sample's parameter values, in index order (records carry the process's random
/// parameter ids, so their bytes differ between processes; their values must not).
fn samples(dir: &Path, inputs: usize) -> (String, Vec<Vec<TensorState>>) {
    let index = std::fs::read_to_string(dir.join("index.csv")).unwrap();
    let saved = SavedPosterior::open(dir).unwrap();
    let device = Device::flex();
    let template = uci_mlp(inputs).init(&device);
    let values = (0..saved.len())
        .map(|i| module_values(&saved.load(i, &template).unwrap()).unwrap())
        .collect();
    (index, values)
}

#[test]
fn a_killed_network_run_resumes_to_the_bits_of_an_uninterrupted_one() {
    let root = tmp("kill");
    let data = root.join("data");
    write_synthetic(&data, 400, 4, 1, 0.1, 3).unwrap();
    let data = data.to_str().unwrap();
    // 360 training rows: 7 steps per epoch; about 2-4 s per run here, checkpoints every 1400.
    for (sampler, chains, epochs) in [
        ("sgld", "1", "3000"),
        ("icsgld", "2", "1500"),
        ("resgld", "2", "1500"),
        ("deo-sgd", "4", "800"),
    ] {
        let whole = root.join(format!("{sampler}-whole"));
        let parts = root.join(format!("{sampler}-parts"));
        succeeds(&uci_args(
            data,
            sampler,
            chains,
            epochs,
            whole.to_str().unwrap(),
        ));
        let mut child = Command::new(env!("CARGO_BIN_EXE_sgmcmc"))
            .args(uci_args(
                data,
                sampler,
                chains,
                epochs,
                parts.to_str().unwrap(),
            ))
            .spawn()
            .unwrap();
        let ckpt = parts.join("seed-0/checkpoint.cbor");
        let start = Instant::now();
        while !ckpt.exists() {
            assert!(start.elapsed() < Duration::from_secs(120), "no checkpoint");
            std::thread::sleep(Duration::from_millis(2));
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        assert!(
            !parts.join("seed-0/result.json").exists(),
            "{sampler}: the run ended before it was killed; make it longer"
        );
        succeeds(&["uci", "--resume", parts.to_str().unwrap(), "--jobs", "1"]);
        assert_eq!(result(&whole), result(&parts), "{sampler}: result");
        let (a, b) = (
            samples(&whole.join("seed-0/samples"), 4),
            samples(&parts.join("seed-0/samples"), 4),
        );
        assert!(!a.1.is_empty());
        assert!(a == b, "{sampler}: saved samples differ");
        assert!(
            std::fs::read(whole.join("seed-0/checkpoint.cbor")).unwrap()
                == std::fs::read(ckpt).unwrap(),
            "{sampler}: final checkpoints differ"
        );
    }
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn predict_on_a_saved_posterior_equals_the_runs_model_average() {
    let root = tmp("predict");
    let data = root.join("data");
    write_synthetic(&data, 300, 3, 1, 0.1, 5).unwrap();
    let out = root.join("run");
    succeeds(&[
        "uci",
        "--dataset",
        data.to_str().unwrap(),
        "--sampler",
        "icsgld",
        "--chains",
        "2",
        "--seeds",
        "1",
        "--epochs",
        "200",
        "--jobs",
        "1",
        "--save-samples",
        "--out",
        out.to_str().unwrap(),
    ]);
    // The seed's draws are an ArviZ store beside its samples: `lp` by (chain, draw), as many
    // draws as the summary's diagnostics count.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let d = &summary["cells"][0]["runs"][0]["diagnostics"];
    let lp: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("seed-0/trace.zarr/sample_stats/lp/.zarray")).unwrap(),
    )
    .unwrap();
    assert_eq!(lp["shape"], serde_json::json!([2, d["draws"]]), "{d}");
    let set = UciDataset::load(&data).unwrap();
    let rows: String = set.splits[0]
        .test
        .iter()
        .map(|&i| {
            let cells: Vec<String> = set.x[i].iter().map(|v| format!("{v:?}")).collect();
            cells.join(",") + "\n"
        })
        .collect();
    let inputs = root.join("inputs.csv");
    std::fs::write(&inputs, format!("x0,x1,x2\n{rows}")).unwrap();
    let preds = root.join("preds.csv");
    succeeds(&[
        "predict",
        "--run",
        out.join("seed-0").to_str().unwrap(),
        "--data",
        inputs.to_str().unwrap(),
        "--out",
        preds.to_str().unwrap(),
    ]);
    let got: Vec<f64> = std::fs::read_to_string(&preds)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.parse().unwrap())
        .collect();
    let own = result(&out)["predictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect::<Vec<_>>();
    assert_eq!(got.len(), own.len());
    assert!(!got.is_empty());
    let worst = got
        .iter()
        .zip(&own)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    println!(
        "predict vs the run's average: {} rows, largest difference {worst:e}",
        got.len()
    );
    assert!(worst <= 1e-6, "{worst}");
    // Inputs the network cannot compute on, or that are not numbers, are refused in one line
    // naming the row and column (they wrote NaN predictions with exit 0, or said "expected 3
    // finite numbers, got 3").
    let run = out.join("seed-0");
    for (row, code, needle) in [
        ("1e308,0,0", 2, "row 1, column 1: 1e308 is"),
        ("0,NaN,0", 2, ":2: column 2 is NaN, not a finite number"),
        ("0,0", 2, ":2: expected 3 numbers, got 2"),
    ] {
        std::fs::write(&inputs, format!("x0,x1,x2\n{row}\n")).unwrap();
        common::cli::fails_with(
            &[
                "predict",
                "--run",
                run.to_str().unwrap(),
                "--data",
                inputs.to_str().unwrap(),
                "--out",
                preds.to_str().unwrap(),
            ],
            code,
            needle,
        );
    }
    let _ = std::fs::remove_dir_all(root);
}
