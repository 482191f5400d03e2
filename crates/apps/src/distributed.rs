//! `--distributed`: a command's chains spread over the ranks of `mpirun` (feature `mpi`).
//!
//! Every rank parses the same command line, builds the same configuration and steps its own
//! block of chains ([`sgmcmc_samplers::comm`]); rank 0 alone prints and writes the run folder.
//! A rank that fails prints one line naming itself and the step, then ends the whole job
//! (`MPI_Abort`), so no rank waits forever in a collective.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use sgmcmc_engine::{Observer, Progress, RunError};
use sgmcmc_samplers::SamplerError;
use sgmcmc_samplers::comm::{ChainLayout, Communicator, Placement};
use sgmcmc_samplers::sampler::Sampler;

use crate::error::AppError;

/// The ranks of a distributed run.
#[derive(Clone)]
pub struct Ranks {
    comm: Arc<dyn Communicator>,
    /// The last step this rank began (for the failure line).
    step: Arc<AtomicU64>,
}

impl Ranks {
    /// Joins the MPI job this process was started in (`mpirun`); errors when this binary was
    /// built without the `mpi` feature.
    pub fn join() -> Result<Self, AppError> {
        #[cfg(feature = "mpi")]
        {
            let comm = sgmcmc_engine::mpi::MpiComm::init()?;
            Ok(Self::over(Arc::new(comm)))
        }
        #[cfg(not(feature = "mpi"))]
        Err(AppError::Usage(
            "--distributed needs MPI: this sgmcmc was built without it (rebuild with `--features \
             mpi`, after scripts/install-deps.sh)"
                .into(),
        ))
    }

    /// The ranks of `comm` (e.g. a [`sgmcmc_samplers::comm::ThreadGroup`] handle in tests).
    pub fn over(comm: Arc<dyn Communicator>) -> Self {
        Self {
            comm,
            step: Arc::new(AtomicU64::new(0)),
        }
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.comm.rank()
    }

    /// Number of ranks.
    pub fn size(&self) -> usize {
        self.comm.size()
    }

    /// The communicator.
    pub fn comm(&self) -> &Arc<dyn Communicator> {
        &self.comm
    }

    /// `chains` chains in contiguous blocks over the ranks.
    pub fn placement(&self, chains: usize) -> Result<Placement, AppError> {
        let layout = ChainLayout::even(chains, self.size())?;
        Ok(Placement::new(Arc::clone(&self.comm), layout)?)
    }

    /// An observer that records the step this rank is at (for [`Ranks::fail`]).
    pub fn clock(&self) -> StepClock {
        StepClock(Arc::clone(&self.step))
    }

    /// Ends the job after `error` on this rank: one line naming the rank and the step, then
    /// `MPI_Abort` with the error's exit code. A divergence every rank saw alike (coupled
    /// samplers check the gathered energies) is reported by the rank that steps the chain; the
    /// others wait for its abort.
    pub fn fail(&self, error: &AppError, diverged: Option<(usize, &ChainLayout)>) -> ! {
        let rank = self.rank();
        if let Some((chain, layout)) = diverged
            && layout.owner(chain) != rank
        {
            // The owner aborts the job; a barrier it never reaches holds this rank until then.
            let _ = self.comm.barrier();
            self.comm.abort(error.exit_code());
        }
        eprintln!(
            "error: rank {rank} of {} at step {}: {}",
            self.size(),
            self.step.load(Ordering::Relaxed),
            error.to_string().replace('\n', " ")
        );
        self.comm.abort(error.exit_code())
    }

    /// Gathers every rank's `part` to rank 0 (`Some(parts in rank order)` there).
    pub fn gather<T: Serialize + for<'de> Deserialize<'de>>(
        &self,
        part: &T,
    ) -> Result<Option<Vec<T>>, AppError> {
        let mut bytes = Vec::new();
        ciborium::into_writer(part, &mut bytes)
            .map_err(|e| AppError::Run(format!("cannot encode this rank's samples: {e}")))?;
        let Some(all) = self.comm.gather_bytes(&bytes).map_err(SamplerError::from)? else {
            return Ok(None);
        };
        all.iter()
            .enumerate()
            .map(|(r, b)| {
                ciborium::from_reader(b.as_slice())
                    .map_err(|e| AppError::Run(format!("rank {r}'s samples are unreadable: {e}")))
            })
            .collect::<Result<Vec<T>, _>>()
            .map(Some)
    }
}

/// The global chain that diverged, if `error` is a divergence.
pub fn diverged_chain(error: &RunError) -> Option<usize> {
    match error {
        RunError::Sampler(SamplerError::Diverged { chain, .. }) => Some(*chain),
        RunError::Diverged { chain, .. } => Some(*chain),
        _ => None,
    }
}

/// Records the step a rank is about to take.
#[derive(Default)]
pub struct StepClock(Arc<AtomicU64>);

impl<S: Sampler> Observer<S> for StepClock {
    fn before_step(&mut self, at: &Progress, _: &S) -> Result<(), RunError> {
        self.0.store(at.step, Ordering::Relaxed);
        Ok(())
    }
}
