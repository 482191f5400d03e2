//! `--distributed`: a command's chains spread over the ranks of `mpirun` (feature `mpi`).
//!
//! The cross-rank rules are the engine's ([`sgmcmc_engine::ranks`], and the experiment
//! skeleton's resume, [`sgmcmc_engine::experiment::Resume`]); this module joins the job from the
//! command line, with the one-line error of a binary built without MPI.

pub use sgmcmc_engine::experiment::{Resume, resume_command};
pub use sgmcmc_engine::ranks::Ranks;

use crate::error::AppError;

/// Joins the MPI job this process was started in (`mpirun`); errors when this binary was
/// built without the `mpi` feature.
pub fn join() -> Result<Ranks, AppError> {
    #[cfg(feature = "mpi")]
    {
        Ok(Ranks::join()?)
    }
    #[cfg(not(feature = "mpi"))]
    Err(AppError::Usage(
        "--distributed needs MPI: this sgmcmc was built without it (rebuild with `--features \
         mpi`, after scripts/install-deps.sh)"
            .into(),
    ))
}

/// The ranks `--distributed` asks for: the MPI job's, else this process alone.
pub fn ranks_of(distributed: bool) -> Result<Ranks, AppError> {
    if distributed {
        join()
    } else {
        Ok(Ranks::local())
    }
}
