//! The mechanism every sampler shares: estimate energies, gather them over the ranks, check
//! them, set per-chain coefficients, move the chains, fill the report.

use std::ops::Range;

use super::{StepReport, check_finite};
use crate::checkpoint::{AlgorithmState, ChainSpan, SamplerState, mismatch};
use crate::comm::Placement;
use crate::control::Phase;
use crate::ensemble::{Draws, Ensemble, KernelRow, RowSwap};
use crate::error::SamplerError;
use crate::kernel::{Coefficients, Kernel, StepSize};

/// This rank's ensemble with its step counter, the coefficients of its chains and the report
/// buffer. The report is global: one entry per chain of every rank ([`StepReport::local`]).
pub(crate) struct Driver<E: Ensemble> {
    pub(crate) ensemble: E,
    pub(crate) placement: Placement,
    /// Global index of this rank's first chain.
    first: usize,
    pub(crate) step: u64,
    /// Coefficients of this rank's chains.
    pub(crate) coefs: Vec<Coefficients>,
    /// The diffusion coefficient of every chain of the run (what a step draws, [`Draws`]).
    diffusions: Vec<f64>,
    pub(crate) report: StepReport,
}

impl<E: Ensemble> Driver<E> {
    /// A driver over `ensemble`, this rank's part of `placement`; `with_bins` sizes the report's
    /// bin vector (contour samplers).
    pub(crate) fn new(
        ensemble: E,
        with_bins: bool,
        placement: Placement,
    ) -> Result<Self, SamplerError> {
        placement.check_chains(ensemble.n_chains())?;
        let n = placement.total();
        let here = placement.here();
        Ok(Self {
            first: here.start,
            coefs: vec![Coefficients::default(); here.len()],
            diffusions: vec![0.0; n],
            report: StepReport {
                energies: vec![0.0; n],
                step_sizes: vec![StepSize::new(0.0, 0.0); n],
                bins: if with_bins { vec![0; n] } else { Vec::new() },
                weights: vec![1.0; n],
                log_weights: vec![0.0; n],
                local: here,
                ..StepReport::default()
            },
            ensemble,
            placement,
            step: 0,
        })
    }

    /// Number of chains over all ranks.
    pub(crate) fn n_chains(&self) -> usize {
        self.report.energies.len()
    }

    /// The global indices of this rank's chains.
    pub(crate) fn local(&self) -> Range<usize> {
        self.report.local.clone()
    }

    /// Estimates this rank's energies and gathers every rank's into the report; errors (on
    /// every rank alike) on a non-finite energy.
    pub(crate) fn estimate(&mut self, batch: &E::Batch) -> Result<(), SamplerError> {
        let local = self.ensemble.estimate(batch)?;
        self.placement.gather(local, &mut self.report.energies)?;
        check_finite(&self.report.energies, self.step)
    }

    /// Every rank's per-chain `local` values in global chain order.
    pub(crate) fn gather(&self, local: &[f64]) -> Result<Vec<f64>, SamplerError> {
        let mut global = vec![0.0; self.n_chains()];
        self.placement.gather(local, &mut global)?;
        Ok(global)
    }

    /// Sets chain `p`'s step size (global index) and, if this rank steps it, its kernel
    /// coefficients (computed on every rank, so an invalid step size errors everywhere).
    pub(crate) fn set_step(
        &mut self,
        p: usize,
        kernel: &Kernel,
        s: StepSize,
    ) -> Result<(), SamplerError> {
        let c = kernel.coefficients(&s)?;
        self.diffusions[p] = c.diffusion;
        if let Some(i) = p.checked_sub(self.first)
            && let Some(slot) = self.coefs.get_mut(i)
        {
            *slot = c;
        }
        self.report.step_sizes[p] = s;
        Ok(())
    }

    /// Gives every chain the same step size (coefficients computed once).
    pub(crate) fn set_all(&mut self, kernel: &Kernel, s: StepSize) -> Result<(), SamplerError> {
        let c = kernel.coefficients(&s)?;
        self.coefs.fill(c);
        self.diffusions.fill(c.diffusion);
        self.report.step_sizes.fill(s);
        Ok(())
    }

