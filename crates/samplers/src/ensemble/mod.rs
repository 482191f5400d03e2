//! Where chains live. An [`Ensemble`] evaluates the stochastic energies of all its chains and
//! moves them one kernel step; the samplers drive it with per-chain step sizes and never touch
//! parameters themselves.
//!
//! * [`ModuleEnsemble`]: burn modules on any device. Network chains are separate module copies
//!   (one chain per module, stepped on parallel threads); `P` toy chains can be the rows of one
//!   `[P, d]` module ([`crate::density::particles::Particles`]), so 1000 chains cost about one.
//! * [`HostEnsemble`]: toy chains in host `f64` memory, the tensor-free fast path for analytic
//!   targets, where burn's per-operation overhead would dominate a 1-D step. Same kernel
//!   formulas, same random streams.

#[cfg(feature = "fault-injection")]
mod faulty;
mod host;
mod kernel_row;
mod module;
mod positions;
mod snapshot;

#[cfg(feature = "fault-injection")]
pub use faulty::{Fault, FaultKind, Faulty};
pub use host::{HostEnsemble, HostPoints, HostTarget};
pub use kernel_row::{KernelRow, ParamRow, RowSwap, shifted};
pub(crate) use module::draw_noise;
pub use module::{
    ModuleEnsemble, NoiseSource, module_values, trainable_values, with_module_values,
    with_trainable_values,
};
pub use positions::Positions;
pub use snapshot::{ExactHostTarget, SnapshotEnergy};

use crate::checkpoint::EnsembleState;
use crate::error::SamplerError;
use crate::kernel::{Coefficients, Kernel};

/// A set of chains that a sampler advances together.
pub trait Ensemble {
    /// What one step consumes (a minibatch, `()` for toys).
    type Batch;

    /// The chains' points as samples, taken before a step ([`Ensemble::snapshot_into`]):
    /// module handles for burn chains (cheap: tensors are reference-counted), positions for
    /// host chains.
    type Snapshot: Default;

    /// Number of chains.
    fn n_chains(&self) -> usize;

    /// Evaluates the stochastic energy `U~` of every chain at its current position (and keeps
    /// the gradients for [`Ensemble::apply`]). Returns the energies in chain order.
    fn estimate(&mut self, batch: &Self::Batch) -> Result<&[f64], SamplerError>;

    /// Moves every chain one step of `kernel` with the gradients of the last estimate;
    /// `coefs[p]` are chain `p`'s coefficients ([`Kernel::coefficients`]); `draws` says whether
    /// the step resamples momenta (SGHMC) and draws Langevin noise.
    fn apply(&mut self, kernel: &Kernel, coefs: &[Coefficients], draws: Draws);

    /// [`Ensemble::estimate`] and [`Ensemble::apply`] in one pass, for samplers whose step sizes
    /// do not depend on this step's energies (independent chains): an ensemble that steps its
    /// chains on threads then hands each chain to a thread once per step instead of twice.
    /// Returns the energies before the move; the caller checks them afterwards.
    fn estimate_and_apply(
        &mut self,
        batch: &Self::Batch,
        kernel: &Kernel,
        coefs: &[Coefficients],
        draws: Draws,
    ) -> Result<&[f64], SamplerError> {
        self.estimate(batch)?;
        self.apply(kernel, coefs, draws);
        Ok(self.last_energies())
    }

    /// The energies of the last estimate.
    fn last_energies(&self) -> &[f64];

    /// Exchanges the kernel state (velocities, thermostats) of chains `a` and `b`, leaving their
    /// parameters where they are, and shifts the exchanged velocities (state slot 0) to their
    /// new positions: `v_a += lags.0 (g_a - g_b)`, `v_b += lags.1 (g_b - g_a)`, with `g` the
    /// gradients of the last estimate ([`Kernel::velocity_lag`]).
    fn swap_kernel_state(&mut self, a: usize, b: usize, lags: (f64, f64));

    /// Chain `c`'s kernel state and last gradient: its half of
    /// [`Ensemble::swap_kernel_state`] when the other chain lives on another rank.
    fn kernel_row(&self, c: usize) -> Result<KernelRow, SamplerError>;

    /// Chain `c`'s half of [`Ensemble::swap_kernel_state`] with a chain on another rank whose
    /// [`Ensemble::kernel_row`] is `swap.peer`: `c` takes the peer's kernel state, its velocity
    /// (slot 0) shifted by `lag (g_c - g_peer)` if `c` is the swap's first chain, else by
    /// `-lag (g_peer - g_c)`, in the operations of the one-process swap.
    fn take_kernel_row(&mut self, c: usize, swap: &RowSwap) -> Result<(), SamplerError>;

    /// Writes the current points of every chain into `out` (reusing its buffers).
    fn snapshot_into(&self, out: &mut Self::Snapshot);

    /// The chains' parameters, kernel state and random streams ([`crate::checkpoint`]).
    fn state(&self) -> Result<EnsembleState, SamplerError>;

    /// Replaces the chains' state with a saved one; errors when shapes or counts differ.
    fn restore(&mut self, state: EnsembleState) -> Result<(), SamplerError>;
}

/// What one step draws from the chains' random streams. It is decided over every chain of the
/// run, also when the chains are spread over ranks ([`crate::comm`]), so that a chain draws the
/// same numbers whichever rank steps it: a step draws Langevin noise for every chain as soon as
/// one chain diffuses (DEO*-SGD: rung 0's SGLD chain), and none when no chain does (SGD, zero
/// temperature, a noise-free exploration phase).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Draws {
    /// Resample momenta (SGHMC's periodic refresh).
    pub refresh: bool,
    /// Draw Langevin noise for every chain.
    pub noise: bool,
}

impl Draws {
    /// The draws of a step of `kernel` whose chains diffuse with `diffusions` (every chain of
    /// the run), resampling momenta if `refresh`.
    pub fn of(kernel: &Kernel, diffusions: impl IntoIterator<Item = f64>, refresh: bool) -> Self {
        let noise = kernel.is_stochastic() && (refresh || diffusions.into_iter().any(|d| d != 0.0));
        Self { refresh, noise }
    }
}
