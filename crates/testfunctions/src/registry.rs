//! Toy targets by name, with the papers' default noise.

use std::sync::Arc;

use crate::noise::{Noise, NoiseModel};
use crate::trig_modes::{NineMode, TwentyFiveMode};
use crate::{Gaussian, Mixture1d, Potential, Rugged, ToyTarget};
use sgmcmc_samplers::error::TargetError;

/// Every registered toy target with a one-line description.
pub const TARGET_NAMES: &[(&str, &str)] = &[
    (
        "gaussian",
        "10-d Gaussian, tridiagonal precision (2 on the diagonal, -0.5 beside it), exact gradients",
    ),
    (
        "bimodal",
        "0.4 N(-1.5,1) + 0.6 N(1.5,1): two modes, low barrier, exact gradients",
    ),
    (
        "mixture-csgld",
        "0.4 N(-6,1) + 0.6 N(4,1) (CSGLD sec. 4.1), gradient noise N(0, 0.01)",
    ),
    (
        "mixture-resgld-1",
        "0.4 N(-3,0.7^2) + 0.6 N(2,0.5^2) (thesis 2.5.1), energy noise N(0, 2^2)",
    ),
    (
        "mixture-resgld-2",
        "0.4 N(-4,0.7^2) + 0.6 N(3,0.5^2) (thesis 2.5.1), energy noise t(5)",
    ),
    (
        "mixture-resgld-3",
        "0.4 N(-6,0.7^2) + 0.6 N(4,0.5^2) (thesis 2.5.1), energy noise 7 t(10)",
    ),
    (
        "normal",
        "N(0,1) (thesis 7.2.1, AWSGLD CDF estimation), gradient noise N(0, 0.1^2)",
    ),
    (
        "mixture-awsgld",
        "0.4 N(-2,1) + 0.6 N(1,1) (thesis 7.2.1), gradient noise N(0, 0.1^2)",
    ),
    (
        "nine-mode",
        "2-D 9-mode target (CSGLD 4.1, supplement D.3), energy and gradient noise variance 0.1",
    ),
    (
        "twenty-five-mode",
        "2-D 25-mode target (thesis 4.5.1, E.4.2), energy and gradient noise sd 0.1",
    ),
    (
        "rugged",
        "2-D rugged landscape on [-1.1,1.1]^2 (thesis 7.2.2), exact gradients",
    ),
];

