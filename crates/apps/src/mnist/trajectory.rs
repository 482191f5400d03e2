//! `sgmcmc mnist --trajectory`: where samplers travel in weight space (thesis Fig. 6.2 / 7.5).
//!
//! On the 2-class task (digits 0 and 1) each sampler runs twice (seeds 1 and 2) from the same
//! initialisation and its network is flattened every few steps. For one sampler, the
//! snapshots of both runs span the picture's plane ([`PrincipalPlane`]: their mean `m` and top
//! two principal directions `u_1, u_2`). Each path is drawn at its coordinates in the plane over
//! the training loss evaluated on a grid of it, `L(m + a u_1 + b u_2)`; the components off the
//! plane are truncated. The thesis additionally
//! fine-tunes each grid point before evaluating the loss; we do not (the surface is the plain
//! loss on the plane, so barriers look higher than after fine-tuning).

use std::path::Path;

use burn::module::Module;
use burn::tensor::{Device, Int, Tensor, TensorData};
use sgmcmc_engine::experiment::RunData;
use sgmcmc_engine::observers::BeforeStep;
use sgmcmc_engine::{IndexBatches, Progress, Run, RunError};
use sgmcmc_models::{Cnn, Likelihood, Network, Targets};
use sgmcmc_plot::Surface;
use sgmcmc_samplers::checkpoint::EnsembleState;
use sgmcmc_samplers::diagnostics::PrincipalPlane;
use sgmcmc_samplers::ensemble::{trainable_values, with_trainable_values};
use sgmcmc_samplers::sampler::Sampler;

use crate::error::AppError;
use crate::mnist::config::MnistConfig;
use crate::mnist::data::{MnistData, batch, images};
use crate::mnist::run::{MnistSampler, build};
use crate::output::write_csv;

/// The samplers of Fig. 7.5.
pub const TRAJECTORY_SAMPLERS: &[&str] = &["sgd", "psgld", "sghmc", "sgld-high", "awsgld"];

/// Settings of the trajectory picture.
#[derive(Clone, Debug)]
pub struct TrajectorySettings {
    /// Epochs per run.
    pub epochs: usize,
    /// Snapshot every this many steps.
    pub every: usize,
    /// Grid points per axis.
    pub grid: usize,
    /// Training images per class.
    pub per_class: usize,
    /// Images the grid loss is evaluated on.
    pub loss_images: usize,
}

impl Default for TrajectorySettings {
    fn default() -> Self {
        Self {
            epochs: 60,
            every: 6,
            grid: 15,
            per_class: 300,
            loss_images: 600,
        }
    }
}

fn mean_nll(model: &Cnn, x: &Tensor<4>, y: &Tensor<1, Int>) -> Result<f64, AppError> {
    let n = x.dims()[0] as f64;
    let nll = Likelihood::Categorical
        .neg_log_lik(model.forward(x.clone()), &Targets::Class(y.clone()))?;
    Ok(f64::from(nll.into_scalar::<f32>()) / n)
}

