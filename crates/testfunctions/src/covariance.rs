//! A Gaussian component's covariance `C` as given (an isotropic sd, per-coordinate sds, or a
//! full matrix) and the factors its density needs: the Cholesky factor `L` (`C = L L^T`), the
//! precision `P = C^-1 = L^-T L^-1` and `ln |C|^(1/2) = sum_i ln L_ii`.

use sgmcmc_samplers::error::MixtureError;

/// The covariance of one component.
#[derive(Clone, Debug, PartialEq)]
pub enum Covariance {
    /// `sigma^2 I`.
    Isotropic(f64),
    /// `diag(sigma_1^2, .., sigma_d^2)`, given by the standard deviations.
    Diagonal(Vec<f64>),
    /// A full symmetric positive-definite matrix (rows).
    Full(Vec<Vec<f64>>),
}

/// The factors of a validated covariance in dimension `d` (matrices row-major).
#[derive(Clone, Debug)]
pub struct Factor {
    /// Lower-triangular `L` with `C = L L^T`.
    pub chol: Vec<f64>,
    /// `P = C^-1`.
    pub precision: Vec<f64>,
    /// `ln |C|^(1/2) = sum_i ln L_ii`.
    pub half_log_det: f64,
    /// Whether `C` is diagonal (the density then costs `O(d)` instead of `O(d^2)`).
    pub diagonal: bool,
}

/// Lower-triangular `L` with `A = L L^T` (row-major, `d x d`), or the first row whose pivot
/// `A_rr - sum_k L_rk^2` is not positive, with that pivot.
pub fn cholesky(a: &[f64], d: usize) -> Result<Vec<f64>, (usize, f64)> {
    let mut l = vec![0.0; d * d];
    for i in 0..d {
        for j in 0..=i {
            let s = a[i * d + j] - (0..j).map(|k| l[i * d + k] * l[j * d + k]).sum::<f64>();
            if i == j {
                // `!(s > 0)` also catches NaN.
                if s.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
                    return Err((i, s));
                }
                l[i * d + i] = s.sqrt();
            } else {
                l[i * d + j] = s / l[j * d + j];
            }
        }
    }
    Ok(l)
}

impl Covariance {
    /// Checks the covariance of `component` in dimension `d` and factors it.
    pub fn factor(&self, component: usize, d: usize) -> Result<Factor, MixtureError> {
        let sd_ok = |value: f64| {
            if !value.is_finite() {
                Err(MixtureError::NonFinite {
                    component,
                    what: "sd",
                    value,
                })
            } else if !(value > 0.0
                && (value * value).is_normal()
                && (1.0 / (value * value)).is_normal())
            {
                Err(MixtureError::Sd { component, value })
            } else {
                Ok(value)
            }
        };
        let sds = match self {
            Covariance::Isotropic(s) => vec![sd_ok(*s)?; d],
            Covariance::Diagonal(s) if s.len() != d => {
                return Err(MixtureError::Size {
                    component,
                    what: "sd",
                    got: s.len(),
                    expected: d,
                    dim: d,
                });
            }
            Covariance::Diagonal(s) => s.iter().map(|&v| sd_ok(v)).collect::<Result<_, _>>()?,
            Covariance::Full(rows) => return full(rows, component, d),
        };
        let mut chol = vec![0.0; d * d];
        let mut precision = vec![0.0; d * d];
        for (i, s) in sds.iter().enumerate() {
            chol[i * d + i] = *s;
            precision[i * d + i] = 1.0 / (s * s);
        }
        Ok(Factor {
            chol,
            precision,
            half_log_det: sds.iter().map(|s| s.ln()).sum(),
            diagonal: true,
        })
    }
}

