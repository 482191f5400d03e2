//! The mixture's energy and gradient, its validation, and its exact masses against closed
//! forms: quadrature in 1-D/2-D, Monte Carlo (plain and importance-weighted) in 3-D.
//!
//! Closed forms: the nearest-mean cells of two means, or of collinear means, are half-spaces or
//! slabs `lo < a^T x <= hi`, and `a^T X ~ N(a^T mu_k, a^T C_k a)` under component `k`, so a
//! cell's mass is a sum of normal CDF differences. Within a component far from the others,
//! `U = c_k + q / 2` with `q / tau ~ chi2_d` under `pi_tau`, which gives the energy-bin masses.

use super::*;
use crate::Mixture1d;
use crate::exact_masses::{self, ExactMethod};
use crate::test_math::{chi2_cdf, normal_cdf};
use sgmcmc_samplers::control::EnergyPartition;

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// `a^T C a`.
fn form(a: &[f64], c: &[Vec<f64>]) -> f64 {
    (0..a.len()).map(|i| a[i] * dot(&c[i], a)).sum()
}

/// Mass of `{lo < a^T x <= hi}` under `sum_k w_k N(mu_k, tau C_k)` (normalised `w`).
fn slab_mass(
    w: &[f64],
    means: &[Vec<f64>],
    covs: &[Vec<Vec<f64>>],
    a: &[f64],
    lo: f64,
    hi: f64,
) -> f64 {
    let total: f64 = w.iter().sum();
    (0..w.len())
        .map(|k| {
            let (m, s) = (dot(a, &means[k]), form(a, &covs[k]).sqrt());
            w[k] / total * (normal_cdf((hi - m) / s) - normal_cdf((lo - m) / s))
        })
        .sum()
}

/// Three 3-D covariances with correlations and different determinants (0.295, 0.72, 0.216).
fn covs_3d() -> Vec<Vec<Vec<f64>>> {
    vec![
        vec![
            vec![1.0, 0.3, 0.1],
            vec![0.3, 0.8, -0.2],
            vec![0.1, -0.2, 0.5],
        ],
        vec![
            vec![0.7, 0.0, 0.2],
            vec![0.0, 0.9, 0.0],
            vec![0.2, 0.0, 1.2],
        ],
        vec![
            vec![0.5, -0.1, 0.0],
            vec![-0.1, 0.6, 0.3],
            vec![0.0, 0.3, 0.9],
        ],
    ]
}

fn full(covs: &[Vec<Vec<f64>>]) -> Vec<Covariance> {
    covs.iter().map(|c| Covariance::Full(c.clone())).collect()
}

#[test]
fn gradients_match_finite_differences_and_far_tails_stay_finite() {
    let mut cov = full(&covs_3d()[..2]);
    cov.push(Covariance::Diagonal(vec![0.5, 1.5, 0.7]));
    let means = vec![
        vec![-1.0, 0.0, 2.0],
        vec![1.5, 1.0, -1.0],
        vec![0.0, -2.0, 0.5],
    ];
    let m = GaussianMixture::new(&[0.2, 0.5, 0.3], &means, &cov).unwrap();
    // Central differences, h = 1e-6: error O(h^2 U''') + O(eps U / h), ~1e-8 relative here.
    for x in [
        [0.3, -0.7, 1.1],
        [2.0, 2.0, -2.0],
        [-3.0, 0.5, 4.0],
        [0.0, -2.0, 0.5],
    ] {
        let mut g = [0.0; 3];
        m.energy_grad(&x, &mut g);
        for i in 0..3 {
            let (mut xp, mut xm) = (x, x);
            xp[i] += 1e-6;
            xm[i] -= 1e-6;
            let fd = (m.energy(&xp) - m.energy(&xm)) / 2e-6;
            assert!(
                (fd - g[i]).abs() < 1e-5 * (1.0 + fd.abs()),
                "{x:?} d{i}: {} vs {fd}",
                g[i]
            );
        }
    }
    // 500 sd out every component underflows in linear scale (e^-125000); the log-sum-exp keeps
    // U and its gradient, which tends to the nearest-in-Mahalanobis component's P (x - mu).
    let far = [500.0, -400.0, 300.0];
    let mut g = [0.0; 3];
    let u = m.energy_grad(&far, &mut g);
    assert!(
        u.is_finite() && u > 1e4 && g.iter().all(|v| v.is_finite()),
        "{u} {g:?}"
    );
}

