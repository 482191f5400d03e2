//! Stochastic gradient Nose-Hoover thermostat (Ding et al. 2014, Algorithm 1), in the
//! SGD-with-momentum parameterisation of [`super::sghmc`] (`v = p h`, `lr = h^2`) and with one
//! thermostat `zeta` per parameter element, of which the velocity feels the friction
//! `xi = clamp(zeta, -1, 1)`:
//!
//! `v <- v - xi * v - lr psi g + sqrt(2 a lr tau) xi_noise ; x <- x + v ;`
//! `zeta <- clamp(zeta + v * v - 2 lr tau / (2 - xi), -2, 2)`
//!
//! The friction adapts until the kinetic energy matches the temperature, so gradient noise
//! of unknown size is absorbed by a larger friction instead of heating the chain: with minibatch
//! noise of variance `sigma^2` per gradient element, `xi` settles near `a + lr sigma^2 /
//! (2 tau)`. The kinetic target is that of the *discrete* chain: for `v <- (1 - xi) v + noise`
//! the stationary `E v^2` is `2 lr tau / (2 - xi)` (1.053 `lr tau` at `xi = 0.1`), not the
//! continuous `lr tau`; Ding et al.'s `p^T p / n - 1` in these units would hold `E v^2` at
//! `lr tau` and cool the position law by `1 - xi / 2` (a variance 5% low at `xi = 0.1`, seen
//! in `tests/sgnht.rs` before this correction). `a` (Ding et al.'s `A h`) is the friction the
//! thermostat rests at without gradient noise. The stationary density of the continuous
//! dynamics is `exp(-U / tau - |p|^2 / (2 tau) - sum_i (xi_i - a)^2 / (2 tau lr))` per
//! element (Ding et al.'s `N(A, tau)` thermostat in units of a step), so the `x`-marginal is
//! the target; the per-element thermostat (instead of Ding et al.'s scalar `p^T p / n`) keeps
//! the update element-wise and absorbs gradient noise whose size differs between weights, and
//! the invariance argument is the same one coordinate at a time.
//!
//! # Why the bounds, and the law at them
//!
//! The discrete velocity update `v <- (1 - xi) v + e` with injected variance `E e^2` has
//! `E v^2 = E e^2 / (xi (2 - xi))`, smallest at `xi = 1`: beyond it a larger friction makes `v`
//! flip sign with a growing amplitude, so the thermostat's feedback turns positive (more
//! kinetic energy, more friction, more kinetic energy) and, unbounded, ran to the pole of its
//! target at `xi = 2` and diverged (`U = x^2 / 2`, lr 0.01, `a` 0.1, gradient-noise sd 13: 3 of
//! 3 seeds by step 22,000; at temperature 0 from `x0 = 30` by step 134). The applied friction
//! is therefore held in `[-1, 1]` (no pole: `2 - xi >= 1`; anti-friction at most doubles `v`
//! per step), while `zeta` keeps integrating the kinetic error in `[-2, 2]`: as long as it stays
//! inside that window the integral control holds the time-averaged `E v^2` at its target, so
//! the friction may sit at 1 for stretches without heating the chain (clamping `zeta` itself at
//! 1 forgets the excess: variance 1.059 at sd 13 instead of 0.995). The window's edge only
//! bounds how long a chain takes to leave the bound when the noise falls again.
//!
//! Gradient noise is absorbable while the memoryless chain (`xi = 1`) is not hotter than the
//! target, `lr (E|grad U|^2 + sigma^2) <= 2 tau (1 - a)` (sd 13.4 above). Beyond it the friction
//! stays at 1, `v = -lr psi g + noise` and the kernel is SGLD at temperature
//! `a tau + lr sigma^2 / 2` (on `N(0, 1)` the discrete variance `2 (a tau + lr sigma^2 / 2) /
//! (2 - lr)`: 2.111 at sd 20). At temperature 0 the target is 0: `zeta` only grows, the friction
//! reaches 1 and the kernel is gradient descent. `tests/sgnht.rs` checks all three laws.
//!
//! The state holds `v` and `s = zeta - a` (so that the zero-initialised state starts at rest).

use super::Coefs;
use super::lane::Lane;

/// The applied friction `xi` lies in `[-FRICTION_BOUND, FRICTION_BOUND]`.
pub const FRICTION_BOUND: f64 = 1.0;
/// The thermostat `zeta` integrates in `[-THERMOSTAT_BOUND, THERMOSTAT_BOUND]`.
pub const THERMOSTAT_BOUND: f64 = 2.0;

/// Updates the velocity `v` and the thermostat offset `s = zeta - a`, and returns the new `x`;
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
    let xi = s
        .copy()
        .add_scalar(friction)
        .clamp(-FRICTION_BOUND, FRICTION_BOUND);
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
    *s = s
        .copy()
        .add(kinetic)
        .add(target)
        .clamp(-THERMOSTAT_BOUND - friction, THERMOSTAT_BOUND - friction);
    *v = new_v.copy();
    x.add(new_v)
}