/// Validates and factors a full covariance given by its rows.
fn full(rows: &[Vec<f64>], component: usize, d: usize) -> Result<Factor, MixtureError> {
    let size = |what, got| MixtureError::Size {
        component,
        what,
        got,
        expected: d,
        dim: d,
    };
    if rows.len() != d {
        return Err(size("cov", rows.len()));
    }
    if let Some(r) = rows.iter().find(|r| r.len() != d) {
        return Err(size("cov row", r.len()));
    }
    let a: Vec<f64> = rows.iter().flatten().copied().collect();
    if let Some(&value) = a.iter().find(|v| !v.is_finite()) {
        return Err(MixtureError::NonFinite {
            component,
            what: "cov",
            value,
        });
    }
    for i in 0..d {
        for j in i + 1..d {
            let (x, y) = (a[i * d + j], a[j * d + i]);
            // Equal up to rounding of numbers written by hand or by another program.
            if (x - y).abs() > 1e-12 * (x.abs() + y.abs()) {
                return Err(MixtureError::NotSymmetric {
                    component,
                    i,
                    j,
                    a: x,
                    b: y,
                });
            }
        }
    }
    let chol = cholesky(&a, d).map_err(|(row, pivot)| MixtureError::NotPositiveDefinite {
        component,
        row,
        pivot,
    })?;
    let inv = lower_inverse(&chol, d);
    // P = L^-T L^-1: P_ij = sum_k (L^-1)_ki (L^-1)_kj, k >= max(i, j).
    let mut precision = vec![0.0; d * d];
    for i in 0..d {
        for j in 0..d {
            precision[i * d + j] = (i.max(j)..d).map(|k| inv[k * d + i] * inv[k * d + j]).sum();
        }
    }
    let diagonal = (0..d).all(|i| (0..d).all(|j| i == j || a[i * d + j] == 0.0));
    Ok(Factor {
        half_log_det: (0..d).map(|i| chol[i * d + i].ln()).sum(),
        chol,
        precision,
        diagonal,
    })
}

/// `L^-1` of a lower-triangular `L` with a positive diagonal, by forward substitution.
fn lower_inverse(l: &[f64], d: usize) -> Vec<f64> {
    let mut inv = vec![0.0; d * d];
    for c in 0..d {
        for i in c..d {
            let rhs = if i == c { 1.0 } else { 0.0 };
            let s: f64 = (c..i).map(|k| l[i * d + k] * inv[k * d + c]).sum();
            inv[i * d + c] = (rhs - s) / l[i * d + i];
        }
    }
    inv
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_factor_inverts_and_matches_the_determinant() {
        // C P = I, and |C| by cofactors along the first row: 11 - 3.6 - 0.08 = 7.32.
        let rows = vec![
            vec![4.0, 2.0, 0.4],
            vec![2.0, 3.0, 0.5],
            vec![0.4, 0.5, 1.0],
        ];
        let f = Covariance::Full(rows.clone()).factor(0, 3).unwrap();
        for (i, row) in rows.iter().enumerate() {
            for j in 0..3 {
                let cp: f64 = (0..3).map(|k| row[k] * f.precision[k * 3 + j]).sum();
                let id = if i == j { 1.0 } else { 0.0 };
                assert!((cp - id).abs() < 1e-13, "(CP)_{i}{j} = {cp}");
            }
        }
        let det = 4.0 * (3.0 - 0.25) - 2.0 * (2.0 - 0.2) + 0.4 * (1.0 - 1.2);
        assert!((2.0 * f.half_log_det - f64::ln(det)).abs() < 1e-13);
        assert!(!f.diagonal);
    }

    #[test]
    fn bad_covariances_are_named() {
        let err = |c: Covariance| c.factor(1, 2).unwrap_err();
        assert!(matches!(
            err(Covariance::Full(vec![vec![1.0, 2.0], vec![2.0, 1.0]])),
            MixtureError::NotPositiveDefinite { component: 1, row: 1, pivot } if pivot == -3.0
        ));
        assert!(matches!(
            err(Covariance::Full(vec![vec![1.0, 0.5], vec![0.4, 1.0]])),
            MixtureError::NotSymmetric { i: 0, j: 1, .. }
        ));
        assert!(matches!(
            err(Covariance::Full(vec![vec![1.0, 0.0], vec![0.0]])),
            MixtureError::Size {
                what: "cov row",
                got: 1,
                ..
            }
        ));
        assert!(matches!(
            err(Covariance::Full(vec![
                vec![1.0, f64::NAN],
                vec![f64::NAN, 1.0]
            ])),
            MixtureError::NonFinite { what: "cov", .. }
        ));
        assert!(matches!(
            err(Covariance::Diagonal(vec![1.0])),
            MixtureError::Size { what: "sd", .. }
        ));
        assert!(matches!(
            err(Covariance::Isotropic(0.0)),
            MixtureError::Sd { value: 0.0, .. }
        ));
        // Its variance (or precision) would overflow: a density flat to rounding.
        for sd in [1e300, 1e-300] {
            let e = err(Covariance::Diagonal(vec![1.0, sd]));
            assert!(matches!(e, MixtureError::Sd { .. }), "{sd}: {e}");
        }
        assert!(matches!(
            err(Covariance::Diagonal(vec![1.0, f64::INFINITY])),
            MixtureError::NonFinite { what: "sd", .. }
        ));
        let msg = err(Covariance::Full(vec![vec![1.0, 2.0], vec![2.0, 1.0]])).to_string();
        assert!(
            msg.starts_with("component 2: covariance is not positive definite"),
            "{msg}"
        );
    }
}
