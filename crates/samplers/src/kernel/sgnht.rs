//! Stochastic gradient Nose-Hoover thermostat (Ding et al. 2014, Algorithm 1), in the
//! SGD-with-momentum parameterisation of [`super::sghmc`] (`v = p h`, `lr = h^2`) and with one
//! thermostat per parameter element:
//!
//! `v <- v - xi * v - lr psi g + sqrt(2 a lr tau) xi_noise ; x <- x + v ;`
//! `xi <- xi + v * v - lr tau`
//!
//! The friction `xi` adapts until the kinetic energy matches the temperature (`E v^2 = lr tau`),
//! so gradient noise of unknown size is absorbed by a larger friction instead of heating the
//! chain: with minibatch noise of variance `sigma^2` per gradient element, `xi` settles near
//! `a + lr sigma^2 / (2 tau)`. `a` (Ding et al.'s `A h`) is the friction the thermostat rests at
//! without gradient noise. The stationary density of the continuous dynamics is
//! `exp(-U / tau - |p|^2 / (2 tau) - sum_i (xi_i - a)^2 / (2 tau h))` per element, so the
//! `x`-marginal is the target; the per-element thermostat (instead of Ding et al.'s scalar
//! `p^T p / n`) keeps the update element-wise, and the invariance argument is the same one
//! coordinate at a time.
//!
//! The state holds `v` and `s = xi - a` (so that the zero-initialised state starts at rest).

use super::Coefs;
use super::lane::Lane;

/// Updates the velocity `v` and the thermostat offset `s = xi - a`, and returns the new `x`;
/// `c.drift = -lr psi`, `c.diffusion = sqrt(2 a lr tau)`, `c.thermostat = -lr tau`.
#[inline]
pub fn update<L: Lane>(
    x: L,
    g: L,
    v: &mut L,
    s: &mut L,
    mut noise: impl FnMut() -> L,
    friction: f64,
    c: &Coefs<L::Coef>,
) -> L {
    let xi = s.copy().add_scalar(friction);
    let drag = v.copy().mul(&xi).scale_by(-1.0);
    let new_v = v
        .copy()
        .add(drag)
        .add(g.scale(&c.drift))
        .add(noise().scale(&c.diffusion));
    let kinetic = new_v.copy().mul(&new_v);
    *s = s.copy().add(kinetic).add_coef(&c.thermostat);
    *v = new_v.copy();
    x.add(new_v)
}