    /// For step sizes known before the energies (independent chains): estimates and moves this
    /// rank's chains in one pass with the coefficients set, checks the energies, and closes the
    /// report. Nothing crosses between ranks: the report holds this rank's energies only.
    pub(crate) fn step_independent(
        &mut self,
        batch: &E::Batch,
        kernel: &Kernel,
        phase: Phase,
    ) -> Result<&StepReport, SamplerError> {
        let k = self.step;
        let draws = self.draws(kernel);
        let energies = self
            .ensemble
            .estimate_and_apply(batch, kernel, &self.coefs, draws)?;
        let here = self.report.local.clone();
        self.report.energies[here].copy_from_slice(energies);
        check_finite(&self.report.energies, k)?;
        self.report.step = k;
        self.report.phase = Some(phase);
        self.step += 1;
        Ok(&self.report)
    }

    /// What this step draws, decided over every chain of the run.
    fn draws(&self, kernel: &Kernel) -> Draws {
        let refresh = kernel.refreshes_at(self.step);
        Draws::of(kernel, self.diffusions.iter().copied(), refresh)
    }

    /// Chains `a` and `b` (global indices) trade kernel states with velocity lags `lags`
    /// ([`Ensemble::swap_kernel_state`]): in this rank's ensemble when it steps both; when it
    /// steps one, its chain's [`KernelRow`] goes to the rank of the
    /// other and that rank's comes back (one point-to-point exchange); nothing when it steps
    /// neither.
    pub(crate) fn swap_kernel_state(
        &mut self,
        a: usize,
        b: usize,
        (la, lb): (f64, f64),
    ) -> Result<(), SamplerError> {
        let here = self.local();
        let (first, own_a, own_b) = (self.first, here.contains(&a), here.contains(&b));
        if own_a && own_b {
            self.ensemble
                .swap_kernel_state(a - first, b - first, (la, lb));
            return Ok(());
        }
        if !own_a && !own_b {
            return Ok(());
        }
        let (own, other, lag) = if own_a { (a, b, la) } else { (b, a, lb) };
        let mine = self.ensemble.kernel_row(own - first)?.to_values();
        let peer = self.placement.layout().owner(other);
        let theirs = self.placement.comm().exchange(peer, &mine)?;
        let swap = RowSwap {
            peer: KernelRow::from_values(&theirs)?,
            lag,
            first: own_a,
        };
        self.ensemble.take_kernel_row(own - first, &swap)
    }

    /// Moves this rank's chains with the coefficients set and closes the step's report.
    pub(crate) fn apply(&mut self, kernel: &Kernel, phase: Phase) -> &StepReport {
        let k = self.step;
        let draws = self.draws(kernel);
        self.ensemble.apply(kernel, &self.coefs, draws);
        self.report.step = k;
        self.report.phase = Some(phase);
        self.step += 1;
        &self.report
    }
}

impl<E: Ensemble> Driver<E> {
    /// The state of the chains and counters, with the sampler's own state.
    pub(crate) fn state(&self, algorithm: AlgorithmState) -> Result<SamplerState, SamplerError> {
        Ok(SamplerState {
            chains: Some(ChainSpan {
                first: self.first,
                local: self.coefs.len(),
                total: self.n_chains(),
            }),
            step: self.step,
            bouncy_moves: self.report.bouncy_moves,
            algorithm,
            ensemble: self.ensemble.state()?,
        })
    }

    /// Restores chains and counters; returns the checkpoint's algorithm state for the sampler
    /// to take. `kind` names the sampler's algorithm state; another one is refused before
    /// anything changes.
    pub(crate) fn restore(
        &mut self,
        state: SamplerState,
        kind: &str,
    ) -> Result<AlgorithmState, SamplerError> {
        let saved = match &state.algorithm {
            AlgorithmState::Sgmcmc => "sgmcmc",
            AlgorithmState::Contour { .. } => "contour",
            AlgorithmState::Replica(_) => "replica",
        };
        if saved != kind {
            return Err(mismatch(format!(
                "a {saved} sampler's checkpoint given to a {kind} sampler"
            )));
        }
        let here = ChainSpan {
            first: self.first,
            local: self.coefs.len(),
            total: self.n_chains(),
        };
        let saved_span = state.chains.unwrap_or(ChainSpan {
            first: 0,
            local: here.total,
            total: here.total,
        });
        if saved_span != here {
            return Err(mismatch(format!(
                "the checkpoint holds chains {}..{} of {}, this process steps chains {}..{} of {}",
                saved_span.first,
                saved_span.first + saved_span.local,
                saved_span.total,
                here.first,
                here.first + here.local,
                here.total
            )));
        }
        self.ensemble.restore(state.ensemble)?;
        self.step = state.step;
        self.report.bouncy_moves = state.bouncy_moves;
        Ok(state.algorithm)
    }
}