#[test]
fn one_dimensional_energies_match_the_built_in_mixture() {
    let comps = [(0.4, -3.0, 0.7), (0.6, 2.0, 0.5)];
    let old = Mixture1d::new(&comps).unwrap();
    let new = GaussianMixture::new(
        &[0.4, 0.6],
        &[vec![-3.0], vec![2.0]],
        &[Covariance::Isotropic(0.7), Covariance::Diagonal(vec![0.5])],
    )
    .unwrap();
    for x in [-9.0, -3.0, -0.4, 0.0, 1.3, 2.0, 7.5] {
        let (mut g0, mut g1) = ([0.0], [0.0]);
        let (u0, u1) = (
            old.energy_grad(&[x], &mut g0),
            new.energy_grad(&[x], &mut g1),
        );
        assert!(
            (u0 - u1).abs() < 1e-12 * (1.0 + u0.abs()),
            "U({x}): {u0} vs {u1}"
        );
        assert!(
            (g0[0] - g1[0]).abs() < 1e-12 * (1.0 + g0[0].abs()),
            "U'({x})"
        );
    }
}

#[test]
fn invalid_mixtures_are_refused_with_the_component_named() {
    let iso = |n| vec![Covariance::Isotropic(1.0); n];
    let e =
        |w: &[f64], m: &[Vec<f64>], c: &[Covariance]| GaussianMixture::new(w, m, c).unwrap_err();
    assert_eq!(e(&[], &[], &[]), MixtureError::Empty);
    assert_eq!(e(&[1.0], &[vec![]], &iso(1)), MixtureError::ZeroDimension);
    assert!(matches!(
        e(&[1.0], &[vec![0.0], vec![1.0]], &iso(2)),
        MixtureError::Count {
            what: "weights",
            got: 1,
            expected: 2
        }
    ));
    assert!(matches!(
        e(&[1.0, 1.0], &[vec![0.0], vec![1.0]], &iso(1)),
        MixtureError::Count {
            what: "covariances",
            ..
        }
    ));
    assert!(matches!(
        e(&[1.0, 1.0], &[vec![0.0, 0.0], vec![1.0]], &iso(2)),
        MixtureError::Size {
            component: 1,
            what: "mean",
            got: 1,
            expected: 2,
            ..
        }
    ));
    assert!(matches!(
        e(&[1.0, -0.5], &[vec![0.0], vec![1.0]], &iso(2)),
        MixtureError::Weight { component: 1, .. }
    ));
    assert!(matches!(
        e(&[1.0, 1.0], &[vec![0.0], vec![f64::NAN]], &iso(2)),
        MixtureError::NonFinite { what: "mean", .. }
    ));
    let msg = e(&[1.0, -0.5], &[vec![0.0], vec![1.0]], &iso(2)).to_string();
    assert_eq!(msg, "component 2: weight -0.5 must be finite and > 0");
}

