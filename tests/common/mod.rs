//! Helpers shared by the integration tests: the devices to test on and small dense linear
//! algebra for exact stationary laws.
#![allow(dead_code)]

pub mod cli;
pub mod mpi;
pub mod nets;
pub mod scratch;

use sgmcmc::burn::tensor::Device;
use sgmcmc::engine::DeviceChoice;

/// Every tensor device compiled in (flex, ndarray, wgpu with `--features wgpu`), with a factor
/// to scale work by: wgpu through a software Vulkan driver runs ~100 small steps/s, so its tests
/// run fewer iterations (with tolerances derived for the smaller sample).
pub fn devices() -> Vec<(DeviceChoice, Device, f64)> {
    DeviceChoice::compiled()
        .into_iter()
        .filter_map(|c| {
            let d = c.device().ok()??;
            let scale = if c.is_gpu() { 0.25 } else { 1.0 };
            Some((c, d, scale))
        })
        .collect()
}

/// Row-major square matrices.
pub type Mat = Vec<f64>;

pub fn matmul(a: &Mat, b: &Mat, n: usize) -> Mat {
    let mut c = vec![0.0; n * n];
    for i in 0..n {
        for k in 0..n {
            let aik = a[i * n + k];
            for j in 0..n {
                c[i * n + j] += aik * b[k * n + j];
            }
        }
    }
    c
}

pub fn transpose(a: &Mat, n: usize) -> Mat {
    let mut t = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            t[j * n + i] = a[i * n + j];
        }
    }
    t
}

pub fn identity(n: usize) -> Mat {
    let mut m = vec![0.0; n * n];
    for i in 0..n {
        m[i * n + i] = 1.0;
    }
    m
}

/// Inverse by Gauss-Jordan elimination with partial pivoting.
pub fn inverse(a: &Mat, n: usize) -> Mat {
    let mut m = a.clone();
    let mut inv = identity(n);
    for col in 0..n {
        let piv = (col..n)
            .max_by(|&i, &j| m[i * n + col].abs().total_cmp(&m[j * n + col].abs()))
            .unwrap();
        for j in 0..n {
            m.swap(col * n + j, piv * n + j);
            inv.swap(col * n + j, piv * n + j);
        }
        let p = m[col * n + col];
        for j in 0..n {
            m[col * n + j] /= p;
            inv[col * n + j] /= p;
        }
        for i in 0..n {
            if i != col {
                let f = m[i * n + col];
                for j in 0..n {
                    m[i * n + j] -= f * m[col * n + j];
                    inv[i * n + j] -= f * inv[col * n + j];
                }
            }
        }
    }
    inv
}

/// Solves the discrete Lyapunov equation `S = M S M^T + Q` by doubling
/// (`S = sum_k M^k Q (M^T)^k`; converges when the spectral radius of `M` is below 1).
pub fn discrete_lyapunov(m: &Mat, q: &Mat, n: usize) -> Mat {
    let mut s = q.clone();
    let mut a = m.clone();
    for _ in 0..40 {
        let asa = matmul(&matmul(&a, &s, n), &transpose(&a, n), n);
        for (si, v) in s.iter_mut().zip(asa) {
            *si += v;
        }
        a = matmul(&a, &a, n);
    }
    s
}

/// Sample covariance of rows.
pub fn covariance(rows: &[Vec<f64>]) -> (Vec<f64>, Mat) {
    let d = rows[0].len();
    let n = rows.len() as f64;
    let mut mean = vec![0.0; d];
    for r in rows {
        for (m, v) in mean.iter_mut().zip(r) {
            *m += v / n;
        }
    }
    let mut c = vec![0.0; d * d];
    for r in rows {
        for i in 0..d {
            for j in 0..d {
                c[i * d + j] += (r[i] - mean[i]) * (r[j] - mean[j]) / (n - 1.0);
            }
        }
    }
    (mean, c)
}

/// Largest z-score `|emp_ij - exact_ij| / se_ij` over the entries of a covariance estimated from
/// `n` independent Gaussian draws, with `se_ij = sqrt((S_ii S_jj + S_ij^2) / n)` (the variance
/// of a Gaussian sample covariance), and of the mean with `se_i = sqrt(S_ii / n)`.
pub fn max_z(mean: &[f64], cov: &Mat, exact: &Mat, n: f64) -> f64 {
    let d = mean.len();
    let mut z: f64 = 0.0;
    for i in 0..d {
        z = z.max(mean[i].abs() / (exact[i * d + i] / n).sqrt());
        for j in 0..d {
            let se = ((exact[i * d + i] * exact[j * d + j] + exact[i * d + j].powi(2)) / n).sqrt();
            z = z.max((cov[i * d + j] - exact[i * d + j]).abs() / se);
        }
    }
    z
}

/// Two tempered rungs (temperatures 1 and 10, learning rates `lrs`) running `kernel`, the
/// adjacent pair tried every step by the naive Metropolis test (`F = inf`: exact energies need
/// no correction).
pub fn two_rungs(
    kernel: sgmcmc::samplers::kernel::Kernel,
    lrs: [f64; 2],
) -> sgmcmc::samplers::sampler::ReplicaConfig {
    use sgmcmc::samplers::control::{Ladder, Smoothing, SwapScheme};
    use sgmcmc::samplers::sampler::{ReplicaConfig, SwapRule};
    ReplicaConfig {
        kernel,
        ladder: Ladder::tempered(vec![1.0, 10.0], lrs.to_vec()).unwrap(),
        scheme: SwapScheme::Adjacent,
        rule: SwapRule::Metropolis {
            correction: f64::INFINITY,
            initial_variance: 0.0,
            smoothing: Smoothing::Fixed(0.5),
            cooling: 0,
        },
        refresh: None,
        lr_scale: None,
    }
}
