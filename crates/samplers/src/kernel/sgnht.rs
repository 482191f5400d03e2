//! Stochastic gradient Nose-Hoover thermostat (Ding et al. 2014, Algorithm 1), in the
//! SGD-with-momentum parameterisation of [`super::sghmc`] (`v = p h`, `lr = h^2`) and with one
//! thermostat per parameter element:
//!
//! `v <- v - xi * v - lr psi g + sqrt(2 a lr tau) xi_noise ; x <- x + v ;`
//! `xi <- xi + v * v - 2 lr tau / (2 - xi)`
//!
//! The friction `xi` adapts until the kinetic energy matches the temperature, so gradient noise
//! of unknown size is absorbed by a larger friction instead of heating the chain: with minibatch
//! noise of variance `sigma^2` per gradient element, `xi` settles near `a + lr sigma^2 /
//! (2 tau)`. The kinetic target is that of the *discrete* chain: for `v <- (1 - xi) v + noise`
//! the stationary `E v^2` is `2 lr tau / (2 - xi)` (1.053 `lr tau` at `xi = 0.1`), not the
//! continuous `lr tau`; Ding et al.'s `p^T p / n - 1` in these units would hold `E v^2` at
//! `lr tau` and cool the position law by `1 - xi / 2` (a variance 5% low at `xi = 0.1`, seen
//! in `tests/sgnht.rs` before this correction). `a` (Ding et al.'s `A h`) is the friction the thermostat rests at
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
/// `c.drift = -lr psi`, `c.diffusion = sqrt(2 a lr tau)`, `c.thermostat = -2 lr tau`.
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
    let target = xi
        .scale_by(-1.0)
        .add_scalar(2.0)
        .recip()
        .scale(&c.thermostat);
    *s = s.copy().add(kinetic).add(target);
    *v = new_v.copy();
    x.add(new_v)
}
