//! Exact probability mass of each energy bin, by quadrature (1-D and 2-D toys): the fixed points
//! the contour samplers' `theta` estimates (`power`: the masses; `interacting`: masses^(1/zeta),
//! normalised; `cumulative` with `zeta = 1`: their running sums, the energy CDF).
//!
//! With a finite bin width the samplers converge to a biased equilibrium: the dynamics flatten by
//! `Psi_theta(U)`, which changes inside a bin, while the random field counts visits per bin (the
//! CSGLD paper's O(1/m) term; the ICSGLD reference code calls it "a biased equilibrium that
//! approximates the ground truth"). Tests allow for it explicitly.

use crate::Potential;
use crate::quadrature::visit_grid;
use sgmcmc_samplers::control::EnergyPartition;
use sgmcmc_samplers::error::TargetError;

/// Probability mass of each energy bin of `partition` under `pi ∝ exp(-U / tau)`.
pub fn energy_bin_masses(
    potential: &dyn Potential,
    tau: f64,
    n: usize,
    partition: &EnergyPartition,
) -> Result<Vec<f64>, TargetError> {
    let mut masses = vec![0.0; partition.m];
    visit_grid(potential, tau, n, |x, w| {
        masses[partition.bin(potential.energy(x))] += w;
    })?;
    Ok(masses)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Mixture1d;
    use crate::test_math::chi2_cdf;

    #[test]
    fn bin_masses_sum_to_one_and_match_the_gaussian_energy_law() {
        // For N(0,1), U = x^2/2 + c, so P(U - c <= v) = P(chi2_1 <= 2 v) = erf(sqrt(v)).
        let normal = Mixture1d::new(&[(1.0, 0.0, 1.0)]).unwrap();
        let c = normal.energy(&[0.0]);
        let p = EnergyPartition::new(c, 0.5, 8).unwrap();
        let masses = energy_bin_masses(&normal, 1.0, 200_000, &p).unwrap();
        assert!((masses.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        let mut cdf = 0.0;
        for (i, mi) in masses.iter().enumerate().take(7) {
            cdf += mi;
            let v: f64 = 0.5 * (i + 1) as f64;
            let exact = chi2_cdf(1, 2.0 * v);
            assert!((cdf - exact).abs() < 1e-4, "bin {i}: {cdf} vs {exact}");
        }
    }
}
