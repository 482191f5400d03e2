//! Stochastic gradient Langevin dynamics (Welling & Teh 2011; thesis eq. 2.7):
//! `x <- x - lr psi g + sqrt(2 lr tau) xi`.
//!
//! On `U = x^T A x / 2` the chain is linear and its exact stationary law is
//! `N(0, tau (A (I - lr A / 2))^-1)`, the discretised law the tests check against.

use super::lane::Lane;

/// `x + drift g + diffusion xi` with `drift = -lr psi`, `diffusion = sqrt(2 lr tau)`.
#[inline]
pub fn update<L: Lane>(
    x: L,
    g: L,
    mut noise: impl FnMut() -> L,
    drift: &L::Coef,
    diffusion: &L::Coef,
) -> L {
    x.add(g.scale(drift)).add(noise().scale(diffusion))
}
