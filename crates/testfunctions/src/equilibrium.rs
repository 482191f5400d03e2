//! The equilibrium `theta` of a contour sampler on a finite partition, by quadrature (1-D and
//! 2-D toys): the exact answer its stochastic approximation converges to, finite-bin bias
//! included.
//!
//! With `theta` held fixed, the sampler's dynamics leave `varpi_theta(x) ∝ pi(x) /
//! Psi_theta(U(x))^zeta` invariant (the multiplier integrates to `Psi_theta`, CSGLD paper eq. 5;
//! [`ContourTheta::log_flattening`]). Write `A_i(theta) = varpi_theta(X_i)` for the flattened
//! mass of energy bin `i`. The random field's mean under `varpi_theta` vanishes at
//!
//! * `Power` (CSGLD eq. 9): `theta_i = theta_i^zeta A_i / sum_j theta_j^zeta A_j`;
//! * `Cumulative` (thesis eq. 7.5): `theta_i = sum_(j <= i) theta_j A_j / sum_j theta_j A_j`.
//!
//! With `Psi_theta` constant on each bin (`A_i ∝ pi_i theta_i^-zeta`) the first gives the bin
//! masses `pi_i` exactly and the second, at `zeta = 1`, the energy CDF; across a bin `Psi_theta` moves by `theta[J+1] / theta[J]`, and the solution differs
//! from them by the finite-bin bias that [`super::energy_bins`] describes. This module solves the
//! equations by damped fixed-point iteration in `ln theta`. The continuous-time law is the
//! reference: a chain whose step `lr psi` is not small against the bin's energy scale sees a
//! further discretisation bias, which tests keep below their Monte Carlo error.
//!
//! The interacting field (ICSGLD) is not offered: its equilibrium flattens the energy histogram
//! completely, `theta` then spans many orders of magnitude across the barrier bins, and the
//! discrete-time chain (multipliers far from 1) does not follow `varpi_theta` there.

use crate::Potential;
use crate::quadrature::visit_grid;
use sgmcmc_samplers::control::{
    ContourTheta, EnergyPartition, MultiplierScheme, RandomField, ThetaInit,
};
use sgmcmc_samplers::error::TargetError;

/// Fixed-point iterations before giving up.
const MAX_ITERATIONS: usize = 20_000;

/// Converged when no `ln theta_i` of a bin with flattened mass moves by more than this.
const TOLERANCE: f64 = 1e-11;

