//! A fault on purpose (feature `fault-injection`), for the tests of distributed runs and
//! their recovery: one rank's chains diverge, or its process is killed, at a given step.

use serde::{Deserialize, Serialize};

use super::{Draws, Ensemble, KernelRow, RowSwap};
use crate::SamplerError;
use crate::checkpoint::EnsembleState;
use crate::kernel::{Coefficients, Kernel};

/// What goes wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// The rank's first chain reports a NaN energy.
    Diverge,
    /// The rank's process sends itself SIGKILL.
    Kill,
}

/// A fault on rank `rank` at step `step` (counted in energy estimates of the rank's chains).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// The rank that fails (0 in a one-process run).
    pub rank: usize,
    /// The step at which it fails.
    pub step: u64,
    /// How.
    pub kind: FaultKind,
}

/// An ensemble that fails as its [`Fault`] says (and is a plain wrapper without one).
pub struct Faulty<E: Ensemble> {
    inner: E,
    fault: Option<Fault>,
    estimates: u64,
    energies: Vec<f64>,
}

impl<E: Ensemble> Faulty<E> {
    /// `inner` with an optional fault.
    pub fn new(inner: E, fault: Option<Fault>) -> Self {
        Self {
            inner,
            fault,
            estimates: 0,
            energies: Vec::new(),
        }
    }

    /// The energies of an estimate, after the fault if it is due.
    fn after(&mut self, energies: Vec<f64>) -> &[f64] {
        self.energies = energies;
        let k = self.estimates;
        self.estimates += 1;
        match self.fault {
            Some(f) if k >= f.step && f.kind == FaultKind::Diverge => self.energies[0] = f64::NAN,
            Some(f) if k == f.step && f.kind == FaultKind::Kill => {
                let pid = std::process::id().to_string();
                let _ = std::process::Command::new("kill")
                    .args(["-KILL", &pid])
                    .status();
            }
            _ => {}
        }
        &self.energies
    }
}

impl<E: Ensemble> Ensemble for Faulty<E> {
    type Batch = E::Batch;
    type Snapshot = E::Snapshot;

    fn n_chains(&self) -> usize {
        self.inner.n_chains()
    }

    fn estimate(&mut self, batch: &E::Batch) -> Result<&[f64], SamplerError> {
        if self.fault.is_none() {
            return self.inner.estimate(batch);
        }
        let e = self.inner.estimate(batch)?.to_vec();
        Ok(self.after(e))
    }

    fn apply(&mut self, kernel: &Kernel, coefs: &[Coefficients], draws: Draws) {
        self.inner.apply(kernel, coefs, draws);
    }

    fn estimate_and_apply(
        &mut self,
        batch: &E::Batch,
        kernel: &Kernel,
        coefs: &[Coefficients],
        draws: Draws,
    ) -> Result<&[f64], SamplerError> {
        if self.fault.is_none() {
            return self.inner.estimate_and_apply(batch, kernel, coefs, draws);
        }
        let e = self
            .inner
            .estimate_and_apply(batch, kernel, coefs, draws)?
            .to_vec();
        Ok(self.after(e))
    }

    fn last_energies(&self) -> &[f64] {
        match self.fault {
            None => self.inner.last_energies(),
            Some(_) => &self.energies,
        }
    }

    fn swap_kernel_state(&mut self, a: usize, b: usize, lags: (f64, f64)) {
        self.inner.swap_kernel_state(a, b, lags);
    }

    fn kernel_row(&self, c: usize) -> Result<KernelRow, SamplerError> {
        self.inner.kernel_row(c)
    }

    fn take_kernel_row(&mut self, c: usize, swap: &RowSwap) -> Result<(), SamplerError> {
        self.inner.take_kernel_row(c, swap)
    }

    fn snapshot_into(&self, out: &mut E::Snapshot) {
        self.inner.snapshot_into(out);
    }

    fn state(&self) -> Result<EnsembleState, SamplerError> {
        self.inner.state()
    }

    fn restore(&mut self, state: EnsembleState) -> Result<(), SamplerError> {
        self.inner.restore(state)
    }
}
