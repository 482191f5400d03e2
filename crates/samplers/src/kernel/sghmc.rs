//! Stochastic gradient Hamiltonian Monte Carlo (Chen et al. 2014, in the SGD-with-momentum
//! parameterisation of the reference code):
//!
//! `v <- mu v - lr psi g + sqrt(2 lr (1 - mu - beta) tau) xi ; x <- x + v`
//!
//! with friction `1 - mu` and noise-estimate term `beta = V lr / 2` (`beta <= 1 - mu`, checked).
//! Optionally the momentum is resampled every `K` steps from the stationary law of the
//! *discrete* chain given the position: `v = lr psi / (1 + mu) g + sqrt(2 lr tau / (1 + mu))
//! xi`. The velocity `v_k = x_k - x_(k-1)` lags half a step behind the position, so at
//! stationarity `E[v | x] = lr / (1 + mu) grad U(x)`, and `v <- mu v + e` with `Var e = 2 lr
//! (1 - mu) tau` (injected plus estimated gradient noise) leaves the conditional variance `2
//! lr tau / (1 + mu)` (1.053 `lr tau` at `mu = 0.9`; both exact on a Gaussian, from the
//! discrete Lyapunov equation). Drawn from the continuous law `N(0, lr tau)` instead, a refresh
//! every 5 steps left N(0, 1)'s variance at 0.86 (`tests/sghmc_refresh.rs`).
//! The recursion of `(x, v)` is linear on a Gaussian target; the tests solve the discrete
//! Lyapunov equation for its exact stationary covariance.

use super::Coefs;
use super::lane::Lane;

/// `beta = V lr / 2`.
pub fn beta(noise_estimate: f64, lr: f64) -> f64 {
    0.5 * noise_estimate * lr
}

/// Updates the velocity `v` and returns the new `x`; `c.drift = -lr psi`,
/// `c.diffusion = sqrt(2 lr (1-mu-beta) tau)`, `c.refresh = sqrt(2 lr tau / (1 + mu))`; a
/// refresh draws `v = -c.drift / (1 + mu) g + c.refresh xi`.
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
        // The velocity lags half a step behind x: E[v | x] = lr psi / (1 + mu) g.
        let lag = g.copy().scale(&c.drift).scale_by(-1.0 / (1.0 + mu));
        *v = lag.add(noise().scale(&c.refresh));
    }
    let new_v = v
        .copy()
        .scale_by(mu)
        .add(g.scale(&c.drift))
        .add(noise().scale(&c.diffusion));
    *v = new_v.copy();
    x.add(new_v)
}
