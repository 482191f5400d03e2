//! The mechanism every sampler shares: estimate energies, check them, set per-chain
//! coefficients, move the chains, fill the report.

use super::{StepReport, check_finite};
use crate::checkpoint::{AlgorithmState, SamplerState, mismatch};
use crate::control::Phase;
use crate::ensemble::Ensemble;
use crate::error::SamplerError;
use crate::kernel::{Coefficients, Kernel, StepSize};

/// An ensemble with its step counter, per-chain coefficients and report buffer.
pub(crate) struct Driver<E: Ensemble> {
    pub(crate) ensemble: E,
    pub(crate) step: u64,
    pub(crate) coefs: Vec<Coefficients>,
    pub(crate) report: StepReport,
}

impl<E: Ensemble> Driver<E> {
    /// A driver over `ensemble`; `with_bins` sizes the report's bin vector (contour samplers).
    pub(crate) fn new(ensemble: E, with_bins: bool) -> Self {
        let n = ensemble.n_chains();
        Self {
            ensemble,
            step: 0,
            coefs: vec![Coefficients::default(); n],
            report: StepReport {
                energies: vec![0.0; n],
                step_sizes: vec![StepSize::new(0.0, 0.0); n],
                bins: if with_bins { vec![0; n] } else { Vec::new() },
                weights: vec![1.0; n],
                log_weights: vec![0.0; n],
                ..StepReport::default()
            },
        }
    }

    /// Estimates every chain's energy into the report; errors on a non-finite energy.
    pub(crate) fn estimate(&mut self, batch: &E::Batch) -> Result<(), SamplerError> {
        let energies = self.ensemble.estimate(batch)?;
        check_finite(energies, self.step)?;
        self.report.energies.copy_from_slice(energies);
        Ok(())
    }

    /// Sets chain `p`'s step size and kernel coefficients.
    pub(crate) fn set_step(
        &mut self,
        p: usize,
        kernel: &Kernel,
        s: StepSize,
    ) -> Result<(), SamplerError> {
        self.coefs[p] = kernel.coefficients(&s)?;
        self.report.step_sizes[p] = s;
        Ok(())
    }

    /// Gives every chain the same step size (coefficients computed once).
    pub(crate) fn set_all(&mut self, kernel: &Kernel, s: StepSize) -> Result<(), SamplerError> {
        let c = kernel.coefficients(&s)?;
        self.coefs.fill(c);
        self.report.step_sizes.fill(s);
        Ok(())
    }

    /// For step sizes known before the energies (independent chains): estimates and moves every
    /// chain in one pass with the coefficients set, checks the energies, and closes the report.
    pub(crate) fn step_independent(
        &mut self,
        batch: &E::Batch,
        kernel: &Kernel,
        phase: Phase,
    ) -> Result<&StepReport, SamplerError> {
        let k = self.step;
        let refresh = kernel.refreshes_at(k);
        let energies = self
            .ensemble
            .estimate_and_apply(batch, kernel, &self.coefs, refresh)?;
        check_finite(energies, k)?;
        self.report.energies.copy_from_slice(energies);
        self.report.step = k;
        self.report.phase = Some(phase);
        self.step += 1;
        Ok(&self.report)
    }

    /// Moves every chain with the coefficients set and closes the step's report.
    pub(crate) fn apply(&mut self, kernel: &Kernel, phase: Phase) -> &StepReport {
        let k = self.step;
        self.ensemble
            .apply(kernel, &self.coefs, kernel.refreshes_at(k));
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
            AlgorithmState::Plain => "plain",
            AlgorithmState::Contour { .. } => "contour",
            AlgorithmState::Replica(_) => "replica",
        };
        if saved != kind {
            return Err(mismatch(format!(
                "a {saved} sampler's checkpoint given to a {kind} sampler"
            )));
        }
        self.ensemble.restore(state.ensemble)?;
        self.step = state.step;
        self.report.bouncy_moves = state.bouncy_moves;
        Ok(state.algorithm)
    }
}
