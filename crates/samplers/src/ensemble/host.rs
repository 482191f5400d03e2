//! Toy chains in host memory: the tensor-free fast path.

use super::{Draws, Ensemble, KernelRow, ParamRow, RowSwap, shifted};
use crate::checkpoint::{EnsembleState, mismatch};
use crate::density::toy::ToyTarget;
use crate::error::{SamplerError, TargetError};
use crate::kernel::{Coefficients, Kernel};
use crate::rng::ChainRng;

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

/// The points of host chains: row-major `[P, d]` positions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostPoints {
    /// Dimension `d` of a chain.
    pub dim: usize,
    /// Positions, row-major `[P, d]`.
    pub x: Vec<f64>,
}

impl HostPoints {
    /// Position of chain `p`.
    pub fn chain(&self, p: usize) -> &[f64] {
        &self.x[p * self.dim..(p + 1) * self.dim]
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
    /// One element's kernel state during a step (as many slots as the kernel keeps).
    scratch: Vec<f64>,
    rngs: Vec<ChainRng>,
    energies: Vec<f64>,
}

impl<T: HostTarget> HostEnsemble<T> {
    /// Chains started at `starts` (one row of length `d` per chain); chain `p` draws from stream
    /// `p` of `seed`.
    pub fn new(target: T, starts: &[Vec<f64>], seed: u64) -> Result<Self, SamplerError> {
        Self::new_part(target, starts, seed, 0)
    }

    /// A rank's part of a distributed run ([`crate::comm`]): the chains with global indices
    /// `first..first + starts.len()`, chain `p` drawing from stream `first + p` of `seed`, as
    /// it would in one process.
    pub fn new_part(
        target: T,
        starts: &[Vec<f64>],
        seed: u64,
        first: usize,
    ) -> Result<Self, SamplerError> {
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
            scratch: Vec::new(),
            rngs: (first..first + n)
                .map(|c| ChainRng::new(seed, c as u64))
                .collect(),
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
    type Snapshot = HostPoints;

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

    fn apply(&mut self, kernel: &Kernel, coefs: &[Coefficients], draws: Draws) {
        let Draws {
            refresh,
            noise: noisy,
        } = draws;
        let slots = kernel.state_slots();
        if self.slots != slots {
            self.slots = slots;
            self.state = vec![0.0; slots * self.x.len()];
            self.scratch = vec![0.0; slots];
        }
        let d = self.dim;
        let len = self.x.len();
        let st = &mut self.scratch;
        for (p, (c, rng)) in coefs.iter().zip(self.rngs.iter_mut()).enumerate() {
            for i in p * d..(p + 1) * d {
                for (s, v) in st.iter_mut().enumerate() {
                    *v = self.state[s * len + i];
                }
                let noise = || if noisy { rng.normal() } else { 0.0 };
                self.x[i] = kernel.update(self.x[i], self.grad[i], st, noise, c, refresh);
                for (s, v) in st.iter().enumerate() {
                    self.state[s * len + i] = *v;
                }
            }
        }
    }

    fn last_energies(&self) -> &[f64] {
        &self.energies
    }

    fn swap_kernel_state(&mut self, a: usize, b: usize, (la, lb): (f64, f64)) {
        let (d, len) = (self.dim, self.x.len());
        for slot in 0..self.slots {
            for i in 0..d {
                self.state
                    .swap(slot * len + a * d + i, slot * len + b * d + i);
            }
        }
        if self.slots > 0 {
            for i in 0..d {
                let delta = self.grad[a * d + i] - self.grad[b * d + i];
                self.state[a * d + i] += la * delta;
                self.state[b * d + i] -= lb * delta;
            }
        }
    }

    fn kernel_row(&self, c: usize) -> Result<KernelRow, SamplerError> {
        let (d, len) = (self.dim, self.x.len());
        let row = |v: &[f64], at: usize| v[at + c * d..at + (c + 1) * d].to_vec();
        Ok(KernelRow {
            params: vec![ParamRow {
                slots: (0..self.slots).map(|s| row(&self.state, s * len)).collect(),
                grad: Some(row(&self.grad, 0)),
            }],
        })
    }

    fn take_kernel_row(&mut self, c: usize, swap: &RowSwap) -> Result<(), SamplerError> {
        let (d, len) = (self.dim, self.x.len());
        let [p] = swap.peer.params.as_slice() else {
            return Err(mismatch("a host chain's kernel row has one tensor"));
        };
        if self.slots == 0 || p.slots.len() != self.slots {
            return Ok(());
        }
        if p.slots.iter().chain(&p.grad).any(|v| v.len() != d) {
            return Err(mismatch(format!(
                "a kernel row of another dimension than {d}"
            )));
        }
        let at = c * d;
        for (s, values) in p.slots.iter().enumerate() {
            self.state[s * len + at..s * len + at + d].copy_from_slice(values);
        }
        if let Some(g) = &p.grad {
            let own = &self.grad[at..at + d];
            let v = shifted(&self.state[at..at + d], own, g, swap.lag, swap.first);
            self.state[at..at + d].copy_from_slice(&v);
        }
        Ok(())
    }

    fn snapshot_into(&self, out: &mut HostPoints) {
        out.dim = self.dim;
        out.x.clear();
        out.x.extend_from_slice(&self.x);
    }

    fn state(&self) -> Result<EnsembleState, SamplerError> {
        Ok(EnsembleState::Host {
            dim: self.dim,
            x: self.x.clone(),
            state: self.state.clone(),
            slots: self.slots,
            rngs: self.rngs.clone(),
        })
    }

    fn restore(&mut self, state: EnsembleState) -> Result<(), SamplerError> {
        let EnsembleState::Host {
            dim,
            x,
            state,
            slots,
            rngs,
        } = state
        else {
            return Err(mismatch("a module ensemble's state given to host chains"));
        };
        if dim != self.dim || x.len() != self.x.len() || rngs.len() != self.rngs.len() {
            return Err(mismatch(format!(
                "{} chains of dimension {dim} saved, the ensemble has {} of dimension {}",
                rngs.len(),
                self.rngs.len(),
                self.dim
            )));
        }
        if state.len() != slots * x.len() {
            return Err(mismatch("kernel state does not match its slot count"));
        }
        self.x = x;
        self.state = state;
        self.slots = slots;
        self.scratch = vec![0.0; slots];
        self.rngs = rngs;
        Ok(())
    }
}
