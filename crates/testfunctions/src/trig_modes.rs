//! The 2-D multi-modal targets of the papers: a quadratic bowl with a cosine ripple per
//! coordinate and a radial regulariser, `U(x) = sum_i (a x_i^2 - b cos(2 pi f x_i))
//! + (|x|^2 - r^2) 1{|x|^2 > r^2}`.
//!
//! * 9-mode (CSGLD paper sec. 4.1, supplement D.3): `U = sum_i (x_i^2 - 10 cos(1.2 pi x_i)) / 3`,
//!   `r^2 = 7`; modes at `{-5/3, 0, 5/3}^2`; exact masses 0.307 (centre), 0.124 (edges),
//!   0.049 (corners).
//! * 25-mode (thesis sec. 4.5.1, E.4.2): `U = 0.2 |x|^2 - 2 (cos 2 pi x_1 + cos 2 pi x_2)`,
//!   `r^2 = 20`; modes at `{-2, .., 2}^2`.

use std::f64::consts::PI;

use crate::grid_modes::GridModes;
use crate::{ModeMap, Potential};

/// A separable cosine-ripple bowl with a radial regulariser.
#[derive(Clone, Debug)]
pub struct TrigGrid {
    quad: f64,
    amp: f64,
    freq: f64,
    radius2: f64,
    half_width: f64,
    modes: GridModes,
}

/// The 2-D 9-mode target.
pub struct NineMode;
/// The 2-D 25-mode target.
pub struct TwentyFiveMode;

impl NineMode {
    /// `U = sum_i (x_i^2 - 10 cos(1.2 pi x_i)) / 3 + (|x|^2 - 7) 1{|x|^2 > 7}`.
    #[allow(clippy::new_ret_no_self)]
    pub fn new() -> TrigGrid {
        TrigGrid {
            quad: 1.0 / 3.0,
            amp: 10.0 / 3.0,
            freq: 0.6,
            radius2: 7.0,
            half_width: 4.0,
            modes: GridModes::new(vec![-5.0 / 3.0, 0.0, 5.0 / 3.0], 2),
        }
    }
}

impl TwentyFiveMode {
    /// `U = 0.2 |x|^2 - 2 (cos 2 pi x_1 + cos 2 pi x_2) + (|x|^2 - 20) 1{|x|^2 > 20}`.
    #[allow(clippy::new_ret_no_self)]
    pub fn new() -> TrigGrid {
        TrigGrid {
            quad: 0.2,
            amp: 2.0,
            freq: 1.0,
            radius2: 20.0,
            half_width: 7.0,
            modes: GridModes::new(vec![-2.0, -1.0, 0.0, 1.0, 2.0], 2),
        }
    }
}

impl Potential for TrigGrid {
    fn dim(&self) -> usize {
        2
    }

    fn energy(&self, x: &[f64]) -> f64 {
        let mut g = [0.0; 2];
        self.energy_grad(x, &mut g)
    }

    #[inline]
    fn energy_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let w = 2.0 * PI * self.freq;
        let r2 = x[0] * x[0] + x[1] * x[1];
        let outside = r2 > self.radius2;
        let mut u = if outside { r2 - self.radius2 } else { 0.0 };
        for i in 0..2 {
            let (s, c) = (w * x[i]).sin_cos();
            u += self.quad * x[i] * x[i] - self.amp * c;
            grad[i] =
                2.0 * self.quad * x[i] + self.amp * w * s + if outside { 2.0 * x[i] } else { 0.0 };
        }
        u
    }

    fn support(&self) -> Option<Vec<(f64, f64)>> {
        Some(vec![(-self.half_width, self.half_width); 2])
    }

    fn modes(&self) -> Option<&dyn ModeMap> {
        Some(&self.modes)
    }
}
