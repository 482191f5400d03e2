//! Momentum SGD: `v <- mu v - lr psi g ; x <- x + v`.

use super::lane::Lane;

/// Updates the velocity `v` and returns the new `x`; `drift = -lr psi`.
#[inline]
pub fn update<L: Lane>(x: L, g: L, v: &mut L, mu: f64, drift: &L::Coef) -> L {
    let new_v = v.copy().scale_by(mu).add(g.scale(drift));
    *v = new_v.copy();
    x.add(new_v)
}
