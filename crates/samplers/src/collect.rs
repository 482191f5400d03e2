//! Turning a stream of samples into estimates: burn-in, thinning, streaming weighted means
//! (plain weights, or log weights for importance weights that span many orders of magnitude).

use crate::control::Phase;
use crate::diagnostics::{Coupling, weighted_mean_se};
use crate::sampler::StepReport;

/// Which steps yield samples: after `burn_in` steps, every `thin`-th step, and only in the
/// sampling phase of a cyclical schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thinning {
    /// Steps discarded at the start.
    pub burn_in: u64,
    /// Keep every `thin`-th step after burn-in (>= 1).
    pub thin: u64,
}

impl Thinning {
    /// Whether the pre-move point `x_k` of step `k` is kept (the point a contour sampler's
    /// importance weight in the step-`k` report refers to); the caller also skips exploration
    /// steps of cyclical schedules.
    pub fn keeps(&self, k: u64) -> bool {
        k >= self.burn_in && (k - self.burn_in).is_multiple_of(self.thin.max(1))
    }

    /// Whether the step of `report` yields a sample. The report describes the move *from* the
    /// sample point, so the position after the step is sample number `report.step + 1`.
    pub fn collects(&self, report: &StepReport) -> bool {
        let k = report.step + 1;
        k > self.burn_in
            && (k - self.burn_in).is_multiple_of(self.thin.max(1))
            && report.phase != Some(Phase::Exploration)
    }
}

/// Streaming weighted mean of vectors: `sum_k w_k f_k / sum_k w_k` (weights 1 for plain
/// averages, importance weights for contour samplers; for predictions this is the weighted
/// Bayesian model average).
#[derive(Clone, Debug, Default)]
pub struct WeightedMean {
    sum: Vec<f64>,
    weight: f64,
    count: u64,
}

impl WeightedMean {
    /// An empty average of vectors of length `len`.
    pub fn new(len: usize) -> Self {
        Self {
            sum: vec![0.0; len],
            weight: 0.0,
            count: 0,
        }
    }

    /// Adds `values` with weight `w >= 0`.
    pub fn add(&mut self, values: &[f64], w: f64) {
        for (s, v) in self.sum.iter_mut().zip(values) {
            *s += w * v;
        }
        self.weight += w;
        self.count += 1;
    }

    /// The weighted mean (NaN before the first sample).
    pub fn mean(&self) -> Vec<f64> {
        self.sum.iter().map(|s| s / self.weight).collect()
    }

    /// Number of samples added.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Total weight.
    pub fn total_weight(&self) -> f64 {
        self.weight
    }
}

/// Streaming weighted average of vectors (e.g. per-model predictions: the weighted Bayesian
/// model average), kept in the log domain:
/// contour weights `theta[J]^zeta` with `zeta = 3e4` span thousands of orders of magnitude, so
/// the sum is stored as `exp(max_log_w) * sum_s exp(log_w_s - max_log_w) p_s` and rescaled
/// whenever a larger weight arrives. Serialisable, for checkpoints.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LogWeightedMean {
    sum: Vec<f64>,
    /// `sum exp(log_w - max)`.
    weight: f64,
    /// `sum exp(2 (log_w - max))`, for the effective number of models.
    weight_sq: f64,
    max: Option<f64>,
    models: usize,
}

impl LogWeightedMean {
    /// An empty average.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one model's predictions with weight `w >= 0`.
    pub fn add(&mut self, w: f64, prediction: &[f64]) {
        self.add_log(w.ln(), prediction);
    }

    /// Adds one model's predictions with log weight `log_w` (`-inf` adds nothing but a count).
    pub fn add_log(&mut self, log_w: f64, prediction: &[f64]) {
        if self.sum.is_empty() {
            self.sum = vec![0.0; prediction.len()];
        }
        self.models += 1;
        if log_w.is_nan() || log_w == f64::NEG_INFINITY {
            return;
        }
        let max = match self.max {
            Some(m) if m >= log_w => m,
            Some(m) => {
                let r = (m - log_w).exp();
                self.sum.iter_mut().for_each(|s| *s *= r);
                self.weight *= r;
                self.weight_sq *= r * r;
                self.max = Some(log_w);
                log_w
            }
            None => {
                self.max = Some(log_w);
                log_w
            }
        };
        let w = (log_w - max).exp();
        for (s, p) in self.sum.iter_mut().zip(prediction) {
            *s += w * p;
        }
        self.weight += w;
        self.weight_sq += w * w;
    }

    /// The weighted average (`None` before any model or with zero total weight).
    pub fn mean(&self) -> Option<Vec<f64>> {
        (self.weight > 0.0).then(|| self.sum.iter().map(|s| s / self.weight).collect())
    }

    /// Models added.
    pub fn models(&self) -> usize {
        self.models
    }

    /// Kish's effective number of models `(sum w)^2 / sum w^2` (0 before any weight).
    pub fn effective_models(&self) -> f64 {
        if self.weight_sq > 0.0 {
            self.weight * self.weight / self.weight_sq
        } else {
            0.0
        }
    }
}

/// One scalar trace per chain (energies, mode indicators, coordinates) for diagnostics.
#[derive(Clone, Debug, Default)]
pub struct Traces {
    /// `chains[p][t]`: value of chain `p` at its `t`-th collected sample.
    pub chains: Vec<Vec<f64>>,
}

