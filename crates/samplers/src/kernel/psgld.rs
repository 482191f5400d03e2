//! Preconditioned SGLD (Li et al. 2016, RMSprop preconditioner):
//!
//! `V <- a V + (1 - a) g * g ; G = 1 / (lambda + sqrt(V)) ;`
//! `x <- x - lr psi G * g + sqrt(2 lr tau G) xi`
//!
//! The correction term `Gamma` is omitted, as in practice and in the reference code, so the chain
//! targets the posterior only as `lr -> 0` with a `G` that varies slowly compared with the
//! chain: on a 10-d Gaussian whose relaxation time is ~700 steps, `a = 0.999` inflated the
//! variances by 16% and `a = 0.99999` by < 1% (tests/gaussian_laws.rs). `V` starts at 0 (Li et
//! al.): a chain started where the gradient vanishes takes a first step with `G = 1 / lambda`,
//! i.e. noise of scale `sqrt(2 lr tau / lambda)`; start chains away from stationary points or
//! raise `lambda`.

use super::lane::Lane;

/// Updates the squared-gradient average `v_sq` and returns the new `x`;
/// `drift = -lr psi`, `diffusion = sqrt(2 lr tau)`.
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn update<L: Lane>(
    x: L,
    g: L,
    v_sq: &mut L,
    mut noise: impl FnMut() -> L,
    alpha: f64,
    lambda: f64,
    drift: &L::Coef,
    diffusion: &L::Coef,
) -> L {
    let g2 = g.copy().mul(&g);
    let new_v = v_sq.copy().scale_by(alpha).add(g2.scale_by(1.0 - alpha));
    let precond = new_v.copy().sqrt().add_scalar(lambda).recip();
    *v_sq = new_v;
    let step = g.mul(&precond).scale(drift);
    let kick = noise().mul(&precond.sqrt()).scale(diffusion);
    x.add(step).add(kick)
}
