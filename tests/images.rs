//! `sgmcmc images` on the tiny synthetic image set (3x12x12, 10 classes, one bright row per
//! class): the ResNet pipeline learns on flex, runs and reports on every device (wgpu through
//! lavapipe in CI), a run stopped and resumed from its checkpoint equals the uninterrupted run
//! bit for bit, and bad input is one clear line.

mod common;

use std::path::Path;

use common::cli::{dir_in, fails_with, predict_classes, sgmcmc, succeeds, tmp};
use sgmcmc::apps::images::Images;
use sgmcmc::apps::images::config::ImagesConfig;
use sgmcmc::apps::images::data::ImagesData;
use sgmcmc::apps::images::run::{Record, read_checkpoint};
use sgmcmc::engine::experiment::{RunData, execute};
use sgmcmc::engine::{DeviceChoice, Length};

/// One run at a time: burn-flex reduces on the shared rayon pool, where a concurrent test can
/// change the summation order (see `tests/mnist.rs`).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A short run of `sampler` on the synthetic set (64 training images, batch 16: 4 steps per
/// epoch), evaluated every epoch, models collected from the second half on.
fn small(sampler: &str, epochs: f64) -> ImagesConfig {
    let mut c = ImagesConfig::preset("cpu", "synthetic", "resnet20", sampler).unwrap();
    c.batch = 16;
    c.epochs = epochs;
    c.eval_every = 1.0;
    c.burn_epochs = epochs / 2.0;
    c.checkpoint_every = 1.0;
    // The papers' weight decay 25 is a prior for N = 50,000; on 64 images it would swamp the
    // likelihood. The same per-image decay (25 / 50,000) at N = 64:
    c.weight_decay = 25.0 * 64.0 / 50_000.0;
    c.cycles = 2;
    // Cycles of 4 steps here (positions 0, 0.25, 0.5, 0.75): collect from 0.7 so that each
    // cycle has an iterate to fit (the presets' 0.85 would leave none).
    c.cycle_sampling = 0.7;
    c.swag_per_epoch = 4;
    c.bn_batches = 2;
    // Contour partition over the synthetic energies (64 images x ln 10 = 147 at the start,
    // plus the prior's 0.016 |theta|^2, about 30).
    c.u_min = 0.0;
    c.du = 10.0;
    c.bins = 40;
    c.zeta = 2.0;
    c.validate().unwrap();
    c
}

/// A whole quiet run of `config` on flex into `dir`.
fn on_flex(config: &ImagesConfig, data: &ImagesData, dir: &Path) -> Record {
    execute::<Images>(config, data, dir, DeviceChoice::Flex, None, None, true).unwrap()
}

#[test]
fn the_resnet_pipeline_learns_the_synthetic_classes() {
    let _serial = serial();
    let root = tmp("images-learn");
    // lr 0.1 on the mean loss, as the papers; 30 epochs = 120 steps.
    let mut config = small("msgd", 30.0);
    config.save_samples = true;
    let data = ImagesData::load(&root, &config).unwrap();
    let dir = dir_in(&root, "msgd");
    let record = on_flex(&config, &data, &dir);
    let last = record.evals.last().unwrap();
    // 32 test images of 10 classes: chance is 0.1 (3 right); the class row is 160 brighter than
    // the noise (0-63), so a network that learns gets nearly all of them.
    let bma = last.bma.unwrap();
    assert!(bma.accuracy >= 0.9, "model average {bma:?}");
    assert!(last.chains[0].accuracy >= 0.9, "{:?}", last.chains);
    assert_eq!(record.steps_done, 120);
    // Evaluations at the end of every epoch and at the last step; from step 60 on (epoch 15)
    // their networks join the average: steps 60, 64, .., 116 and 119.
    assert_eq!(last.models, 16);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert!(summary["bma"]["accuracy"].as_f64().unwrap() >= 0.9);
    assert!(summary["steps_per_second"].as_f64().unwrap() > 0.0);
    for f in sgmcmc::apps::images::FILES {
        assert!(dir.join(f).exists(), "{f} missing");
    }
    predict_gives_the_runs_average(&root, &dir, &data, &summary);
}

