//! The ranks of a distributed run: which chains this process steps, and how the processes
//! agree, gather and fail together.
//!
//! Every rank runs the same program, builds the same configuration and steps its own block of
//! chains ([`sgmcmc_samplers::comm`]); rank 0 alone prints and writes the run's files. The
//! helpers here are the cross-rank rules every experiment needs:
//!
//! * [`Ranks::of`]: the ranks a command asks for, this process alone or the MPI job's;
//! * [`Ranks::agree`]: a step every rank takes (reading its checkpoint part, loading data)
//!   either succeeds everywhere or ends the job from the first rank that failed, so one line is
//!   printed whether one rank failed or all did;
//! * [`Ranks::settle`]: a run's result, where a divergence every rank saw (coupled samplers
//!   gather the energies) is reported by the rank that steps the chain;
//! * [`Ranks::lead`]: a run rank 0 prepares (its folder, its settings) and the others follow;
//! * [`Ranks::on_leader`], [`Ranks::gather`], [`Ranks::gather_chains`], [`Ranks::broadcast`]:
//!   rank 0's work and the collection of every rank's part (CBOR, bit-exact floats).
//!
//! A rank that fails prints one line naming itself and the step (which a run over the ranks,
//! [`crate::Run::over`], records) and ends the whole job ([`Communicator::abort`],
//! `MPI_Abort`), so no rank waits forever in a collective; a job of one rank has no rank to
//! wait, and returns its errors as one process does. A one-process run is the run over
//! [`Ranks::local`]: the same code path, and every gather a move without encoding.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use sgmcmc_samplers::SamplerError;
use sgmcmc_samplers::comm::{ChainLayout, Communicator, Local, Placement};

use crate::checkpoint::Checkpoints;
use crate::error::RunError;

/// An error a rank can end the job with: printable, with a process exit code, and able to
/// carry the run's own errors.
pub trait JobError: std::fmt::Display + From<RunError> {
    /// The exit code the job ends with.
    fn exit_code(&self) -> i32;
}

impl JobError for RunError {
    fn exit_code(&self) -> i32 {
        RunError::exit_code(self)
    }
}

/// The ranks of a distributed run.
#[derive(Clone)]
pub struct Ranks {
    comm: Arc<dyn Communicator>,
    /// Whether this is a job of ranks (`--distributed`, also of one rank), not one process.
    distributed: bool,
    /// The last step this rank began (for the failure line).
    step: Arc<AtomicU64>,
}

impl Ranks {
    /// Joins the MPI job this process was started in (`mpirun`; feature `mpi`).
    #[cfg(feature = "mpi")]
    pub fn join() -> Result<Self, RunError> {
        let comm = crate::mpi::MpiComm::init()?;
        Ok(Self::over(Arc::new(comm)))
    }

    /// The ranks a command asks for: with `distributed` the MPI job this process was started in
    /// (`Ranks::join`; in a build without the `mpi` feature, an error naming the feature),
    /// else this process alone.
    pub fn of(distributed: bool) -> Result<Self, RunError> {
        if !distributed {
            return Ok(Self::local());
        }
        #[cfg(feature = "mpi")]
        {
            Self::join()
        }
        #[cfg(not(feature = "mpi"))]
        Err(RunError::Setting(
            "--distributed needs MPI: this sgmcmc was built without it (rebuild with `--features \
             mpi`, after scripts/install-deps.sh)"
                .into(),
        ))
    }

    /// The ranks of `comm` (e.g. a [`sgmcmc_samplers::comm::ThreadGroup`] handle in tests).
    pub fn over(comm: Arc<dyn Communicator>) -> Self {
        Self {
            comm,
            distributed: true,
            step: Arc::new(AtomicU64::new(0)),
        }
    }

    /// One process: a single rank.
    pub fn local() -> Self {
        Self {
            distributed: false,
            ..Self::over(Arc::new(Local))
        }
    }

    /// Whether this is rank 0, the one that prints and writes the run folder.
    pub fn is_leader(&self) -> bool {
        self.rank() == 0
    }

    /// Whether this is a job of ranks (`--distributed`, even of one rank) rather than one
    /// process: its checkpoints are parts with a manifest, and a failing rank ends the job.
    pub fn is_distributed(&self) -> bool {
        self.distributed
    }