#[test]
fn one_dimensional_quadrature_masses_equal_the_closed_form() {
    // 0.3 N(-1, 0.8^2) + 0.7 N(1.5, 1.2^2): the nearest-mean cells split at 0.25.
    let m = GaussianMixture::new(
        &[3.0, 7.0],
        &[vec![-1.0], vec![1.5]],
        &[Covariance::Isotropic(0.8), Covariance::Isotropic(1.2)],
    )
    .unwrap();
    let method = ExactMethod::for_potential(&m, 1000).unwrap();
    let ExactMethod::Quadrature { grid } = method else {
        panic!("{method:?}");
    };
    let got = exact_masses::mode_masses(&m, 1.0, method).unwrap();
    assert!(got.se.is_none());
    let exact = 0.3 * normal_cdf(1.25 / 0.8) + 0.7 * normal_cdf(-1.25 / 1.2);
    // Only the grid cell cut by the boundary is misassigned: |error| <= h max pi, with
    // max pi <= sum_k w_k / (sqrt(2 pi) sd_k) = 0.382.
    let (lo, hi) = m.support().unwrap()[0];
    let tol = (hi - lo) / grid as f64 * 0.382;
    assert!(
        (got.masses[0] - exact).abs() < tol,
        "{} vs {exact} (tol {tol})",
        got.masses[0]
    );
    assert!((got.masses[1] - (1.0 - exact)).abs() < tol);
    // Wrong answers fail: the weights (0.3) are 0.086 away; the built-in 1-D mixture's
    // split at the density minimum (x = -0.04 here) is another definition, 0.05 away.
    assert!((0.3 - exact).abs() > 1000.0 * tol);
    let basin = Mixture1d::new(&[(0.3, -1.0, 0.8), (0.7, 1.5, 1.2)]).unwrap();
    let basin = crate::quadrature::mode_masses(&basin, 1.0, grid).unwrap();
    assert!((basin[0] - exact).abs() > 0.04, "{basin:?} vs {exact}");
}

#[test]
fn two_dimensional_quadrature_masses_equal_the_closed_form() {
    let means = vec![vec![-1.0, -0.5], vec![1.2, 1.0]];
    let covs = vec![
        vec![vec![1.0, 0.5], vec![0.5, 0.8]],
        vec![vec![0.6, -0.2], vec![-0.2, 1.1]],
    ];
    let w = [0.45, 0.55];
    let m = GaussianMixture::new(&w, &means, &full(&covs)).unwrap();
    let method = ExactMethod::for_potential(&m, 1000).unwrap();
    let ExactMethod::Quadrature { grid } = method else {
        panic!("{method:?}");
    };
    let got = exact_masses::mode_masses(&m, 1.0, method).unwrap();
    // x is nearer mu_1 iff a^T x <= c, a = mu_2 - mu_1, c = (|mu_2|^2 - |mu_1|^2) / 2.
    let a = [2.2, 1.5];
    let c = 0.5 * (dot(&means[1], &means[1]) - dot(&means[0], &means[0]));
    let exact = slab_mass(&w, &means, &covs, &a, f64::NEG_INFINITY, c);
    // Misassigned cells are those the line cuts: within h / sqrt(2) of it (h the larger step),
    // a band whose mass is at most sqrt(2) h g_max, g the density of n^T x (n = a / |a|), with
    // g_max <= sum_k w_k / (sqrt(2 pi) sd_k(n^T x)).
    let na = dot(&a, &a).sqrt();
    let g_max: f64 = (0..2)
        .map(|k| w[k] / ((2.0 * std::f64::consts::PI).sqrt() * form(&a, &covs[k]).sqrt() / na))
        .sum();
    let h = m
        .support()
        .unwrap()
        .iter()
        .map(|(lo, hi)| (hi - lo) / grid as f64)
        .fold(0.0, f64::max);
    let tol = 2f64.sqrt() * h * g_max;
    assert!(
        (got.masses[0] - exact).abs() < tol,
        "{} vs {exact} (tol {tol})",
        got.masses[0]
    );
    // The weight (what a label-based definition would give) is outside the tolerance.
    assert!((w[0] - exact).abs() > 1.5 * tol, "{exact} vs {tol}");
}

/// Two far-apart components (11 sd and more) of equal weight and equal `|C|`: `U = ln 2 +
/// (d/2) ln 2 pi + ln |C|^(1/2) + q / 2` near either, up to `e^-100`.
fn separated_2d() -> GaussianMixture {
    let covs = vec![
        vec![vec![1.0, 0.0], vec![0.0, 4.0]],
        vec![vec![2.0, 1.0], vec![1.0, 2.5]],
    ];
    GaussianMixture::new(
        &[1.0, 1.0],
        &[vec![-8.0, 0.0], vec![8.0, 1.0]],
        &full(&covs),
    )
    .unwrap()
}

