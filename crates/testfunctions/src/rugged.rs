//! The rugged 2-D landscape of the AWSGLD chapter (thesis sec. 7.2.2, Fig. 7.3; after Robert &
//! Casella 2004 and Liang, Liu & Carroll 2007):
//!
//! `U(x) = -{x1 sin(20 x2) + x2 sin(20 x1)}^2 cosh(sin(10 x1) x1)
//!         - {x1 cos(10 x2) - x2 sin(10 x1)}^2 cosh(cos(20 x2) x2)`
//!
//! on the box `[-1.1, 1.1]^2` of the benchmark. `U` is unbounded below on `R^2`, so outside the
//! box we use `U(proj(x)) + 100 |x - proj(x)|^2` (continuous, confining; the box is where the
//! papers plot and sample).

use crate::Potential;

/// The rugged landscape on `[-1.1, 1.1]^2`.
#[derive(Clone, Debug, Default)]
pub struct Rugged;

/// Half-width of the box.
pub const BOX: f64 = 1.1;
const WALL: f64 = 100.0;

impl Rugged {
    fn inside(x1: f64, x2: f64, grad: &mut [f64]) -> f64 {
        let a = x1 * (20.0 * x2).sin() + x2 * (20.0 * x1).sin();
        let a1 = (20.0 * x2).sin() + 20.0 * x2 * (20.0 * x1).cos();
        let a2 = 20.0 * x1 * (20.0 * x2).cos() + (20.0 * x1).sin();
        let s1 = (10.0 * x1).sin() * x1;
        let c1 = s1.cosh();
        let c1d = s1.sinh() * (10.0 * x1 * (10.0 * x1).cos() + (10.0 * x1).sin());
        let b = x1 * (10.0 * x2).cos() - x2 * (10.0 * x1).sin();
        let b1 = (10.0 * x2).cos() - 10.0 * x2 * (10.0 * x1).cos();
        let b2 = -10.0 * x1 * (10.0 * x2).sin() - (10.0 * x1).sin();
        let s2 = (20.0 * x2).cos() * x2;
        let c2 = s2.cosh();
        let c2d = s2.sinh() * ((20.0 * x2).cos() - 20.0 * x2 * (20.0 * x2).sin());
        grad[0] = -2.0 * a * a1 * c1 - a * a * c1d - 2.0 * b * b1 * c2;
        grad[1] = -2.0 * a * a2 * c1 - 2.0 * b * b2 * c2 - b * b * c2d;
        -a * a * c1 - b * b * c2
    }
}

impl Potential for Rugged {
    fn dim(&self) -> usize {
        2
    }

    fn energy(&self, x: &[f64]) -> f64 {
        let mut g = [0.0; 2];
        self.energy_grad(x, &mut g)
    }

    fn energy_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let p = [x[0].clamp(-BOX, BOX), x[1].clamp(-BOX, BOX)];
        let mut u = Self::inside(p[0], p[1], grad);
        for i in 0..2 {
            let out = x[i] - p[i];
            if out != 0.0 {
                // The clamped coordinate no longer moves U(proj(x)); the wall pulls it back.
                grad[i] = 2.0 * WALL * out;
                u += WALL * out * out;
            }
        }
        u
    }

    fn support(&self) -> Option<Vec<(f64, f64)>> {
        Some(vec![(-BOX, BOX); 2])
    }
}
