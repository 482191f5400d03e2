//! Toy chains in host memory: the tensor-free fast path.

use super::{Ensemble, needs_noise};
use crate::error::{SamplerError, TargetError};
use crate::kernel::{Coefficients, Kernel};
use crate::rng::ChainRng;
use crate::target::toy::ToyTarget;

/// A target evaluated in host `f64`: a toy potential with injected noise (`Batch = ()`), or a
/// small data posterior whose minibatches are index lists.
pub trait HostTarget {
    /// What one estimate consumes.
    type Batch;
    /// Dimension `d`.
    fn dim(&self) -> usize;
    /// Writes the stochastic gradient at `x` on `batch` into `grad` and returns the stochastic
    /// energy (full-data scale); `rng` is the chain's own stream (injected noise).
    fn energy_grad(
        &self,
        x: &[f64],
        batch: &Self::Batch,
        grad: &mut [f64],
        rng: &mut ChainRng,
    ) -> f64;
}

impl HostTarget for ToyTarget {
    type Batch = ();

    fn dim(&self) -> usize {
        ToyTarget::dim(self)
    }

    fn energy_grad(&self, x: &[f64], _: &(), grad: &mut [f64], rng: &mut ChainRng) -> f64 {
        self.noisy_energy_grad(x, grad, rng)
    }
}

/// `P` chains of a host target, stored as a row-major `[P, d]` array of `f64`.
///
/// Runs the same kernel formulas as the tensor path (the [`crate::kernel::Lane`] impl for
/// `f64`) with the same per-chain streams in the same draw order, so the two paths agree up to
/// `f32` rounding. Used for paper-scale toy runs (1e7 steps of a 1-D chain).
#[derive(Clone, Debug)]
pub struct HostEnsemble<T: HostTarget = ToyTarget> {
    target: T,
    dim: usize,
    x: Vec<f64>,
    grad: Vec<f64>,
    state: Vec<f64>,
    slots: usize,
    rngs: Vec<ChainRng>,
    energies: Vec<f64>,
}

impl<T: HostTarget> HostEnsemble<T> {
    /// Chains started at `starts` (one row of length `d` per chain); chain `p` draws from stream
    /// `p` of `seed`.
    pub fn new(target: T, starts: &[Vec<f64>], seed: u64) -> Result<Self, SamplerError> {
        let dim = target.dim();
        if starts.is_empty() || starts.iter().any(|s| s.len() != dim) {
            return Err(
                TargetError::Shape(format!("need >= 1 starting point of dimension {dim}")).into(),
            );
        }
        let n = starts.len();
        Ok(Self {
            target,
            dim,
            x: starts.iter().flatten().copied().collect(),
            grad: vec![0.0; n * dim],
            state: Vec::new(),
            slots: 0,
            rngs: ChainRng::streams(seed, n),
            energies: vec![0.0; n],
        })
    }

    /// Dimension `d` of each chain.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// All positions, row-major `[P, d]`.
    pub fn positions(&self) -> &[f64] {
        &self.x
    }

    /// Position of chain `p`.
    pub fn chain(&self, p: usize) -> &[f64] {
        &self.x[p * self.dim..(p + 1) * self.dim]
    }

    /// The target.
    pub fn target(&self) -> &T {
        &self.target
    }
}

impl<T: HostTarget> Ensemble for HostEnsemble<T> {
    type Batch = T::Batch;

    fn n_chains(&self) -> usize {
        self.energies.len()
    }

    fn estimate(&mut self, batch: &T::Batch) -> Result<&[f64], SamplerError> {
        let d = self.dim;
        for (p, e) in self.energies.iter_mut().enumerate() {
            let rows = p * d..(p + 1) * d;
            *e = self.target.energy_grad(
                &self.x[rows.clone()],
                batch,
                &mut self.grad[rows],
                &mut self.rngs[p],
            );
        }
        Ok(&self.energies)
    }

    fn apply(&mut self, kernel: &Kernel, coefs: &[Coefficients], refresh: bool) {
        let slots = kernel.state_slots();
        if self.slots != slots {
            self.slots = slots;
            self.state = vec![0.0; slots * self.x.len()];
        }
        let noisy = needs_noise(kernel, coefs, refresh);
        let d = self.dim;
        let len = self.x.len();
        for (p, (c, rng)) in coefs.iter().zip(self.rngs.iter_mut()).enumerate() {
            for i in p * d..(p + 1) * d {
                let mut st = [0.0f64; 1];
                for (s, v) in st.iter_mut().enumerate().take(slots) {
                    *v = self.state[s * len + i];
                }
                let noise = || if noisy { rng.normal() } else { 0.0 };
                self.x[i] =
                    kernel.update(self.x[i], self.grad[i], &mut st[..slots], noise, c, refresh);
                for (s, v) in st.iter().enumerate().take(slots) {
                    self.state[s * len + i] = *v;
                }
            }
        }
    }
}