#[test]
fn two_dimensional_quadrature_energy_bins_follow_the_chi_square_law() {
    let m = separated_2d();
    let method = ExactMethod::for_potential(&m, 1000).unwrap();
    assert!(matches!(method, ExactMethod::Quadrature { .. }));
    let c = 2f64.ln() + 2.0 * HALF_LN_2PI + 0.5 * 4f64.ln();
    let p = EnergyPartition::new(c, 0.25, 40).unwrap();
    for tau in [1.0, 2.0] {
        let got = exact_masses::energy_bin_masses(&m, tau, method, &p).unwrap();
        let mut cdf = 0.0;
        for (j, mj) in got.masses.iter().enumerate().take(39) {
            cdf += mj;
            // Bin j holds U <= c + (j + 1) du; P(q / 2 <= v) = P(chi2_2 <= 2 v / tau).
            let exact = chi2_cdf(2, 2.0 * 0.25 * (j + 1) as f64 / tau);
            // The error is that of the grid cells a level set cuts, O(h) with a fluctuating
            // constant: at most 4.5e-4 at this grid (1000^2; measured 1.0e-3 at 500^2, 6e-5 at
            // 4000^2). 1e-3 is far below the gap to the wrong temperature's law (0.23 at v = 1).
            assert!(
                (cdf - exact).abs() < 1e-3,
                "tau {tau} bin {j}: {cdf} vs {exact}"
            );
        }
    }
}

/// Asserts `|got - exact| < 4 se` for each entry, and that `wrong` would fail the same test.
fn within_4_se(got: &exact_masses::ExactMasses, exact: &[f64], wrong: &[f64], what: &str) {
    let se = got.se.as_ref().expect("Monte Carlo states its error");
    for k in 0..exact.len() {
        let z = (got.masses[k] - exact[k]) / se[k];
        assert!(
            z.abs() < 4.0,
            "{what} {k}: {} vs {} (se {}, z {z})",
            got.masses[k],
            exact[k],
            se[k]
        );
    }
    let worst = (0..exact.len())
        .map(|k| (wrong[k] - exact[k]).abs() / se[k])
        .fold(0.0, f64::max);
    assert!(
        worst > 4.0,
        "{what}: the wrong answer {wrong:?} would pass (z {worst})"
    );
}

#[test]
fn three_dimensional_monte_carlo_mode_masses_equal_the_closed_form() {
    // Collinear means o + t_k u: the nearest-mean cells are slabs in u^T x, split at the
    // midpoints of the t_k (shifted by u^T o).
    let u = [1.0 / 3.0, 2.0 / 3.0, 2.0 / 3.0];
    let o = [0.5, -1.0, 0.25];
    let t = [-2.0, 0.0, 2.5];
    let means: Vec<Vec<f64>> = t
        .iter()
        .map(|tk| (0..3).map(|i| o[i] + tk * u[i]).collect())
        .collect();
    let covs = covs_3d();
    let w = [0.2, 0.5, 0.3];
    let m = GaussianMixture::new(&w, &means, &full(&covs)).unwrap();
    let n = 400_000;
    let method = ExactMethod::for_potential(&m, n).unwrap();
    assert_eq!(method, ExactMethod::MonteCarlo { draws: n });
    let got = exact_masses::mode_masses(&m, 1.0, method).unwrap();
    let s0 = dot(&u, &o);
    let cuts = [f64::NEG_INFINITY, s0 - 1.0, s0 + 1.25, f64::INFINITY];
    let exact: Vec<f64> = (0..3)
        .map(|k| slab_mass(&w, &means, &covs, &u, cuts[k], cuts[k + 1]))
        .collect();
    // At tau = 1 the draws are exact: se = sqrt(p (1 - p) / n), about 7e-4 here, and the
    // same for the running sums (the CDF over the modes).
    let (se, cdf_se) = (got.se.as_ref().unwrap(), got.cdf_se.as_ref().unwrap());
    let plain = |p: f64| (p * (1.0 - p) / n as f64).sqrt();
    let mut cdf = 0.0;
    for k in 0..3 {
        cdf += got.masses[k];
        assert!((se[k] - plain(got.masses[k])).abs() < 1e-12, "{}", se[k]);
        assert!(
            (cdf_se[k] - plain(cdf)).abs() < 1e-9,
            "{} vs {}",
            cdf_se[k],
            plain(cdf)
        );
    }
    within_4_se(&got, &exact, &w, "mode");
}