/// The registered target `name`, with its default noise.
pub fn by_name(name: &str) -> Result<ToyTarget, TargetError> {
    let both = |sd: f64| NoiseModel {
        energy: Noise::gaussian(sd),
        gradient: Noise::gaussian(sd),
    };
    let energy_only = |n: Noise| NoiseModel {
        energy: n,
        gradient: Noise::NONE,
    };
    let (potential, noise): (Arc<dyn Potential>, NoiseModel) = match name {
        "gaussian" => (
            Arc::new(Gaussian::tridiagonal(10, 2.0, -0.5)?),
            NoiseModel::EXACT,
        ),
        "bimodal" => (
            Arc::new(Mixture1d::new(&[(0.4, -1.5, 1.0), (0.6, 1.5, 1.0)])?),
            NoiseModel::EXACT,
        ),
        "mixture-csgld" => (
            Arc::new(Mixture1d::new(&[(0.4, -6.0, 1.0), (0.6, 4.0, 1.0)])?),
            NoiseModel::gradient(0.1),
        ),
        "mixture-resgld-1" => (
            Arc::new(Mixture1d::new(&[(0.4, -3.0, 0.7), (0.6, 2.0, 0.5)])?),
            energy_only(Noise::gaussian(2.0)),
        ),
        "mixture-resgld-2" => (
            Arc::new(Mixture1d::new(&[(0.4, -4.0, 0.7), (0.6, 3.0, 0.5)])?),
            energy_only(Noise::student_t(1.0, 5.0)),
        ),
        "mixture-resgld-3" => (
            Arc::new(Mixture1d::new(&[(0.4, -6.0, 0.7), (0.6, 4.0, 0.5)])?),
            energy_only(Noise::student_t(7.0, 10.0)),
        ),
        "normal" => (
            Arc::new(Mixture1d::new(&[(1.0, 0.0, 1.0)])?),
            NoiseModel::gradient(0.1),
        ),
        "mixture-awsgld" => (
            Arc::new(Mixture1d::new(&[(0.4, -2.0, 1.0), (0.6, 1.0, 1.0)])?),
            NoiseModel::gradient(0.1),
        ),
        "nine-mode" => (Arc::new(NineMode::new()), both(0.1f64.sqrt())),
        "twenty-five-mode" => (Arc::new(TwentyFiveMode::new()), both(0.1)),
        "rugged" => (Arc::new(Rugged), NoiseModel::EXACT),
        other => {
            return Err(TargetError::Unknown {
                what: "target",
                name: other.to_string(),
                known: TARGET_NAMES
                    .iter()
                    .map(|t| t.0)
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
    };
    ToyTarget::new(name, potential, noise)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quadrature::{default_grid, mode_masses};

    #[test]
    fn every_name_builds_and_unknown_names_fail() {
        for (name, _) in TARGET_NAMES {
            let t = by_name(name).unwrap();
            assert_eq!(t.name(), *name);
        }
        let err = by_name("nope").unwrap_err().to_string();
        assert!(err.contains("known:") && err.contains("nine-mode"), "{err}");
    }

    #[test]
    fn gradients_match_finite_differences() {
        // Central differences with h = 1e-6 have error O(h^2 U''') + O(eps U / h) ~ 1e-8 relative
        // for these smooth energies; 1e-5 absolute (relative for large gradients) is ample.
        let points: &[&[f64]] = &[&[0.3], &[-2.2], &[0.37, -1.21], &[2.9, 1.7], &[0.51, -0.83]];
        for (name, _) in TARGET_NAMES {
            let t = by_name(name).unwrap();
            let p = t.potential();
            for x in points.iter().filter(|x| x.len() == p.dim().min(2)) {
                let mut x = x.to_vec();
                x.resize(p.dim(), 0.25);
                let mut g = vec![0.0; p.dim()];
                p.energy_grad(&x, &mut g);
                for i in 0..p.dim() {
                    let h = 1e-6;
                    let (mut xp, mut xm) = (x.clone(), x.clone());
                    xp[i] += h;
                    xm[i] -= h;
                    let fd = (p.energy(&xp) - p.energy(&xm)) / (2.0 * h);
                    let tol = 1e-5 * (1.0 + fd.abs());
                    assert!(
                        (fd - g[i]).abs() < tol,
                        "{name} at {x:?}: d{i} {} vs fd {fd}",
                        g[i]
                    );
                }
            }
        }
    }

    #[test]
    fn nine_mode_exact_masses_match_the_paper() {
        // The paper rounds to three decimals: centre 0.307, edges 0.124, corners 0.049.
        let t = by_name("nine-mode").unwrap();
        let m = mode_masses(t.potential(), 1.0, default_grid(t.potential())).unwrap();
        assert!((m.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!((m[4] - 0.307).abs() < 0.0015, "centre {}", m[4]);
        for e in [1, 3, 5, 7] {
            assert!((m[e] - 0.124).abs() < 0.0015, "edge {e}: {}", m[e]);
        }
        for c in [0, 2, 6, 8] {
            assert!((m[c] - 0.049).abs() < 0.0015, "corner {c}: {}", m[c]);
        }
    }

    #[test]
    fn mixture_masses_are_the_weights_when_well_separated() {
        // 0.4 N(-6,1) + 0.6 N(4,1): the boundary sits ~5 sd from both means, so each basin
        // holds its component's weight up to ~3e-7.
        let t = by_name("mixture-csgld").unwrap();
        let m = mode_masses(t.potential(), 1.0, default_grid(t.potential())).unwrap();
        assert!(
            (m[0] - 0.4).abs() < 1e-5 && (m[1] - 0.6).abs() < 1e-5,
            "{m:?}"
        );
    }
}
