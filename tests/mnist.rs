//! `sgmcmc mnist` on a tiny synthetic image set in the MNIST layout: the CNN posterior sampler
//! learns on every device, and a run stopped and resumed from its checkpoint equals the
//! uninterrupted run bit for bit.

mod common;

use std::path::{Path, PathBuf};

use common::cli::{fails_with, predict_classes};

use sgmcmc::apps::mnist::Mnist;
use sgmcmc::apps::mnist::config::MnistConfig;
use sgmcmc::apps::mnist::data::MnistData;
use sgmcmc::apps::mnist::run::read_checkpoint;
use sgmcmc::data::mnist::write_synthetic;
use sgmcmc::engine::experiment::{RunData, execute};
use sgmcmc::engine::{DeviceChoice, Length};

/// The tests of this binary run one at a time: burn-flex reduces on the shared rayon pool, and
/// rayon splits work adaptively, so a concurrent test can change the summation order (seen once
/// in ~10 full-suite runs as a last-bit difference). Alone, a run is bit-reproducible.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A fresh scratch folder for `name` (removed when the test process exits).
fn tmp(name: &str) -> PathBuf {
    common::scratch::dir(&format!("mnist-{name}"))
}

/// 16x16 images, 10 classes (0-4 in distribution, 5-9 held out), 100 training images per class.
fn synthetic(name: &str) -> PathBuf {
    let root = tmp(name);
    write_synthetic(&root.join("mnist"), 16, 10, 1000, 300, 7).unwrap();
    root
}

/// A small CNN and a short run: lr 0.1 per mean-loss step (`lr * N`), tau 0.1.
fn small(sampler: &str, chains: usize, epochs: usize) -> MnistConfig {
    let mut c = MnistConfig::preset("cpu", sampler).unwrap();
    c.chains = chains;
    c.train_per_class = None;
    c.heldout_limit = Some(100);
    c.channels = [4, 8];
    c.hidden = 16;
    c.batch = 50;
    c.epochs = epochs;
    c.lr = 0.1 / 500.0;
    c.prior_precision = 1.0;
    c.u_min = 0.0;
    c.du = 5.0;
    c.bins = 200;
    c.zeta = 10.0;
    c.eval_every = 1;
    c.checkpoint_every = 1;
    c.validate().unwrap();
    c
}

#[test]
fn the_cnn_sampler_learns_synthetic_digits_on_every_device() {
    let _serial = serial();
    let root = synthetic("learn");
    for (choice, _device, _scale) in common::devices() {
        let mut config = small("icsgld", 2, 8);
        // Digits 5-9 (outputs 0-4 stand for them), the networks saved on flex.
        config.classes = vec![5, 6, 7, 8, 9];
        config.save_samples = choice == DeviceChoice::Flex;
        let data = MnistData::load(&root, &config).unwrap();
        assert_eq!(data.train.len(), 500);
        assert_eq!(data.heldout.len(), 100);
        let dir = root.join(format!("run-{choice}"));
        std::fs::create_dir_all(&dir).unwrap();
        let record = execute::<Mnist>(&config, &data, &dir, choice, None, None, true).unwrap();
        let last = record.evals.last().unwrap();
        // Chance is 0.2; the blocks are separable, so a learning sampler is far above it.
        assert!(
            last.bma_accuracy.unwrap() > 0.9 && last.chain_accuracy.iter().all(|a| *a > 0.9),
            "{choice}: accuracy {last:?}"
        );
        // The trace holds the averaged models: every chain at every collected evaluation.
        let s: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap())
                .unwrap();
        let d = &s["diagnostics"];
        assert_eq!(
            d["chains"].as_u64().unwrap() * d["draws"].as_u64().unwrap(),
            s["bma_models"].as_u64().unwrap(),
            "{choice}: {s}"
        );
        assert!(
            d["quantities"]["energy"]["ess_bulk"].as_f64().unwrap() > 0.0,
            "{s}"
        );
        for f in [
            "trace.zarr/.zgroup",
            "summary.json",
            "loss.csv",
            "accuracy.csv",
            "entropy.csv",
            "loss.png",
        ] {
            assert!(dir.join(f).exists(), "{choice}: {f} missing");
        }
        if config.save_samples {
            predict_gives_the_runs_average(&root, &dir, &config, &data, &s);
        }
    }
}

/// `sgmcmc predict` on the run's saved networks and its test digits (IDX images, labels as the
/// digits themselves, one per line) gives the run's model average: its accuracy and NLL, and
/// the predicted digit in the `class` column.
fn predict_gives_the_runs_average(
    root: &Path,
    dir: &Path,
    config: &MnistConfig,
    data: &MnistData,
    summary: &serde_json::Value,
) {
    let test = &data.test;
    let images = root.join("test-images.idx");
    let dims = [test.len(), test.rows, test.cols];
    sgmcmc::data::idx::write_idx(&images, &dims, &test.images, true).unwrap();
    let labels = root.join("test-labels.txt");
    let digits: Vec<u8> = test
        .labels
        .iter()
        .map(|&l| config.classes[usize::from(l)])
        .collect();
    let text: String = digits.iter().map(|d| format!("{d}\n")).collect();
    std::fs::write(&labels, text).unwrap();
    let out = root.join("predictions.csv");
    let (metrics, rows) = predict_classes(dir, &images, &labels, &out);
    // The same networks, inputs normalised by the same table: the same numbers to rounding.
    for (m, s) in [("accuracy", "bma_accuracy"), ("nll", "bma_nll")] {
        let (m, s) = (metrics[m].as_f64().unwrap(), summary[s].as_f64().unwrap());
        assert!((m - s).abs() <= 1e-9 * s.abs().max(1.0), "{m} vs {s}");
    }
    let header = std::fs::read_to_string(&out).unwrap();
    assert!(header.starts_with("p_5,p_6,p_7,p_8,p_9,class,"), "{header}");
    let right = rows
        .iter()
        .zip(&digits)
        .filter(|(row, d)| row.split(',').nth(5) == Some(&d.to_string()))
        .count();
    assert_eq!(
        right as f64 / digits.len() as f64,
        metrics["accuracy"].as_f64().unwrap()
    );
    // A digit the run did not learn is refused in one line.
    std::fs::write(&labels, "0\n".repeat(test.len())).unwrap();
    let path = |p: &Path| p.to_str().unwrap().to_string();
    let (dir, images, labels) = (path(dir), path(&images), path(&labels));
    let args = [
        "predict", "--run", &dir, "--data", &images, "--labels", &labels,
    ];
    fails_with(&args, 2, "label 0 is not one of the run's 5 classes");
}