#[test]
fn three_dimensional_monte_carlo_tempered_masses_and_energy_bins_equal_the_closed_form() {
    // Far apart (24 apart, sds <= 1.1, so >= 15 sd at tau = 2): at tau the mode masses are
    // v_k ∝ w_k^(1/tau) |C_k|^((1 - 1/tau)/2), and near mode k U = c_k + q / 2 with
    // c_k = -ln w_k + (3/2) ln 2 pi + ln |C_k|^(1/2), q / tau ~ chi2_3.
    let covs = covs_3d()[..2].to_vec();
    let det = |c: &Vec<Vec<f64>>| {
        c[0][0] * (c[1][1] * c[2][2] - c[1][2] * c[2][1])
            - c[0][1] * (c[1][0] * c[2][2] - c[1][2] * c[2][0])
            + c[0][2] * (c[1][0] * c[2][1] - c[1][1] * c[2][0])
    };
    let w = [0.2, 0.8];
    let m = GaussianMixture::new(
        &w,
        &[vec![-12.0, 0.0, 1.0], vec![12.0, 0.0, -1.0]],
        &full(&covs),
    )
    .unwrap();
    let c: Vec<f64> = (0..2)
        .map(|k| -w[k].ln() + 3.0 * HALF_LN_2PI + 0.5 * det(&covs[k]).ln())
        .collect();
    let p = EnergyPartition::new(c[0].min(c[1]), 0.5, 30).unwrap();
    let method = ExactMethod::MonteCarlo { draws: 200_000 };
    for tau in [1.0, 2.0] {
        let raw: Vec<f64> = (0..2)
            .map(|k| w[k].powf(1.0 / tau) * det(&covs[k]).powf(0.5 * (1.0 - 1.0 / tau)))
            .collect();
        let v: Vec<f64> = raw.iter().map(|r| r / (raw[0] + raw[1])).collect();
        let modes = exact_masses::mode_masses(&m, tau, method).unwrap();
        // Wrong: the untempered masses (the weights).
        if tau != 1.0 {
            within_4_se(&modes, &v, &w, &format!("tau {tau} mode"));
        } else {
            within_4_se(&modes, &v, &[0.5, 0.5], "mode");
        }
        let cdf = |u: f64| -> f64 {
            (0..2)
                .map(|k| v[k] * chi2_cdf(3, 2.0 * (u - c[k]) / tau))
                .sum()
        };
        let upper = |j: usize| {
            if j + 1 == p.m {
                f64::INFINITY
            } else {
                p.u_min + (j + 1) as f64 * p.du
            }
        };
        let exact: Vec<f64> = (0..p.m)
            .map(|j| {
                let hi = if j + 1 == p.m { 1.0 } else { cdf(upper(j)) };
                let lo = if j == 0 { 0.0 } else { cdf(upper(j - 1)) };
                hi - lo
            })
            .collect();
        // Wrong: the bins of the other temperature's law.
        let other = 3.0 - tau;
        let wrong: Vec<f64> = (0..p.m)
            .map(|j| {
                let f = |u: f64| -> f64 {
                    (0..2)
                        .map(|k| v[k] * chi2_cdf(3, 2.0 * (u - c[k]) / other))
                        .sum()
                };
                let hi = if j + 1 == p.m { 1.0 } else { f(upper(j)) };
                let lo = if j == 0 { 0.0 } else { f(upper(j - 1)) };
                hi - lo
            })
            .collect();
        let bins = exact_masses::energy_bin_masses(&m, tau, method, &p).unwrap();
        // Bins with no mass have se 0; compare those exactly.
        let se = bins.se.clone().unwrap();
        let live: Vec<usize> = (0..p.m).filter(|&j| se[j] > 0.0).collect();
        for j in (0..p.m).filter(|j| !live.contains(j)) {
            assert!(
                exact[j] < 1e-5,
                "tau {tau}: empty bin {j} has exact mass {}",
                exact[j]
            );
        }
        let pick = |v: &[f64]| live.iter().map(|&j| v[j]).collect::<Vec<_>>();
        let sub = exact_masses::ExactMasses {
            masses: pick(&bins.masses),
            se: Some(pick(&se)),
            cdf_se: None,
            method,
        };
        within_4_se(
            &sub,
            &pick(&exact),
            &pick(&wrong),
            &format!("tau {tau} bin"),
        );
    }
}

