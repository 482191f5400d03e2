//! The principal plane of weight-space snapshots: where a sampler travels, as the trajectory
//! pictures of the thesis draw it (Fig. 6.2 / 7.5, sec. 6.4.1).
//!
//! The snapshots `x_1..x_K` (`D` weights each, `K << D`) are centred at their mean `m`; the top
//! two right singular vectors `u_1, u_2` of the centred `K x D` matrix `X` span the plane. They
//! come from the `K x K` Gram matrix `G = X X^T` (power iteration with deflation for its top
//! two eigenpairs `(lambda_i, v_i)`): `sigma_i = sqrt(lambda_i)`, `u_i = X^T v_i / sigma_i`, and
//! snapshot `k` sits at `(sigma_1 v_1[k], sigma_2 v_2[k]) = ((x_k - m) . u_1, (x_k - m) . u_2)`.
//! A point `(a, b)` of the plane is the weight vector `m + a u_1 + b u_2` (a loss surface over
//! the plane evaluates the network there; the components off the plane are truncated).

/// The plane of a set of snapshots (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct PrincipalPlane {
    /// The snapshots' mean `m`, the plane's origin.
    pub mean: Vec<f64>,
    /// The directions `u_1, u_2`: unit vectors, but zero where the snapshots span less (an
    /// eigenvalue of 0: one snapshot, or all of them on a line leave `u_2` zero).
    pub directions: [Vec<f64>; 2],
    /// Each snapshot's coordinates in the plane, in the order given.
    pub coordinates: Vec<(f64, f64)>,
}

impl PrincipalPlane {
    /// The plane of `snapshots` (one weight vector each); `None` without a snapshot or when
    /// their lengths differ.
    pub fn of(mut snapshots: Vec<Vec<f64>>) -> Option<Self> {
        let (k, d) = (snapshots.len(), snapshots.first()?.len());
        if snapshots.iter().any(|x| x.len() != d) {
            return None;
        }
        let mean: Vec<f64> = (0..d)
            .map(|j| snapshots.iter().map(|x| x[j]).sum::<f64>() / k as f64)
            .collect();
        for x in &mut snapshots {
            x.iter_mut().zip(&mean).for_each(|(v, m)| *v -= m);
        }
        let gram: Vec<f64> = (0..k * k)
            .map(|ij| {
                let (i, j) = (ij / k, ij % k);
                snapshots[i]
                    .iter()
                    .zip(&snapshots[j])
                    .map(|(a, b)| a * b)
                    .sum()
            })
            .collect();
        let pairs = top_two(&gram, k);
        let directions = pairs.each_ref().map(|(lambda, v)| {
            let sigma = lambda.sqrt().max(1e-30);
            (0..d)
                .map(|j| (0..k).map(|r| snapshots[r][j] * v[r]).sum::<f64>() / sigma)
                .collect()
        });
        let (s0, s1) = (pairs[0].0.sqrt(), pairs[1].0.sqrt());
        let coordinates = (0..k)
            .map(|r| (s0 * pairs[0].1[r], s1 * pairs[1].1[r]))
            .collect();
        Some(Self {
            mean,
            directions,
            coordinates,
        })
    }

    /// The weight vector at `(a, b)`: `m + a u_1 + b u_2`.
    pub fn point(&self, a: f64, b: f64) -> Vec<f64> {
        let [u, w] = &self.directions;
        (0..self.mean.len())
            .map(|t| self.mean[t] + a * u[t] + b * w[t])
            .collect()
    }
}

/// The top two eigenpairs of a symmetric `k x k` matrix `g` (row-major, positive
/// semi-definite) by power iteration with deflation; an eigenvalue of 0 leaves its vector at
/// the start.
fn top_two(g: &[f64], k: usize) -> [(f64, Vec<f64>); 2] {
    let mut g = g.to_vec();
    let mut pair = |r: usize| {
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
        (lambda, v)
    };
    let first = pair(0);
    [first, pair(1)]
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
    fn snapshots_in_a_plane_sit_at_their_coordinates() {
        // Snapshots m + a_k e + b_k f in R^4 with orthonormal e, f and uncorrelated,
        // zero-mean (a, b), a spread wider than b: the plane is span(e, f), u_1 = +-e, and
        // each snapshot is recovered exactly from its coordinates.
        let m = [1.0, -2.0, 0.5, 3.0];
        let h = std::f64::consts::FRAC_1_SQRT_2;
        let (e, f) = ([h, h, 0.0, 0.0], [0.0, 0.0, h, -h]);
        let ab = [(3.0, 1.0), (-3.0, 1.0), (3.0, -1.0), (-3.0, -1.0)];
        let snaps: Vec<Vec<f64>> = ab
            .iter()
            .map(|(a, b)| (0..4).map(|t| m[t] + a * e[t] + b * f[t]).collect())
            .collect();
        let plane = PrincipalPlane::of(snaps.clone()).unwrap();
        for (t, mt) in m.iter().enumerate() {
            assert!((plane.mean[t] - mt).abs() < 1e-12);
        }
        let along = |u: &[f64], g: &[f64; 4]| (0..4).map(|t| u[t] * g[t]).sum::<f64>().abs();
        assert!((along(&plane.directions[0], &e) - 1.0).abs() < 1e-9);
        assert!((along(&plane.directions[1], &f) - 1.0).abs() < 1e-9);
        for ((a, b), x) in plane.coordinates.iter().zip(&snaps) {
            assert!((a.abs() - 3.0).abs() < 1e-9 && (b.abs() - 1.0).abs() < 1e-9);
            let back = plane.point(*a, *b);
            assert!(back.iter().zip(x).all(|(p, q)| (p - q).abs() < 1e-9));
        }
        assert!(PrincipalPlane::of(Vec::new()).is_none());
        assert!(PrincipalPlane::of(vec![vec![1.0], vec![1.0, 2.0]]).is_none());
    }
}