/// `sgmcmc predict` on the run's saved networks and its test images (an IDX file, labels one
/// per line) gives the run's model average: the same metrics to the last bits, since it loads
/// the same networks and sums in the same order.
fn predict_gives_the_runs_average(
    root: &Path,
    dir: &Path,
    data: &ImagesData,
    summary: &serde_json::Value,
) {
    let test = &data.test;
    let images = root.join("test-images.idx");
    let dims = [test.len(), test.channels, test.rows, test.cols];
    sgmcmc::data::idx::write_idx(&images, &dims, &test.pixels, false).unwrap();
    let labels = root.join("test-labels.txt");
    let text: String = test.labels.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&labels, text).unwrap();
    let out = root.join("predicted/predictions.csv");
    let (metrics, rows) = predict_classes(dir, &images, &labels, &out);
    for m in ["accuracy", "nll", "brier_permille", "ece_percent"] {
        assert_eq!(metrics[m], summary["bma"][m], "{m}");
    }
    let rows: Vec<Vec<f64>> = rows
        .iter()
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), test.len());
    for r in &rows {
        // p_0..p_9, class, entropy, mutual information (between 0 and the entropy).
        assert!((r[..10].iter().sum::<f64>() - 1.0).abs() < 1e-5, "{r:?}");
        assert!(r[12] >= -1e-9 && r[12] <= r[11] + 1e-9, "{r:?}");
    }
    // A label outside the run's classes is refused in one line.
    std::fs::write(&labels, "10\n".repeat(test.len())).unwrap();
    let path = |p: &Path| p.to_str().unwrap().to_string();
    let (dir, images, labels) = (path(dir), path(&images), path(&labels));
    let args = [
        "predict", "--run", &dir, "--data", &images, "--labels", &labels,
    ];
    fails_with(&args, 2, "not one of the run's 10 classes");
}

/// Every sampler family of the tables, a few steps on every compiled device: the outputs are
/// written and finite (ndarray and wgpu, through lavapipe here, run one epoch of two samplers).
#[test]
fn every_sampler_family_runs_on_every_device() {
    let _serial = serial();
    let root = tmp("images-devices");
    for (choice, _device, _) in common::devices() {
        // Every family on flex; two (a plain and a coupled sampler) on the slower ndarray
        // convolutions and on wgpu through lavapipe.
        let samplers: &[&str] = if choice != DeviceChoice::Flex {
            &["sghmc", "icsghmc"]
        } else {
            &[
                "sa-sghmc",
                "cycswag",
                "resghmc",
                "vr-resghmc",
                "cvr-resghmc",
                "deo-sgd",
                "icsghmc",
                "csghmc",
            ]
        };
        for sampler in samplers {
            let mut config = small(sampler, 2.0);
            if choice != DeviceChoice::Flex {
                config.epochs = 1.0;
                config.burn_epochs = 0.5;
                config.chains = config.chains.min(2);
            }
            let data = ImagesData::load(&root, &config).unwrap();
            let dir = dir_in(&root, &format!("{choice}-{sampler}"));
            let record = execute::<Images>(&config, &data, &dir, choice, None, None, true)
                .unwrap_or_else(|e| panic!("{choice} {sampler}: {e}"));
            let s: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap())
                    .unwrap();
            let nll = s["bma"]["nll"].as_f64().unwrap();
            assert!(nll.is_finite() && nll > 0.0, "{choice} {sampler}: {s}");
            assert!(s["bma_models"].as_u64().unwrap() >= 1, "{choice} {sampler}");
            // The gradient multiplier: exactly 1 for SGHMC, a finite range for the contour
            // samplers (the run's own theta).
            let range: Vec<f64> = serde_json::from_value(s["multiplier_range"].clone()).unwrap();
            match *sampler {
                "sghmc" => assert_eq!(range, [1.0, 1.0]),
                "icsghmc" | "csghmc" => assert!(range[0] <= range[1] && range[1].is_finite()),
                _ => {}
            }
            // The trace holds the averaged networks (cycSWAG averages its own draws).
            let d = &s["diagnostics"];
            if *sampler != "cycswag" {
                assert_eq!(
                    d["chains"].as_u64().unwrap() * d["draws"].as_u64().unwrap(),
                    s["bma_models"].as_u64().unwrap(),
                    "{choice} {sampler}: {s}"
                );
            }
            assert_eq!(s["device"], choice.to_string());
            assert!(record.energies.iter().flatten().all(|e| e.is_finite()));
        }
    }
}

#[test]
fn a_resumed_run_equals_the_uninterrupted_run_bit_for_bit() {
    let _serial = serial();
    let root = tmp("images-resume");
    // Contour theta and shared streams (icsghmc), a SWAG fit across the stop (cycswag), rungs,
    // control-variate snapshots and the swap variance from fresh minibatches (cvr-resghmc).
    for sampler in ["icsghmc", "cycswag", "cvr-resghmc"] {
        let config = small(sampler, 4.0);
        let data = ImagesData::load(&root, &config).unwrap();
        let whole = dir_in(&root, &format!("{sampler}-whole"));
        let parts = dir_in(&root, &format!("{sampler}-parts"));
        let flex = DeviceChoice::Flex;
        let a = execute::<Images>(&config, &data, &whole, flex, None, None, true).unwrap();
        let stop = Some(Length::Steps(7));
        let half = execute::<Images>(&config, &data, &parts, flex, None, stop, true).unwrap();
        assert_eq!(half.steps_done, 7);
        let (_, c) = read_checkpoint(&parts).unwrap();
        let b = execute::<Images>(&config, &data, &parts, flex, Some(c), None, true).unwrap();
        assert_eq!(a.energies, b.energies, "{sampler}: energies");
        assert_eq!(a.evals, b.evals, "{sampler}: evaluations");
        assert_eq!(a.averages, b.averages, "{sampler}: model averages");
        // cycSWAG's fits cross the stop: their draws are in the averages and the last sample.
        assert_eq!(a.last_sample, b.last_sample, "{sampler}: last sample");
        let (ca, cb) = (
            read_checkpoint(&whole).unwrap().1,
            read_checkpoint(&parts).unwrap().1,
        );
        assert_eq!(
            ca.sampler, cb.sampler,
            "{sampler}: final parameters and state"
        );
    }
}

