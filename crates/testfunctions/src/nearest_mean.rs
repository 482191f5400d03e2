//! Modes of a mixture as the Voronoi cells of its component means: `x` belongs to the mode of
//! the nearest mean (Euclidean distance; ties go to the mean listed first). Components with the
//! same mean share one mode. This is how the 2-D grid targets define modes ([`GridModes`],
//! cells of the nearest centre); the built-in 1-D mixtures ([`Mixture1d`]) split at the density
//! minimum between neighbouring means instead, which agrees with the midpoint when both
//! neighbours have the same weight and sd.
//!
//! [`GridModes`]: super::grid_modes::GridModes
//! [`Mixture1d`]: super::Mixture1d

use crate::ModeMap;

/// The Voronoi cells of distinct centres.
#[derive(Clone, Debug)]
pub struct NearestMean {
    centres: Vec<Vec<f64>>,
}

impl NearestMean {
    /// Cells of the distinct points of `means`, in order of first appearance.
    pub fn new(means: &[Vec<f64>]) -> Self {
        let mut centres: Vec<Vec<f64>> = Vec::new();
        for m in means {
            if !centres.contains(m) {
                centres.push(m.clone());
            }
        }
        Self { centres }
    }
}

impl ModeMap for NearestMean {
    fn n_modes(&self) -> usize {
        self.centres.len()
    }

    fn mode_of(&self, x: &[f64]) -> usize {
        let dist2 = |c: &Vec<f64>| c.iter().zip(x).map(|(a, b)| (a - b) * (a - b)).sum::<f64>();
        let mut best = (0, f64::INFINITY);
        for (k, c) in self.centres.iter().enumerate() {
            let d = dist2(c);
            if d < best.1 {
                best = (k, d);
            }
        }
        best.0
    }

    fn labels(&self) -> Vec<String> {
        self.centres
            .iter()
            .map(|c| {
                let parts: Vec<String> = c.iter().map(|v| v.to_string()).collect();
                format!("({})", parts.join(","))
            })
            .collect()
    }

    fn centres(&self) -> Vec<Vec<f64>> {
        self.centres.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_of_the_nearest_distinct_mean() {
        let m = NearestMean::new(&[vec![0.0, 0.0], vec![2.0, 0.0], vec![0.0, 0.0]]);
        assert_eq!(m.n_modes(), 2);
        assert_eq!(m.mode_of(&[0.9, 5.0]), 0);
        assert_eq!(m.mode_of(&[1.1, -5.0]), 1);
        // On the bisector the first listed wins.
        assert_eq!(m.mode_of(&[1.0, 3.0]), 0);
        assert_eq!(m.labels(), vec!["(0,0)", "(2,0)"]);
    }
}
