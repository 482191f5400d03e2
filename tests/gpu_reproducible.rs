//! What reproducibility holds on a GPU device built with burn's `fusion`, `autotune` and
//! `persistence` (wgpu here, through the software Vulkan driver in CI): one seed gives the same
//! bits run after run, in one process and in another process that reads the autotune choices
//! the first stored in CubeCL's cache, and a run stopped at a checkpoint and resumed equals the
//! uninterrupted run. Autotune picks kernels by timing them: two processes that tune on their
//! own (no shared cache) agree to rounding only, which is all that is promised across devices
//! (`the_seeded_chain_agrees_with_flex`, and `sgmcmc bench --only seeded` in the GPU check).
//! Skipped with a notice where the binary has no GPU device or the machine no adapter.
//!
//! The tests take turns: two processes tuning the same kernels at once could each keep a
//! different choice, and the cache the later one.

mod common;

use common::cli::{dir_in, seeded_energies, tmp};
use sgmcmc::apps::images::Images;
use sgmcmc::apps::images::config::ImagesConfig;
use sgmcmc::apps::images::data::ImagesData;
use sgmcmc::apps::images::run::read_checkpoint;
use sgmcmc::engine::experiment::{RunData, execute};
use sgmcmc::engine::{DeviceChoice, Length};

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The GPU devices compiled in that this machine has.
fn gpus() -> Vec<DeviceChoice> {
    let found: Vec<DeviceChoice> = DeviceChoice::available()
        .into_iter()
        .filter(|d| d.is_gpu())
        .collect();
    if found.is_empty() {
        println!("no GPU device compiled in or present: GPU reproducibility not exercised");
    }
    found
}

/// ResNet20 SGHMC (device noise) on the synthetic images: 2 epochs of 4 steps.
fn config() -> ImagesConfig {
    let mut c = ImagesConfig::preset("cpu", "synthetic", "resnet20", "sghmc").unwrap();
    c.batch = 16;
    c.epochs = 2.0;
    c.eval_every = 1.0;
    c.burn_epochs = 1.0;
    c.checkpoint_every = 1.0;
    c.weight_decay = 25.0 * 64.0 / 50_000.0;
    c.validate().unwrap();
    c
}

#[test]
fn a_seeded_gpu_run_repeats_and_resumes_bit_for_bit() {
    let _serial = serial();
    let root = tmp("gpu-repeat");
    let config = config();
    let data = ImagesData::load(&root, &config).unwrap();
    for d in gpus() {
        let run = |name: &str, stop: Option<Length>, resume| {
            let dir = dir_in(&root, &format!("{d}-{name}"));
            execute::<Images>(&config, &data, &dir, d, resume, stop, true)
                .unwrap_or_else(|e| panic!("{d} {name}: {e}"))
        };
        let first = run("first", None, None);
        let again = run("again", None, None);
        let bits = |e: &Vec<Vec<f64>>| e.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&first.energies), bits(&again.energies), "{d}: rerun");
        assert_eq!(first.evals, again.evals, "{d}: rerun evaluations");
        let half = run("parts", Some(Length::Steps(3)), None);
        assert_eq!(half.steps_done, 3);
        let (_, c) = read_checkpoint(&root.join(format!("{d}-parts"))).unwrap();
        let resumed = run("parts", None, Some(c));
        assert_eq!(
            bits(&first.energies),
            bits(&resumed.energies),
            "{d}: resume"
        );
        assert_eq!(first.evals, resumed.evals, "{d}: resumed evaluations");
    }
}

/// Two processes give the same seeded chain: the second reads the kernels and autotune choices
/// the first stored (or both read an earlier run's).
#[test]
fn a_second_process_gives_the_same_bits() {
    let _serial = serial();
    for d in gpus() {
        let energies = |name: &str| {
            let e = seeded_energies(&d.to_string(), &tmp(&format!("gpu-process-{d}-{name}")));
            e.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        };
        assert_eq!(energies("a"), energies("b"), "{d}: two processes");
    }
}

/// The seeded chain of `bench --only seeded` agrees across devices: flex against each GPU
/// device to 1e-3 relative over 20 steps (what the GPU check asks of cuda and wgpu on a GPU).
#[test]
fn the_seeded_chain_agrees_with_flex() {
    let _serial = serial();
    let seeded = |d: &str| seeded_energies(d, &tmp(&format!("gpu-agree-{d}")));
    let flex = seeded("flex");
    for d in gpus() {
        let gpu = seeded(&d.to_string());
        for (k, (a, b)) in flex.iter().zip(&gpu).enumerate() {
            let rel = (a - b).abs() / a.abs().max(b.abs());
            assert!(rel < 1e-3, "{d} step {k}: flex {a} against {b} ({rel:.2e})");
        }
    }
}
