//! BAOAB Langevin splitting (Leimkuhler & Matthews 2013, "Rational construction of stochastic
//! numerical methods for molecular sampling"), the underdamped Langevin integrator that
//! splits a step into half kicks (B), half drifts (A) and an exact Ornstein-Uhlenbeck step of
//! the momentum (O), in the SGD-with-momentum units of [`super::sghmc`] (`v = p h`,
//! `lr = h^2`):
//!
//! `B: v <- v - (lr / 2) psi g ; A: x <- x + v / 2 ; O: v <- mu v + sqrt(lr tau (1 - mu^2)) xi ;`
//! `A: x <- x + v / 2 ; B: v <- v - (lr / 2) psi g(x)`
//!
//! with `mu = exp(-gamma h)` the momentum kept by the O step (friction `gamma`). The last kick
//! of a step and the first of the next use the same gradient, at the new point, so a step
//! costs one gradient like every other kernel: the state holds the velocity `w` after the
//! second A, and a step is
//!
//! `v <- w - lr psi g ; x <- x + v / 2 ; v <- mu v + sqrt(lr tau (1 - mu^2)) xi ; x <- x + v / 2 ;`
//! `w <- v`.
//!
//! Why it is here: on a Gaussian target with exact gradients its position law is *exact* at
//! every stable step size (`lr < 4 sigma^2`), where SGLD's variance is `sigma^2 / (1 - lr / (2
//! sigma^2))` (twice the target at `lr = sigma^2`), and in general its configurational error
//! is of second order in `h` with a small constant (Leimkuhler and Matthews' analysis). With
//! stochastic gradients the exactness is lost: the gradient noise heats the chain as it heats
//! the other kernels (SGHMC's `noise_estimate` has no counterpart here). At stationarity on a Gaussian the stored velocity lags the position
//! by `E[w | x] = (lr / 2) grad U(x)` whatever `mu` (the discrete Lyapunov equation), the lag
//! replica exchange shifts by. `mu = 0` is Leimkuhler and Matthews' high-friction limit,
//! `x <- x - (lr / 2) psi g + sqrt(lr tau) (xi_k + xi_(k+1)) / 2`.
//! `tests/gaussian_laws.rs` checks the exact law at `lr = 1` on a 10-d Gaussian whose precision
//! has eigenvalues in `[1, 3]` (where SGLD, stable below `lr = 2/3`, runs away), on the host
//! and on every device.

use super::Coefs;
use super::lane::Lane;

/// Updates the stored velocity `w` and returns the new `x`; `c.drift = -lr psi`,
/// `c.diffusion = sqrt(lr tau (1 - mu^2))`.
#[inline]
pub fn update<L: Lane>(
    x: L,
    g: L,
    w: &mut L,
    mut noise: impl FnMut() -> L,
    mu: f64,
    c: &Coefs<L::Coef>,
) -> L {
    let kicked = w.copy().add(g.scale(&c.drift));
    let x = x.add(kicked.copy().scale_by(0.5));
    let v = kicked.scale_by(mu).add(noise().scale(&c.diffusion));
    *w = v.copy();
    x.add(v.scale_by(0.5))
}
