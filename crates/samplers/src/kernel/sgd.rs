//! Stochastic gradient descent: `x <- x - lr psi g`.

use super::lane::Lane;

/// `x + drift * g` with `drift = -lr psi`.
#[inline]
pub fn update<L: Lane>(x: L, g: L, drift: &L::Coef) -> L {
    x.add(g.scale(drift))
}
