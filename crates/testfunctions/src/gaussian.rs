//! `d`-dimensional Gaussian `U(x) = (x - m)^T A (x - m) / 2` with precision matrix `A`.

use crate::Potential;
use sgmcmc_samplers::error::TargetError;

/// Gaussian target with mean `m` and symmetric positive-definite precision `A` (row-major).
#[derive(Clone, Debug)]
pub struct Gaussian {
    mean: Vec<f64>,
    precision: Vec<f64>,
}

impl Gaussian {
    /// Gaussian with the given mean and precision (`d x d`, row-major, symmetric; positive
    /// definiteness is checked by a Cholesky factorisation).
    pub fn new(mean: Vec<f64>, precision: Vec<f64>) -> Result<Self, TargetError> {
        let d = mean.len();
        if d == 0 || precision.len() != d * d {
            return Err(TargetError::Shape(format!(
                "precision must be {d}x{d} for a mean of length {d}"
            )));
        }
        let symmetric =
            (0..d).all(|i| (0..d).all(|j| precision[i * d + j] == precision[j * d + i]));
        if !symmetric || !is_positive_definite(&precision, d) {
            return Err(TargetError::InvalidParameter {
                name: "precision",
                value: format!("{d}x{d} matrix"),
                reason: "must be symmetric positive definite",
            });
        }
        Ok(Self { mean, precision })
    }

    /// Zero mean, tridiagonal precision with `diag` on the diagonal and `off` beside it
    /// (eigenvalues `diag + 2 off cos(k pi / (d + 1))`).
    pub fn tridiagonal(d: usize, diag: f64, off: f64) -> Result<Self, TargetError> {
        let mut a = vec![0.0; d * d];
        for i in 0..d {
            a[i * d + i] = diag;
            if i + 1 < d {
                a[i * d + i + 1] = off;
                a[(i + 1) * d + i] = off;
            }
        }
        Self::new(vec![0.0; d], a)
    }

    /// The precision matrix (row-major).
    pub fn precision(&self) -> &[f64] {
        &self.precision
    }

    /// The mean.
    pub fn mean(&self) -> &[f64] {
        &self.mean
    }
}

fn is_positive_definite(a: &[f64], d: usize) -> bool {
    super::covariance::cholesky(a, d).is_ok()
}

impl Potential for Gaussian {
    fn dim(&self) -> usize {
        self.mean.len()
    }

    fn energy(&self, x: &[f64]) -> f64 {
        let mut g = vec![0.0; x.len()];
        self.energy_grad(x, &mut g)
    }

    fn energy_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let d = self.mean.len();
        let mut u = 0.0;
        for i in 0..d {
            let row = &self.precision[i * d..(i + 1) * d];
            let gi: f64 = row
                .iter()
                .zip(x.iter().zip(&self.mean))
                .map(|(a, (xj, mj))| a * (xj - mj))
                .sum();
            grad[i] = gi;
            u += 0.5 * (x[i] - self.mean[i]) * gi;
        }
        u
    }

    fn support(&self) -> Option<Vec<(f64, f64)>> {
        None
    }
}
