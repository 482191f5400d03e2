//! The MPI communicator (feature `mpi`): [`sgmcmc_samplers::comm::Communicator`] over rsmpi,
//! so coupled samplers spread their chains over the processes of `mpirun` (Open MPI or MPICH),
//! on one machine or many.
//!
//! ```text
//! mpirun -np 4 sgmcmc toy --preset deo-sgd-25-mode --distributed
//! ```
//!
//! Every exchange but one is an MPI collective on a small buffer: `MPI_Allgatherv` of the
//! chains' energies (`P` doubles) each step, `MPI_Gatherv` of byte strings to rank 0 for the
//! final collection and the checkpoint manifest, `MPI_Bcast`, `MPI_Ibarrier`. The exception is
//! point to point: `MPI_Sendrecv` between the two ranks of a replica swap whose velocities
//! trade places. MPI's default error handler aborts the job on a failed collective; a rank that fails on its own ends the job
//! with [`Communicator::abort`] (`MPI_Abort`), so no rank waits forever.

use std::sync::Mutex;

use mpi::Threading;
use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::point_to_point::{send_receive, send_receive_into};
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator as _, CommunicatorCollectives, Root};
use sgmcmc_samplers::comm::{CommError, Communicator, check_gather};

use crate::error::RunError;

/// The world communicator of an MPI job; dropping the last handle finalizes MPI.
pub struct MpiComm {
    world: SimpleCommunicator,
    rank: usize,
    size: usize,
    /// Serializes the calls: MPI is initialized at `MPI_THREAD_SERIALIZED` at most.
    lock: Mutex<()>,
    // Dropped last: finalizes MPI.
    _universe: Universe,
}

// SAFETY: `SimpleCommunicator` is a handle (an `MPI_Comm`) that any thread may use when MPI
// runs at `MPI_THREAD_SERIALIZED` or above and no two calls overlap. `MpiComm::init` refuses a
// library that provides less, and every call below holds `lock`.
unsafe impl Send for MpiComm {}
// SAFETY: see `Send`: shared use goes through `lock`.
unsafe impl Sync for MpiComm {}

impl MpiComm {
    /// Initializes MPI (once per process; a second call errors).
    pub fn init() -> Result<Self, RunError> {
        let (universe, provided) = mpi::initialize_with_threading(Threading::Serialized)
            .ok_or_else(|| {
                RunError::Setting("MPI is already initialized in this process".into())
            })?;
        if matches!(provided, Threading::Single | Threading::Funneled) {
            return Err(RunError::Setting(format!(
                "the MPI library provides thread level {provided:?}; sgmcmc needs Serialized"
            )));
        }
        let world = universe.world();
        let (rank, size) = (world.rank() as usize, world.size() as usize);
        Ok(Self {
            world,
            rank,
            size,
            lock: Mutex::new(()),
            _universe: universe,
        })
    }

    fn guard(&self) -> std::sync::MutexGuard<'_, ()> {
        self.lock.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// MPI counts and displacements (`int`) of `counts`.
fn partition(counts: &[usize]) -> Result<(Vec<i32>, Vec<i32>), CommError> {
    let mut at = 0usize;
    let mut c = Vec::with_capacity(counts.len());
    let mut d = Vec::with_capacity(counts.len());
    for &n in counts {
        let too_big = || CommError(format!("{} values exceed one MPI message", at + n));
        c.push(i32::try_from(n).map_err(|_| too_big())?);
        d.push(i32::try_from(at).map_err(|_| too_big())?);
        at += n;
    }
    Ok((c, d))
}

impl Communicator for MpiComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn all_gather(
        &self,
        local: &[f64],
        counts: &[usize],
        global: &mut [f64],
    ) -> Result<(), CommError> {
        check_gather(self.rank, local, counts, global)?;
        let (c, d) = partition(counts)?;
        let _g = self.guard();
        let mut parts = PartitionMut::new(global, c, d);
        self.world.all_gather_varcount_into(local, &mut parts);
        Ok(())
    }

    fn gather_bytes(&self, local: &[u8]) -> Result<Option<Vec<Vec<u8>>>, CommError> {
        let len = i32::try_from(local.len())
            .map_err(|_| CommError(format!("{} bytes exceed one MPI message", local.len())))?;
        let _g = self.guard();
        let root = self.world.process_at_rank(0);
        if self.rank != 0 {
            root.gather_into(&len);
            root.gather_varcount_into(local);
            return Ok(None);
        }
        let mut lens = vec![0i32; self.size];
        root.gather_into_root(&len, &mut lens[..]);
        let counts: Vec<usize> = lens.iter().map(|n| *n as usize).collect();
        let (c, d) = partition(&counts)?;
        let mut all = vec![0u8; counts.iter().sum()];
        {
            let mut parts = PartitionMut::new(&mut all[..], c, d);
            root.gather_varcount_into_root(local, &mut parts);
        }
        let mut at = 0;
        Ok(Some(
            counts
                .iter()
                .map(|n| {
                    at += n;
                    all[at - n..at].to_vec()
                })
                .collect(),
        ))
    }

    fn broadcast_bytes(&self, bytes: &mut Vec<u8>) -> Result<(), CommError> {
        let _g = self.guard();
        let root = self.world.process_at_rank(0);
        let mut len = bytes.len() as u64;
        root.broadcast_into(&mut len);
        bytes.resize(len as usize, 0);
        root.broadcast_into(&mut bytes[..]);
        Ok(())
    }

    /// A barrier that sleeps while it waits (`MPI_Ibarrier` polled every 200 us): barriers
    /// are rare (checkpoints, a rank waiting for another's abort, a benchmark's quiet phases),
    /// and a waiting rank should leave its core to the ranks still working.
    fn barrier(&self) -> Result<(), CommError> {
        let _g = self.guard();
        let mut request = self.world.immediate_barrier();
        loop {
            match request.test() {
                Ok(_) => return Ok(()),
                Err(r) => request = r,
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }

    /// `MPI_Sendrecv` with `peer`: the lengths first, then the values.
    fn exchange(&self, peer: usize, send: &[f64]) -> Result<Vec<f64>, CommError> {
        if peer >= self.size {
            return Err(CommError(format!(
                "no rank {peer} among {} ranks",
                self.size
            )));
        }
        let _g = self.guard();
        let other = self.world.process_at_rank(peer as i32);
        let (len, _): (u64, _) = send_receive(&(send.len() as u64), &other, &other);
        let mut got = vec![0.0; len as usize];
        send_receive_into(send, &other, &mut got[..], &other);
        Ok(got)
    }

    fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }
}