/// Batches prepared ahead on a background thread (`prefetch`, default 2) are the batches the
/// step would have made itself: the same run, bit for bit, with and without them.
#[test]
fn prefetched_batches_give_the_plain_run_bit_for_bit() {
    let _serial = serial();
    let root = tmp("images-prefetch");
    // A plain sampler and one that also draws fresh minibatches and full passes itself.
    for sampler in ["sghmc", "cvr-resghmc"] {
        let mut config = small(sampler, 2.0);
        let data = ImagesData::load(&root, &config).unwrap();
        let mut runs = Vec::new();
        for depth in [0, 1, 3] {
            config.prefetch = depth;
            let dir = dir_in(&root, &format!("{sampler}-{depth}"));
            runs.push(on_flex(&config, &data, &dir));
        }
        for r in &runs[1..] {
            assert_eq!(runs[0].energies, r.energies, "{sampler}: energies");
            assert_eq!(runs[0].evals, r.evals, "{sampler}: evaluations");
            assert_eq!(runs[0].averages, r.averages, "{sampler}: model averages");
        }
    }
    let mut bad = small("sghmc", 1.0);
    bad.prefetch = 65;
    assert!(bad.validate().is_err());
}

#[test]
fn the_command_line_runs_resumes_and_refuses_bad_input() {
    let _serial = serial();
    let root = tmp("images-cli");
    let out = root.join("run");
    let out = out.to_str().unwrap();
    let base = [
        "images",
        "--dataset",
        "synthetic",
        "--sampler",
        "sghmc",
        "--batch",
        "16",
        "--epochs",
        "2",
        "--eval-every",
        "1",
        "--burn-epochs",
        "1",
        "--checkpoint-every",
        "1",
        "--quiet",
        "--out",
        out,
    ];
    let mut first = base.to_vec();
    first.extend(["--stop-after", "3"]);
    succeeds(&first);
    assert!(!Path::new(out).join("summary.json").exists());
    succeeds(&["images", "--resume", out, "--quiet"]);
    assert!(Path::new(out).join("summary.json").exists());
    // The folder holds a run now.
    fails_with(&base, 2, "--force");
    let listed = sgmcmc(&["images", "--list"]);
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(text.contains("t61-icsghmc-p4-resnet20-c100") && text.contains("cycswag"));

    let fresh = root.join("fresh");
    let fresh = fresh.to_str().unwrap();
    let empty = root.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let empty = empty.to_str().unwrap();
    fails_with(
        &["images", "--sampler", "nope", "--out", fresh],
        2,
        "unknown sampler `nope`",
    );
    fails_with(
        &["images", "--dataset", "nope", "--out", fresh],
        2,
        "unknown dataset",
    );
    fails_with(
        &[
            "images",
            "--model",
            "resnet21",
            "--dataset",
            "synthetic",
            "--out",
            fresh,
        ],
        2,
        "resnet21",
    );
    fails_with(
        &[
            "images",
            "--dataset",
            "synthetic",
            "--epochs=-1",
            "--out",
            fresh,
        ],
        2,
        "epochs",
    );
    fails_with(
        &[
            "images",
            "--dataset",
            "synthetic",
            "--batch",
            "1000",
            "--out",
            fresh,
        ],
        2,
        "batch",
    );
    fails_with(
        &[
            "images",
            "--preset",
            "t61-icsghmc-p4-resnet20-c100",
            "--sampler",
            "sghmc",
            "--out",
            fresh,
        ],
        2,
        "table row",
    );
    fails_with(
        &["images", "--preset", "t61-nope", "--out", fresh],
        2,
        "unknown preset",
    );
    // With no data, the error names the folder `sgmcmc data fetch` writes; a CIFAR folder
    // unpacked in the data folder itself is read there, and its own errors named.
    let cifar = |dir: &str, needle: &str| {
        let args = [
            "images",
            "--dataset",
            "cifar10",
            "--data-dir",
            dir,
            "--out",
            fresh,
        ];
        fails_with(&args, 2, needle);
    };
    cifar(
        empty,
        &format!("cifar10: missing file {empty}/cifar10/data_batch_1.bin"),
    );
    let flat = root.join("flat");
    std::fs::create_dir_all(&flat).unwrap();
    std::fs::write(flat.join("data_batch_2.bin"), b"short").unwrap();
    let flat = flat.to_str().unwrap();
    cifar(flat, &format!("missing file {flat}/data_batch_1.bin"));
    std::fs::write(Path::new(flat).join("data_batch_1.bin"), b"short").unwrap();
    cifar(flat, &format!("{flat}/data_batch_1.bin: 5 bytes"));
    fails_with(&["images", "--resume", empty], 2, "checkpoint");
}
