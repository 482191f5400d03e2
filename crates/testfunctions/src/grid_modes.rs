//! Modes on a product grid of centres: the Voronoi cell of a grid point is the product of the
//! 1-D nearest-level intervals, so the mode of `x` is found coordinate by coordinate.

use crate::ModeMap;

/// Centres `levels^d`; mode index in row-major order of the coordinates' level indices.
#[derive(Clone, Debug)]
pub struct GridModes {
    levels: Vec<f64>,
    dim: usize,
}

impl GridModes {
    /// The grid `levels^dim` (levels sorted ascending).
    pub fn new(mut levels: Vec<f64>, dim: usize) -> Self {
        levels.sort_by(f64::total_cmp);
        Self { levels, dim }
    }

    fn level_of(&self, v: f64) -> usize {
        self.levels
            .windows(2)
            .take_while(|w| v > 0.5 * (w[0] + w[1]))
            .count()
    }
}

impl ModeMap for GridModes {
    fn n_modes(&self) -> usize {
        self.levels.len().pow(self.dim as u32)
    }

    fn mode_of(&self, x: &[f64]) -> usize {
        x.iter()
            .fold(0, |acc, &v| acc * self.levels.len() + self.level_of(v))
    }

    fn labels(&self) -> Vec<String> {
        let n = self.levels.len();
        let mid = (n as i64 - 1) / 2;
        (0..self.n_modes())
            .map(|m| {
                let mut idx = vec![0i64; self.dim];
                let mut r = m;
                for slot in idx.iter_mut().rev() {
                    *slot = (r % n) as i64 - mid;
                    r /= n;
                }
                let parts: Vec<String> = idx.iter().map(|i| i.to_string()).collect();
                format!("({})", parts.join(","))
            })
            .collect()
    }

    fn centres(&self) -> Vec<Vec<f64>> {
        let n = self.levels.len();
        (0..self.n_modes())
            .map(|m| {
                let mut c = vec![0.0; self.dim];
                let mut r = m;
                for slot in c.iter_mut().rev() {
                    *slot = self.levels[r % n];
                    r /= n;
                }
                c
            })
            .collect()
    }
}
