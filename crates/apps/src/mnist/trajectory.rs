//! `sgmcmc mnist --trajectory`: where samplers travel in weight space (thesis Fig. 6.2 / 7.5).
//!
//! On the 2-class task (digits 0 and 1) each sampler runs twice (seeds 1 and 2) from the same
//! initialisation and its network is flattened every few steps. For one sampler, the
//! snapshots `x_1..x_K` of both runs are centred at their mean `m` and the top two right
//! singular vectors `u_1, u_2` of the centred matrix span the picture's plane (computed from
//! the `K x K` Gram matrix: `u_i = X^T v_i / sigma_i`). Each path is drawn at its coordinates
//! `((x_k - m) . u_1, (x_k - m) . u_2)` over the training loss evaluated on a grid of that plane,
//! `L(m + a u_1 + b u_2)`; the components off the plane are truncated. The thesis additionally
//! fine-tunes each grid point before evaluating the loss; we do not (the surface is the plain
//! loss on the plane, so barriers look higher than after fine-tuning).

use std::path::Path;

use burn::tensor::{Device, Int, Tensor, TensorData};
use sgmcmc_engine::observers::BeforeStep;
use sgmcmc_engine::{IndexBatches, Progress, Run, RunError};
use sgmcmc_models::{Cnn, Likelihood, Network, Targets};
use sgmcmc_plot::Surface;
use sgmcmc_samplers::checkpoint::{EnsembleState, TensorState};
use sgmcmc_samplers::ensemble::{module_values, with_module_values};
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

fn flatten(values: &[TensorState]) -> Vec<f64> {
    values
        .iter()
        .flat_map(|t| t.values.iter().map(|v| f64::from(*v)))
        .collect()
}

fn unflatten(template: &[TensorState], flat: &[f64]) -> Vec<TensorState> {
    let mut at = 0;
    template
        .iter()
        .map(|t| {
            let n = t.values.len();
            let values = flat[at..at + n].iter().map(|v| *v as f32).collect();
            at += n;
            TensorState {
                dims: t.dims.clone(),
                values,
            }
        })
        .collect()
}

/// The top two eigenpairs of a symmetric `k x k` matrix by power iteration with deflation.
fn top_two(g: &[f64], k: usize) -> [(f64, Vec<f64>); 2] {
    let mut g = g.to_vec();
    let mut out: Vec<(f64, Vec<f64>)> = Vec::new();
    for r in 0..2 {
        let mut v: Vec<f64> = (0..k).map(|i| 1.0 + ((i + r) % 7) as f64 * 0.1).collect();
        let mut lambda = 0.0;
        for _ in 0..2000 {
            let w: Vec<f64> = (0..k)
                .map(|i| (0..k).map(|j| g[i * k + j] * v[j]).sum())
                .collect();
            let norm = w.iter().map(|x| x * x).sum::<f64>().sqrt();
            if norm == 0.0 {
                break;
            }
            lambda = norm;
            v = w.into_iter().map(|x| x / norm).collect();
        }
        for i in 0..k {
            for j in 0..k {
                g[i * k + j] -= lambda * v[i] * v[j];
            }
        }
        out.push((lambda, v));
    }
    let b = out.pop().expect("two");
    let a = out.pop().expect("two");
    [a, b]
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
    let mut template = Vec::new();
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
                let v = module_values(m).map_err(RunError::from)?;
                snaps.push(flatten(&v));
                template = v;
                model.get_or_insert_with(|| m.clone());
            }
            Ok(())
        });
        Run::epochs(s.epochs as u64)
            .observe(&mut watch)
            .run(&mut runner, &mut batches)?;
        runs.push(first..snaps.len());
    }
    let (k, d) = (snaps.len(), snaps[0].len());
    let mean: Vec<f64> = (0..d)
        .map(|j| snaps.iter().map(|x| x[j]).sum::<f64>() / k as f64)
        .collect();
    for x in &mut snaps {
        x.iter_mut().zip(&mean).for_each(|(v, m)| *v -= m);
    }
    let gram: Vec<f64> = (0..k * k)
        .map(|ij| {
            let (i, j) = (ij / k, ij % k);
            snaps[i].iter().zip(&snaps[j]).map(|(a, b)| a * b).sum()
        })
        .collect();
    let pairs = top_two(&gram, k);
    // u_i = X^T v_i / sigma_i; coordinates of snapshot k: sigma_i v_i[k].
    let dirs: Vec<Vec<f64>> = pairs
        .iter()
        .map(|(lambda, v)| {
            let sigma = lambda.sqrt().max(1e-30);
            (0..d)
                .map(|j| (0..k).map(|r| snaps[r][j] * v[r]).sum::<f64>() / sigma)
                .collect()
        })
        .collect();
    let coord = |r: usize| {
        let s0 = pairs[0].0.sqrt();
        let s1 = pairs[1].0.sqrt();
        (s0 * pairs[0].1[r], s1 * pairs[1].1[r])
    };
    let paths: Vec<Vec<(f64, f64)>> = runs
        .iter()
        .map(|r| r.clone().map(coord).collect())
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
    let base_model = model.ok_or_else(|| AppError::Run("no snapshot taken".into()))?;
    let base_model = burn::module::Module::valid(&base_model);
    let mut grid = Vec::new();
    for i in 0..s.grid {
        for j in 0..s.grid {
            let a = a0 + (a1 - a0) * i as f64 / (s.grid - 1) as f64;
            let b = b0 + (b1 - b0) * j as f64 / (s.grid - 1) as f64;
            let flat: Vec<f64> = (0..d)
                .map(|t| mean[t] + a * dirs[0][t] + b * dirs[1][t])
                .collect();
            let m = with_module_values(base_model.clone(), unflatten(&template, &flat))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_two_finds_the_leading_eigenpairs() {
        // Q diag(5, 2, 0.5) Q^T with an orthonormal Q (a rotation in the 0-1 plane).
        let (c, s) = (0.6, 0.8);
        let q = [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]];
        let l = [5.0, 2.0, 0.5];
        let g: Vec<f64> = (0..9)
            .map(|ij| {
                let (i, j) = (ij / 3, ij % 3);
                (0..3).map(|r| q[i][r] * l[r] * q[j][r]).sum()
            })
            .collect();
        let [(l1, v1), (l2, v2)] = top_two(&g, 3);
        assert!(
            (l1 - 5.0).abs() < 1e-9 && (l2 - 2.0).abs() < 1e-9,
            "{l1} {l2}"
        );
        let dot = |v: &[f64], r: usize| (0..3).map(|i| v[i] * q[i][r]).sum::<f64>().abs();
        assert!((dot(&v1, 0) - 1.0).abs() < 1e-9 && (dot(&v2, 1) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn flatten_and_unflatten_round_trip() {
        let t = vec![
            TensorState {
                dims: vec![2, 2],
                values: vec![1.0, 2.0, 3.0, 4.0],
            },
            TensorState {
                dims: vec![1],
                values: vec![5.0],
            },
        ];
        assert_eq!(unflatten(&t, &flatten(&t)), t);
    }
}