#[test]
fn importance_weights_make_tempered_monte_carlo_agree_with_quadrature() {
    // Overlapping components, where the proposal q_tau is not pi_tau: at tau = 0.6 and 2.5 the
    // Monte Carlo masses of a 2-D mixture must match quadrature within 4 stated se.
    let means = vec![vec![-1.0, 0.0], vec![1.0, 0.5], vec![0.0, 2.0]];
    let covs = vec![
        vec![vec![1.0, 0.4], vec![0.4, 0.7]],
        vec![vec![0.3, 0.0], vec![0.0, 1.5]],
        vec![vec![2.0, -0.6], vec![-0.6, 0.5]],
    ];
    let w = [0.5, 0.3, 0.2];
    let m = GaussianMixture::new(&w, &means, &full(&covs)).unwrap();
    let quad = ExactMethod::for_potential(&m, 0).unwrap();
    assert!(matches!(quad, ExactMethod::Quadrature { .. }));
    for tau in [0.6, 2.5] {
        let exact = exact_masses::mode_masses(&m, tau, quad).unwrap().masses;
        let mc =
            exact_masses::mode_masses(&m, tau, ExactMethod::MonteCarlo { draws: 200_000 }).unwrap();
        // Ignoring the weights gives the proposal's own masses: those of the mixture with
        // weights v_k and covariances tau C_k, at temperature 1.
        let v: Vec<f64> = (0..3)
            .map(|k| {
                let d = covs[k][0][0] * covs[k][1][1] - covs[k][0][1] * covs[k][1][0];
                w[k].powf(1.0 / tau) * d.powf(0.5 * (1.0 - 1.0 / tau))
            })
            .collect();
        let scaled: Vec<Covariance> = covs
            .iter()
            .map(|c| {
                Covariance::Full(
                    c.iter()
                        .map(|r| r.iter().map(|x| tau * x).collect())
                        .collect(),
                )
            })
            .collect();
        let proposal = GaussianMixture::new(&v, &means, &scaled).unwrap();
        let unweighted = exact_masses::mode_masses(&proposal, 1.0, quad)
            .unwrap()
            .masses;
        within_4_se(&mc, &exact, &unweighted, &format!("tau {tau} mode"));
    }
}

#[test]
fn the_method_follows_the_dimension_and_the_grid() {
    let one = GaussianMixture::new(&[1.0], &[vec![0.0]], &[Covariance::Isotropic(1.0)]).unwrap();
    assert_eq!(
        ExactMethod::for_potential(&one, 10),
        Some(ExactMethod::Quadrature { grid: 200_000 })
    );
    // A 2-D component of sd 0.01 beside one of sd 10: the 1000-point grid's step (0.24) would
    // not resolve it, so Monte Carlo.
    let narrow = GaussianMixture::new(
        &[1.0, 1.0],
        &[vec![0.0, 0.0], vec![3.0, 0.0]],
        &[Covariance::Isotropic(0.01), Covariance::Isotropic(10.0)],
    )
    .unwrap();
    assert_eq!(
        ExactMethod::for_potential(&narrow, 10),
        Some(ExactMethod::MonteCarlo { draws: 10 })
    );
    let gaussian = crate::Gaussian::tridiagonal(3, 2.0, -0.5).unwrap();
    assert_eq!(ExactMethod::for_potential(&gaussian, 10), None);
}
