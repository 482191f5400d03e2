//! Stochastic gradient Hamiltonian Monte Carlo (Chen et al. 2014, in the SGD-with-momentum
//! parameterisation of the reference code):
//!
//! `v <- mu v - lr psi g + sqrt(2 lr (1 - mu - beta) tau) xi ; x <- x + v`
//!
//! with friction `1 - mu` and noise-estimate term `beta = V lr / 2` (`beta <= 1 - mu`, checked).
//! Optionally the momentum is resampled from its stationary law `N(0, lr tau)` every `K` steps.
//! The recursion of `(x, v)` is linear on a Gaussian target; the tests solve the discrete
//! Lyapunov equation for its exact stationary covariance.

use super::Coefs;
use super::lane::Lane;

/// `beta = V lr / 2`.
pub fn beta(noise_estimate: f64, lr: f64) -> f64 {
    0.5 * noise_estimate * lr
}

/// Updates the velocity `v` and returns the new `x`; `c.drift = -lr psi`,
/// `c.diffusion = sqrt(2 lr (1-mu-beta) tau)`, `c.refresh = sqrt(lr tau)`.
#[inline]
pub fn update<L: Lane>(
    x: L,
    g: L,
    v: &mut L,
    mut noise: impl FnMut() -> L,
    mu: f64,
    c: &Coefs<L::Coef>,
    refresh: bool,
) -> L {
    if refresh {
        *v = noise().scale(&c.refresh);
    }
    let new_v = v
        .copy()
        .scale_by(mu)
        .add(g.scale(&c.drift))
        .add(noise().scale(&c.diffusion));
    *v = new_v.copy();
    x.add(new_v)
}