/// One epoch: the untrained networks of step 0 are scored (the first row) but never averaged,
/// and the final row scores the trained chains after the last step. Before, the step-0
/// networks were reported as final and as the model average.
#[test]
fn a_one_epoch_run_reports_its_trained_chains_and_averages_no_initial_network() {
    let _serial = serial();
    let root = synthetic("one-epoch");
    let config = small("sgld", 2, 1);
    let data = MnistData::load(&root, &config).unwrap();
    let dir = root.join("run");
    std::fs::create_dir_all(&dir).unwrap();
    let r = execute::<Mnist>(&config, &data, &dir, DeviceChoice::Flex, None, None, true).unwrap();
    let per_epoch = (data.train.len() / config.batch) as u64;
    let rows: Vec<(usize, u64)> = r.evals.iter().map(|e| (e.epoch, e.step)).collect();
    assert_eq!(rows, [(0, 0), (1, per_epoch)]);
    assert_eq!(r.averages.test.models(), 0);
    assert!(r.evals.iter().all(|e| e.bma_accuracy.is_none()));
    // Ten steps at lr 0.1 on separable blocks: each chain gains over its initial network
    // (measured 0.21 -> 0.52 and 0.00 -> 0.27; the untrained rows were reported before).
    let (first, last) = (&r.evals[0], &r.evals[1]);
    for (a, b) in first.chain_accuracy.iter().zip(&last.chain_accuracy) {
        assert!(*b > a + 0.1, "{first:?} {last:?}");
    }
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["final_accuracy"].as_f64(), Some(last.chain_accuracy[0]));
    assert!(
        s["bma_accuracy"].is_null() && s["diagnostics"]["draws"] == 0,
        "{s}"
    );
    assert!(!dir.join("trace.zarr").exists());
}

#[test]
fn a_resumed_run_equals_the_uninterrupted_run_bit_for_bit() {
    let _serial = serial();
    let root = synthetic("resume");
    // ICSGLD (theta, streams) and pSGLD (kernel state) on flex.
    for (sampler, chains) in [("icsgld", 2), ("psgld", 1)] {
        let mut config = small(sampler, chains, 4);
        if sampler == "psgld" {
            config.psgld_lr = 1e-3;
        }
        let data = MnistData::load(&root, &config).unwrap();
        let whole = root.join(format!("{sampler}-whole"));
        let parts = root.join(format!("{sampler}-parts"));
        std::fs::create_dir_all(&whole).unwrap();
        std::fs::create_dir_all(&parts).unwrap();
        let flex = DeviceChoice::Flex;
        let a = execute::<Mnist>(&config, &data, &whole, flex, None, None, true).unwrap();
        let stop = Some(Length::Epochs(2));
        let half = execute::<Mnist>(&config, &data, &parts, flex, None, stop, true).unwrap();
        assert_eq!(half.epochs_done, 2);
        let (_, c) = read_checkpoint(&parts).unwrap();
        let b = execute::<Mnist>(&config, &data, &parts, flex, Some(c), None, true).unwrap();
        assert_eq!(
            a.steps, b.steps,
            "{sampler}: energies, multipliers, weights"
        );
        assert_eq!(a.evals, b.evals, "{sampler}: evaluations");
        assert_eq!(a.averages, b.averages, "{sampler}: model averages");
        let (ca, cb) = (
            read_checkpoint(&whole).unwrap().1,
            read_checkpoint(&parts).unwrap().1,
        );
        assert_eq!(
            ca.sampler, cb.sampler,
            "{sampler}: final parameters and state"
        );
        assert!(!a.steps.is_empty());
    }
}

#[test]
fn bad_settings_and_missing_data_are_clear_errors() {
    let _serial = serial();
    let mut c = small("sgld", 1, 1);
    c.chains = 0;
    assert!(c.validate().unwrap_err().to_string().contains("chains"));
    assert!(MnistConfig::preset("cpu", "nope").is_err());
    assert!(MnistConfig::preset("huge", "sgld").is_err());
    let root = tmp("missing");
    let err = MnistData::load(&root, &small("sgld", 1, 1)).err().unwrap();
    assert!(err.to_string().contains("mnist"), "{err}");
    let root = synthetic("bigbatch");
    let mut c = small("sgld", 1, 1);
    c.batch = 10_000;
    let err = MnistData::load(&root, &c).err().unwrap();
    assert!(err.to_string().contains("batch"), "{err}");
}