fn panel(
    sampler: &str,
    s: &TrajectorySettings,
    data: &MnistData,
    base: &MnistConfig,
    device: &Device,
) -> Result<Surface, AppError> {
    let mut snaps: Vec<Vec<f64>> = Vec::new();
    let mut runs = Vec::new();
    let mut model = None;
    for seed in [1u64, 2] {
        let mut c = MnistConfig {
            classes: base.classes.clone(),
            train_per_class: base.train_per_class,
            batch: base.batch,
            channels: base.channels,
            hidden: base.hidden,
            epochs: s.epochs,
            ..MnistConfig::preset(&base.preset, sampler)?
        }
        .scaled_to(data.train.len());
        // Same initialisation, different noise and minibatches.
        c.seed = seed;
        let mut runner = build(
            &MnistConfig {
                seed: 1,
                ..c.clone()
            },
            data,
            device,
        )?;
        if seed != 1 {
            // Same start as run 1; the sampler's own streams follow `seed`.
            let start = runner.state()?;
            runner = build(&c, data, device)?;
            let mut st = runner.state()?;
            if let (
                EnsembleState::Modules { chains: to, .. },
                EnsembleState::Modules { chains: from, .. },
            ) = (&mut st.ensemble, start.ensemble)
            {
                *to = from;
            }
            runner.restore(st)?;
        }
        let first = snaps.len();
        let mut batches =
            IndexBatches::new(data.train.len(), c.batch, seed, |_, idx: &[usize]| {
                Ok(batch(&data.train, idx, device))
            })?;
        // Chain 0 before every `every`-th step, the path the picture draws.
        let mut watch = BeforeStep(|at: &Progress, runner: &MnistSampler| {
            if at.step.is_multiple_of(s.every as u64) {
                let m = runner.ensemble().module(0).expect("one chain");
                let v = trainable_values(m).map_err(RunError::from)?;
                snaps.push(v.into_iter().map(f64::from).collect());
                model.get_or_insert_with(|| m.clone());
            }
            Ok(())
        });
        Run::epochs(s.epochs as u64)
            .observe(&mut watch)
            .run(&mut runner, &mut batches)?;
        runs.push(first..snaps.len());
    }
    let plane =
        PrincipalPlane::of(snaps).ok_or_else(|| AppError::Run("no snapshot taken".into()))?;
    let paths: Vec<Vec<(f64, f64)>> = runs
        .iter()
        .map(|r| plane.coordinates[r.clone()].to_vec())
        .collect();
    let (mut a0, mut a1, mut b0, mut b1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (a, b) in paths.iter().flatten() {
        a0 = a0.min(*a);
        a1 = a1.max(*a);
        b0 = b0.min(*b);
        b1 = b1.max(*b);
    }
    let (pa, pb) = (0.15 * (a1 - a0).max(1e-6), 0.15 * (b1 - b0).max(1e-6));
    let (a0, a1, b0, b1) = (a0 - pa, a1 + pa, b0 - pb, b1 + pb);
    let plain = device.clone().inner();
    let n_loss = s.loss_images.min(data.train.len());
    let idx: Vec<usize> = (0..n_loss).collect();
    let x = images(&data.train, &idx, &plain);
    let y = Tensor::<1, Int>::from_data(
        TensorData::new(data.train.labels_of(&idx), [n_loss]),
        &plain,
    );
    // The snapshot network (with gradients: its trainable parameters are the snapshots').
    let base_model = model.ok_or_else(|| AppError::Run("no snapshot taken".into()))?;
    let mut grid = Vec::new();
    for i in 0..s.grid {
        for j in 0..s.grid {
            let a = a0 + (a1 - a0) * i as f64 / (s.grid - 1) as f64;
            let b = b0 + (b1 - b0) * j as f64 / (s.grid - 1) as f64;
            let flat: Vec<f32> = plane.point(a, b).into_iter().map(|v| v as f32).collect();
            let m = with_trainable_values(base_model.clone(), &flat)?.valid();
            grid.push((a, b, mean_nll(&m, &x, &y)?));
        }
    }
    Ok(Surface {
        name: sampler.to_string(),
        paths,
        grid,
    })
}

/// What [`trajectory`] writes into its folder.
pub const FILES: &[&str] = &["trajectory.png", "trajectory.csv", "surface.csv"];

/// Runs every sampler of [`TRAJECTORY_SAMPLERS`] twice on digits 0/1 and writes
/// `trajectory.png`, `trajectory.csv` and `surface.csv` into `dir`.
pub fn trajectory(
    data_dir: &Path,
    preset: &str,
    s: &TrajectorySettings,
    dir: &Path,
    device: &Device,
) -> Result<(), AppError> {
    let mut base = MnistConfig::preset(preset, "sgd")?;
    base.classes = vec![0, 1];
    base.train_per_class = Some(s.per_class);
    let n = 2 * s.per_class;
    base.batch = (n / 6).max(1);
    let base = base.scaled_to(n);
    let data = MnistData::load(data_dir, &base)?;
    let mut panels = Vec::new();
    for sampler in TRAJECTORY_SAMPLERS {
        let p = panel(sampler, s, &data, &base, device)?;
        println!("trajectory: {sampler} done");
        panels.push(p);
    }
    let mut path_rows = Vec::new();
    let mut grid_rows = Vec::new();
    for (i, p) in panels.iter().enumerate() {
        for (r, path) in p.paths.iter().enumerate() {
            for (k, (a, b)) in path.iter().enumerate() {
                path_rows.push(vec![i as f64, r as f64, (k * s.every) as f64, *a, *b]);
            }
        }
        for (a, b, l) in &p.grid {
            grid_rows.push(vec![i as f64, *a, *b, *l]);
        }
    }
    write_csv(
        &dir.join("trajectory.csv"),
        &["sampler", "run", "step", "a", "b"],
        &path_rows,
    )?;
    write_csv(
        &dir.join("surface.csv"),
        &["sampler", "a", "b", "loss"],
        &grid_rows,
    )?;
    sgmcmc_plot::surfaces(&dir.join("trajectory.png"), &panels, s.grid)?;
    println!(
        "samplers (index order): {}; figure {}",
        TRAJECTORY_SAMPLERS.join(", "),
        dir.join("trajectory.png").display()
    );
    Ok(())
}