    /// Whether an error on this rank ends the whole job ([`Ranks::fail`]): other ranks wait on
    /// it. A job of one rank returns its errors as one process does, so its caller prints the
    /// one line and tidies up (a refused run takes back its folder) before the process ends.
    fn fails_the_job(&self) -> bool {
        self.is_distributed() && self.size() > 1
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
    pub fn placement(&self, chains: usize) -> Result<Placement, RunError> {
        let layout = ChainLayout::even(chains, self.size())?;
        Ok(Placement::new(Arc::clone(&self.comm), layout)?)
    }

    /// `checkpoints` written over these ranks (each rank its part, rank 0 the manifest) when
    /// the run spans several.
    pub fn checkpoints(&self, checkpoints: Checkpoints) -> Checkpoints {
        if self.is_distributed() {
            checkpoints.over_ranks(Arc::clone(&self.comm))
        } else {
            checkpoints
        }
    }

    /// A run rank 0 prepares and the other ranks follow: rank 0 runs `prepare` (a new run
    /// folder, a repeated or continued run; a failure there ends the job), and sends
    /// `share(&prepared)` to the others, which build their own from it with `follow` (e.g. read
    /// the data rank 0 recorded); a failure on any of them ends the job with one line. In one
    /// process, `prepare` alone.
    pub fn lead<P, S, E>(
        &self,
        prepare: impl FnOnce() -> Result<P, E>,
        share: impl FnOnce(&P) -> S,
        follow: impl FnOnce(S) -> Result<P, E>,
    ) -> Result<P, E>
    where
        S: Serialize + for<'de> Deserialize<'de>,
        E: JobError,
    {
        if !self.is_distributed() {
            return prepare();
        }
        let mine = if self.is_leader() {
            Some(self.check(prepare())?)
        } else {
            None
        };
        // In a 1-tuple: `Some(())` and `None` would both encode as a null.
        let shared = self.broadcast(mine.as_ref().map(|p| (share(p),)))?;
        match (mine, shared) {
            (Some(p), _) => self.agree(Ok(p)),
            (None, Some((s,))) => self.agree(follow(s)),
            (None, None) => self.agree(Err(RunError::Observer("rank 0 sent no run".into()).into())),
        }
    }

    /// Runs `f` on rank 0 alone (preparing the run folder, writing the outputs) while the
    /// others wait for it; a failure there ends the job. In one process `f`'s error is
    /// returned.
    pub fn on_leader<E: JobError>(&self, f: impl FnOnce() -> Result<(), E>) -> Result<(), E> {
        if !self.fails_the_job() {
            return f();
        }
        if self.is_leader()
            && let Err(e) = f()
        {
            self.fail(&e, None);
        }
        self.comm
            .barrier()
            .map_err(|e| E::from(SamplerError::from(e).into()))
    }

    /// `result` in one process; over several ranks an error ends the job from this rank
    /// ([`Ranks::fail`]). A divergence every rank saw alike is reported by the rank that steps
    /// the chain: `local` are the global indices of this rank's chains.
    pub fn settle<T>(
        &self,
        result: Result<T, RunError>,
        local: &Range<usize>,
    ) -> Result<T, RunError> {
        match result {
            Err(e) if self.fails_the_job() => {
                let owner = diverged_chain(&e).map(|c| local.contains(&c));
                self.fail(&e, owner)
            }
            r => r,
        }
    }

    /// `result` of a step every rank takes (reading its part, loading data): in one process
    /// as it is; over several ranks the ranks compare outcomes (one gathered flag each) and,
    /// if any failed, the first rank that failed prints its error and ends the job, so one
    /// line is printed whether one rank failed or all did.
    pub fn agree<T, E: JobError>(&self, result: Result<T, E>) -> Result<T, E> {
        if !self.fails_the_job() {
            return result;
        }
        let ok = [f64::from(u8::from(result.is_ok()))];
        let mut all = vec![0.0; self.size()];
        self.comm
            .all_gather(&ok, &vec![1; self.size()], &mut all)
            .map_err(|e| E::from(SamplerError::from(e).into()))?;
        match (result, all.iter().position(|v| *v == 0.0)) {
            (Ok(v), None) => Ok(v),
            (Err(e), Some(first)) if first == self.rank() => self.fail(&e, None),
            _ => {
                // The first rank that failed ends the job; a barrier it never reaches holds
                // this one until then.
                let _ = self.comm.barrier();
                self.comm.abort(1)
            }
        }
    }

    /// `result` in one process; over several ranks an error ends the job from this rank.
    pub fn check<T, E: JobError>(&self, result: Result<T, E>) -> Result<T, E> {
        match result {
            Err(e) if self.fails_the_job() => self.fail(&e, None),
            r => r,
        }
    }

    /// Records that this rank is about to take step `k` (the step [`Ranks::fail`] names).
    pub(crate) fn note_step(&self, k: u64) {
        self.step.store(k, Ordering::Relaxed);
    }

    /// Ends the job after `error` on this rank: one line naming the rank and the step, then
    /// `MPI_Abort` with the error's exit code. A divergence every rank saw alike (coupled
    /// samplers check the gathered energies) is reported by the rank that steps the chain; the
    /// others wait for its abort. `owns_diverged` says, for a divergence, whether this rank
    /// steps the chain that diverged (`None`: not a divergence, this rank reports).
    ///
    /// This line on standard error is the one thing the library prints: the process ends
    /// right after it, with no caller left to print it.
    pub fn fail<E: JobError>(&self, error: &E, owns_diverged: Option<bool>) -> ! {
        let rank = self.rank();
        if owns_diverged == Some(false) {
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

    /// Gathers every rank's `part` to rank 0 (`Some(parts in rank order)` there; in one
    /// process the part itself, not encoded).
    pub fn gather<T: Serialize + for<'de> Deserialize<'de>>(
        &self,
        part: T,
    ) -> Result<Option<Vec<T>>, RunError> {
        if !self.is_distributed() {
            return Ok(Some(vec![part]));
        }
        let mut bytes = Vec::new();
        ciborium::into_writer(&part, &mut bytes)
            .map_err(|e| RunError::Observer(format!("cannot encode this rank's samples: {e}")))?;
        let Some(all) = self.comm.gather_bytes(&bytes).map_err(SamplerError::from)? else {
            return Ok(None);
        };
        all.iter()
            .enumerate()
            .map(|(r, b)| {
                ciborium::from_reader(b.as_slice()).map_err(|e| {
                    RunError::Observer(format!("rank {r}'s samples are unreadable: {e}"))
                })
            })
            .collect::<Result<Vec<T>, _>>()
            .map(Some)
    }

    /// This rank's per-chain `mine` (its chains in order) to rank 0, where they arrive in
    /// global chain order (the ranks hold contiguous blocks in rank order).
    pub fn gather_chains<T: Serialize + for<'de> Deserialize<'de>>(
        &self,
        mine: Vec<T>,
    ) -> Result<Option<Vec<T>>, RunError> {
        Ok(self
            .gather(mine)?
            .map(|all| all.into_iter().flatten().collect()))
    }

    /// Rank 0's `value` on every rank (e.g. whether a file only rank 0 reads exists).
    pub fn broadcast<T: Serialize + for<'de> Deserialize<'de>>(
        &self,
        value: T,
    ) -> Result<T, RunError> {
        if !self.is_distributed() {
            return Ok(value);
        }
        let mut bytes = Vec::new();
        if self.is_leader() {
            ciborium::into_writer(&value, &mut bytes)
                .map_err(|e| RunError::Observer(format!("cannot encode a broadcast: {e}")))?;
        }
        self.comm
            .broadcast_bytes(&mut bytes)
            .map_err(SamplerError::from)?;
        ciborium::from_reader(bytes.as_slice())
            .map_err(|e| RunError::Observer(format!("rank 0's broadcast is unreadable: {e}")))
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

#[cfg(test)]
mod tests {
    use sgmcmc_samplers::comm::ThreadGroup;

    use super::*;

    #[test]
    fn rank_zero_prepares_and_the_others_follow_what_it_shares() {
        let prepared = AtomicU64::new(0);
        let got: Vec<u64> = std::thread::scope(|s| {
            let handles: Vec<_> = ThreadGroup::new(3)
                .into_iter()
                .map(|g| {
                    let prepared = &prepared;
                    s.spawn(move || {
                        let ranks = Ranks::over(Arc::new(g));
                        let prepare = || {
                            prepared.fetch_add(1, Ordering::Relaxed);
                            Ok::<u64, RunError>(10)
                        };
                        ranks.lead(prepare, |p| p * 2, |s| Ok(s + 1)).unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(got, vec![10, 21, 21]);
        assert_eq!(prepared.into_inner(), 1);
        // One process: `prepare` alone.
        let one = Ranks::local().lead(|| Ok::<u64, RunError>(5), |p| *p, |_| unreachable!());
        assert_eq!(one.unwrap(), 5);
    }

    #[test]
    fn a_job_of_one_rank_returns_its_errors_as_one_process_does() {
        // A thread group's abort panics: each call below would, had it ended the job.
        let g = ThreadGroup::new(1).pop().unwrap();
        let ranks = Ranks::over(Arc::new(g));
        assert!(ranks.is_distributed());
        let bad = || Err::<(), RunError>(RunError::Setting("bad".into()));
        assert!(ranks.agree(bad()).is_err());
        assert!(ranks.check(bad()).is_err());
        assert!(ranks.settle(bad(), &(0..1)).is_err());
        assert!(ranks.on_leader(bad).is_err());
        assert!(ranks.lead(bad, |_| (), |()| Ok(())).is_err());
    }
}