impl Traces {
    /// Empty traces for `n` chains.
    pub fn new(n: usize) -> Self {
        Self {
            chains: vec![Vec::new(); n],
        }
    }

    /// Appends one value per chain.
    pub fn push(&mut self, values: impl IntoIterator<Item = f64>) {
        for (c, v) in self.chains.iter_mut().zip(values) {
            c.push(v);
        }
    }

    /// The mean over all chains and samples.
    pub fn mean(&self) -> f64 {
        let n: usize = self.chains.iter().map(Vec::len).sum();
        self.chains.iter().flatten().sum::<f64>() / n as f64
    }
}

/// The mode index of every collected sample of every chain, for mode masses with Monte Carlo
/// errors.
#[derive(Clone, Debug, Default)]
pub struct ModeTraces {
    n_modes: usize,
    chains: Vec<Vec<u16>>,
    weights: Vec<Vec<f64>>,
    coupling: Coupling,
}

impl ModeTraces {
    /// Empty traces for `chains` chains over `n_modes` modes (at most 65,536).
    pub fn new(n_modes: usize, chains: usize) -> Self {
        Self {
            n_modes,
            chains: vec![Vec::new(); chains],
            weights: vec![Vec::new(); chains],
            coupling: Coupling::Independent,
        }
    }

    /// The same traces with their chains counted as `coupling` for standard errors
    /// ([`Coupling::Shared`] for the chains of a contour sampler, which share `theta`).
    pub fn with_coupling(mut self, coupling: Coupling) -> Self {
        self.coupling = coupling;
        self
    }

    /// How the chains are counted.
    pub fn coupling(&self) -> Coupling {
        self.coupling
    }

    /// Records the mode of chain `p`'s current sample (weight 1).
    pub fn push(&mut self, p: usize, mode: usize) {
        self.push_weighted(p, mode, 1.0);
    }

    /// Records the mode of chain `p`'s current sample with importance weight `w`.
    pub fn push_weighted(&mut self, p: usize, mode: usize, w: f64) {
        self.chains[p].push(mode as u16);
        self.weights[p].push(w);
    }

    /// Number of samples per chain.
    pub fn len(&self) -> usize {
        self.chains.first().map_or(0, Vec::len)
    }

    /// Whether no sample was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The indicator traces `1{mode = i}` of mode `i`.
    pub fn indicator(&self, i: usize) -> Vec<Vec<f64>> {
        self.chains
            .iter()
            .map(|c| {
                c.iter()
                    .map(|&m| f64::from(u8::from(usize::from(m) == i)))
                    .collect()
            })
            .collect()
    }

    /// Importance-weighted mode masses `sum w 1{mode = i} / sum w` with their Monte Carlo
    /// standard errors (plain fractions when every weight is 1), from
    /// [`crate::diagnostics::weighted_mean_se`] of the indicator traces: the ESS of the
    /// linearised traces for fewer than 32 independent chains, the spread of the per-chain means
    /// for 32 or more (valid whatever their mixing, and O(samples) instead of an FFT per chain),
    /// and the trace of the chain average for coupled chains, which count as one system.
    pub fn masses(&self) -> (Vec<f64>, Vec<f64>) {
        let masses = self.point_masses();
        let ses = masses
            .iter()
            .enumerate()
            .map(|(i, &mass)| self.mass_se(i, mass))
            .collect();
        (masses, ses)
    }

    /// The weighted mode masses alone (one pass, no standard errors).
    pub fn point_masses(&self) -> Vec<f64> {
        let mut masses = vec![0.0; self.n_modes];
        let mut total = 0.0;
        for (c, w) in self.chains.iter().zip(&self.weights) {
            for (m, w) in c.iter().zip(w) {
                masses[usize::from(*m)] += w;
                total += w;
            }
        }
        masses.iter().map(|m| m / total).collect()
    }

    /// Monte Carlo standard error of the weighted mass `mass` of mode `i` (0 for a mass of 0
    /// or 1).
    fn mass_se(&self, i: usize, mass: f64) -> f64 {
        if !(mass > 0.0 && mass < 1.0) {
            return 0.0;
        }
        weighted_mean_se(&self.indicator(i), &self.weights, self.coupling).1
    }

    /// The unweighted fraction of samples in each mode (the flattened law a contour sampler
    /// actually visits).
    pub fn raw_masses(&self) -> Vec<f64> {
        let n: usize = self.chains.iter().map(Vec::len).sum();
        let mut m = vec![0.0; self.n_modes];
        for &k in self.chains.iter().flatten() {
            m[usize::from(k)] += 1.0 / n as f64;
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinning_counts_and_weighted_mean() {
        let t = Thinning {
            burn_in: 10,
            thin: 5,
        };
        let mut r = StepReport::default();
        let kept: Vec<u64> = (0..30)
            .filter(|&k| {
                r.step = k;
                t.collects(&r)
            })
            .collect();
        assert_eq!(kept, vec![14, 19, 24, 29]);
        r.phase = Some(Phase::Exploration);
        assert!(!t.collects(&r));

        let mut m = WeightedMean::new(2);
        m.add(&[1.0, 2.0], 1.0);
        m.add(&[3.0, 6.0], 3.0);
        assert_eq!(m.mean(), vec![2.5, 5.0]);
        assert_eq!(m.count(), 2);
    }
}