/// The equilibrium `theta` of `field` with tuning parameter `zeta` on `partition` for
/// `pi ∝ exp(-U / tau)`, by quadrature on an `n^d` grid (see the module docs). Errors for the
/// interacting field, for targets without a support box, and when the iteration does not
/// converge.
pub fn theta_equilibrium(
    potential: &dyn Potential,
    tau: f64,
    n: usize,
    partition: &EnergyPartition,
    field: RandomField,
    zeta: f64,
    scheme: MultiplierScheme,
) -> Result<Vec<f64>, TargetError> {
    if field == RandomField::Interacting {
        return Err(TargetError::InvalidParameter {
            name: "field",
            value: "interacting".into(),
            reason: "the interacting field's equilibrium is not offered (see the module docs)",
        });
    }
    let invalid = |reason| TargetError::InvalidParameter {
        name: "theta_equilibrium",
        value: format!("zeta {zeta}, {} bins", partition.m),
        reason,
    };
    // Grid points by bin: (offset inside the bin, normalised pi weight).
    let m = partition.m;
    let mut points: Vec<Vec<(f64, f64)>> = vec![Vec::new(); m];
    visit_grid(potential, tau, n, |x, w| {
        let u = potential.energy(x);
        let j = partition.bin(u);
        points[j].push((partition.offset(j, u), w));
    })?;
    let init = match field {
        RandomField::Cumulative => ThetaInit::Increasing,
        _ => ThetaInit::Uniform,
    };
    let build = |init: &ThetaInit| {
        ContourTheta::new(m, field, zeta, init, scheme, None)
            .map_err(|_| invalid("theta left the positive numbers"))
    };
    let mut theta = build(&init)?;
    let mut flat = vec![0.0; m];
    for _ in 0..MAX_ITERATIONS {
        // A_i up to a constant (the ratios below do not need it).
        for (a, (j, pts)) in flat.iter_mut().zip(points.iter().enumerate()) {
            *a = pts
                .iter()
                .map(|&(off, w)| w * (-theta.log_flattening(j, off)).exp())
                .sum();
        }
        let old = theta.theta();
        let c: Vec<f64> = (0..m)
            .map(|i| match field {
                RandomField::Power => old[i].powf(zeta),
                _ => old[i],
            } * flat[i])
            .collect();
        let total: f64 = c.iter().sum();
        if !(total.is_finite() && total > 0.0) {
            return Err(invalid("the flattened law has no finite mass on the grid"));
        }
        let target: Vec<f64> = match field {
            RandomField::Cumulative => c
                .iter()
                .scan(0.0, |s, v| {
                    *s += v;
                    Some(*s / total)
                })
                .collect(),
            _ => c.iter().map(|v| v / total).collect(),
        };
        // Half a step in ln theta (the undamped map oscillates for zeta near 1).
        let next: Vec<f64> = old
            .iter()
            .zip(&target)
            .map(|(o, t)| (o.sqrt() * t.sqrt()).max(f64::MIN_POSITIVE))
            .collect();
        let moved = (0..m)
            .filter(|&i| flat[i] > 0.0)
            .map(|i| (next[i].ln() - old[i].ln()).abs())
            .fold(0.0, f64::max);
        theta = build(&ThetaInit::Given(next))?;
        if moved < TOLERANCE {
            return Ok(theta.theta().to_vec());
        }
    }
    Err(invalid("the fixed-point iteration did not converge"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Mixture1d;
    use crate::energy_bins::energy_bin_masses;

    /// N(0,1) with `m` bins of `du` from its minimum: the exact bin masses and the equilibrium
    /// of `field` at `zeta` (backward multiplier, a 20,000-point grid).
    fn normal(du: f64, m: usize, field: RandomField, zeta: f64) -> (Vec<f64>, Vec<f64>) {
        let normal = Mixture1d::new(&[(1.0, 0.0, 1.0)]).unwrap();
        let p = EnergyPartition::new(normal.energy(&[0.0]), du, m).unwrap();
        let masses = energy_bin_masses(&normal, 1.0, 20_000, &p).unwrap();
        let eq = theta_equilibrium(
            &normal,
            1.0,
            20_000,
            &p,
            field,
            zeta,
            MultiplierScheme::Backward,
        );
        (masses, eq.unwrap())
    }

    #[test]
    fn without_flattening_the_power_equilibrium_is_the_bin_masses() {
        // zeta = 0: varpi = pi and the power field's equilibrium is pi_i, to rounding.
        let (masses, power) = normal(0.5, 12, RandomField::Power, 0.0);
        for i in 0..12 {
            assert!((power[i] - masses[i]).abs() < 1e-9, "{i}");
        }
    }

    #[test]
    fn the_finite_bin_bias_shrinks_with_the_bin_width() {
        // N(0,1), power field at zeta 0.5: unit bins move theta's running sums away from the
        // exact ones by 0.064 at most, bins of 1/16 by 0.014 (about sqrt(du) here, where the
        // energy density is singular at the minimum).
        let bias = |du: f64, m: usize| {
            let (masses, eq) = normal(du, m, RandomField::Power, 0.5);
            let mut run = (0.0, 0.0);
            (0..m)
                .map(|i| {
                    run.0 += masses[i];
                    run.1 += eq[i];
                    (run.1 - run.0).abs()
                })
                .fold(0.0, f64::max)
        };
        let (coarse, fine) = (bias(1.0, 12), bias(0.0625, 192));
        assert!(coarse > 0.03, "coarse {coarse}");
        assert!(fine < 0.5 * coarse, "coarse {coarse}, fine {fine}");
    }

    #[test]
    fn the_cumulative_equilibrium_is_a_distribution_function_near_the_cdf() {
        // Unit bins on N(0,1) at zeta 1: increasing to 1, within 0.01 of the energy CDF
        // (computed: 0.0086 at most, in the lowest bins).
        let (masses, eq) = normal(1.0, 12, RandomField::Cumulative, 1.0);
        assert!(eq.windows(2).all(|w| w[0] <= w[1]));
        assert!((eq[11] - 1.0).abs() < 1e-12);
        let mut cdf = 0.0;
        for (i, (e, m)) in eq.iter().zip(&masses).enumerate() {
            cdf += m;
            assert!((e - cdf).abs() < 0.01, "bin {i}: {e} vs {cdf}");
        }
    }

    #[test]
    fn the_interacting_field_is_refused() {
        let normal = Mixture1d::new(&[(1.0, 0.0, 1.0)]).unwrap();
        let p = EnergyPartition::new(0.0, 1.0, 4).unwrap();
        let r = theta_equilibrium(
            &normal,
            1.0,
            100,
            &p,
            RandomField::Interacting,
            0.5,
            MultiplierScheme::Backward,
        );
        assert!(r.is_err());
    }
}
