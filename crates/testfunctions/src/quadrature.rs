//! Exact expectations under `pi(x) ∝ exp(-U(x) / tau)` by midpoint quadrature on the target's
//! support box, for 1-D and 2-D toys: exact mode masses, means, energy histograms.

use crate::Potential;
use sgmcmc_samplers::error::TargetError;

/// The lowest energy of `potential` found on a grid over its support (1-D: 20,000 midpoints,
/// 2-D: 400 x 400), at the points `starts`, and, above 2-D or without a support, at its mode
/// centres (a mixture's means come close to it where no grid goes): where a contour sampler's
/// default energy partition starts.
pub fn lowest_energy(potential: &dyn Potential, starts: &[Vec<f64>]) -> f64 {
    let p = potential;
    let at_starts = starts
        .iter()
        .map(|x| p.energy(x))
        .fold(f64::INFINITY, f64::min);
    let at_centres = p.modes().map_or(f64::INFINITY, |m| {
        m.centres()
            .iter()
            .map(|c| p.energy(c))
            .fold(f64::INFINITY, f64::min)
    });
    let Some(support) = p.support().filter(|s| s.len() <= 2) else {
        return at_starts.min(at_centres);
    };
    let n = if support.len() == 1 { 20_000 } else { 400 };
    let mut umin = at_starts;
    let _ = visit_grid(p, 1.0, n, |x, _| umin = umin.min(p.energy(x)));
    umin
}

/// Calls `visit(x, w)` for every midpoint `x` of an `n^d` grid on the support, with normalised
/// weights `w` (summing to 1) proportional to `exp(-U(x) / tau)`.
pub fn visit_grid(
    potential: &dyn Potential,
    tau: f64,
    n: usize,
    mut visit: impl FnMut(&[f64], f64),
) -> Result<(), TargetError> {
    let support = potential.support().ok_or_else(|| {
        TargetError::Shape("this target has no support box for quadrature".into())
    })?;
    let d = support.len();
    if d == 0 || d > 2 || n == 0 {
        return Err(TargetError::Shape(format!(
            "quadrature supports 1-D and 2-D targets (got d = {d})"
        )));
    }
    if !(tau.is_finite() && tau > 0.0) {
        return Err(TargetError::InvalidParameter {
            name: "temperature",
            value: tau.to_string(),
            reason: "must be finite and > 0",
        });
    }
    let total = n.pow(d as u32);
    let point = |i: usize, x: &mut [f64]| {
        let mut r = i;
        for (k, (lo, hi)) in support.iter().enumerate().rev() {
            x[k] = lo + (hi - lo) * ((r % n) as f64 + 0.5) / n as f64;
            r /= n;
        }
    };
    let mut x = vec![0.0; d];
    let mut umin = f64::INFINITY;
    for i in 0..total {
        point(i, &mut x);
        umin = umin.min(potential.energy(&x));
    }
    let mut z = 0.0;
    for i in 0..total {
        point(i, &mut x);
        z += (-(potential.energy(&x) - umin) / tau).exp();
    }
    for i in 0..total {
        point(i, &mut x);
        visit(&x, (-(potential.energy(&x) - umin) / tau).exp() / z);
    }
    Ok(())
}

/// Exact probability mass of each mode at temperature `tau`.
pub fn mode_masses(potential: &dyn Potential, tau: f64, n: usize) -> Result<Vec<f64>, TargetError> {
    let modes = potential
        .modes()
        .ok_or_else(|| TargetError::Shape("this target has no named modes".into()))?;
    let mut masses = vec![0.0; modes.n_modes()];
    visit_grid(potential, tau, n, |x, w| masses[modes.mode_of(x)] += w)?;
    Ok(masses)
}

/// Exact mean at temperature `tau`.
pub fn mean(potential: &dyn Potential, tau: f64, n: usize) -> Result<Vec<f64>, TargetError> {
    let mut m = vec![0.0; potential.dim()];
    visit_grid(potential, tau, n, |x, w| {
        for (mi, xi) in m.iter_mut().zip(x) {
            *mi += w * xi;
        }
    })?;
    Ok(m)
}

/// Grid size per dimension giving a quadrature error far below any Monte Carlo error we test
/// against: 200,000 points in 1-D, 1000 x 1000 in 2-D.
pub fn default_grid(potential: &dyn Potential) -> usize {
    if potential.dim() == 1 { 200_000 } else { 1000 }
}

#[cfg(test)]
mod lowest_energy_tests {
    use super::lowest_energy;

    #[test]
    fn the_lowest_energy_is_the_grids_or_a_starts() {
        // 0.4 N(-6, 1) + 0.6 N(4, 1): the 20,000-point grid's minimum is within (h / 2)^2 U'' / 2
        // of the true one (U'' ~ 1 at the mode, h the grid's spacing), so within h^2 of a grid
        // ten times finer.
        let t = crate::by_name("mixture-csgld").unwrap();
        let p = t.potential();
        let (lo, hi) = p.support().unwrap()[0];
        let fine = (0..200_000)
            .map(|i| p.energy(&[lo + (i as f64 + 0.5) * (hi - lo) / 2e5]))
            .fold(f64::INFINITY, f64::min);
        let h = (hi - lo) / 20_000.0;
        let u = lowest_energy(p, &[]);
        assert!(u >= fine - h * h && u - fine < h * h, "{u} vs {fine}");
        // A start above the minimum changes nothing; without a support (10-d Gaussian) the
        // lowest energy is the starts'.
        assert_eq!(lowest_energy(p, &[vec![0.0]]), u);
        let g = crate::by_name("gaussian").unwrap();
        let x = vec![0.3; 10];
        let y = vec![0.1; 10];
        let want = g.potential().energy(&x).min(g.potential().energy(&y));
        assert_eq!(lowest_energy(g.potential(), &[x, y]), want);
    }
}
