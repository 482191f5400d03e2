//! Chains spread over processes: the communicator coupled samplers exchange scalars through.
//!
//! A coupled sampler (replica exchange, DEO*, ICSGLD) is a replicated control layer over chains
//! that may live in several processes. Every process ("rank") holds an [`Ensemble`] of its own
//! chains, a contiguous block of the global chain indices ([`ChainLayout`]); each step it
//! estimates its chains' energies, and one [`Communicator::all_gather`] of `P` `f64` gives every
//! rank the same global vector. The control layer (swap tests, ladder, buffer, `theta`, the swap
//! stream) then runs identically on every rank from identical inputs, and each rank moves its own
//! chains with their step sizes. Swaps exchange rungs, not parameters; the one thing that moves
//! between ranks is a velocity, which stays with its rung: an accepted swap of chains on two
//! ranks sends each chain's kernel state to the other rank ([`Communicator::exchange`]).
//!
//! The in-process [`Local`] communicator (one rank) is the default, so a single-process run is a
//! distributed run of size 1, bit for bit. [`ThreadGroup`] runs ranks as threads of one process
//! (tests of the distributed logic without MPI); `sgmcmc-engine` implements the trait over MPI
//! behind its `mpi` feature.
//!
//! Per-chain random streams are keyed by the *global* chain index (an ensemble built with
//! [`ChainLayout::first`] as its first stream), so chain `c` draws the same numbers wherever it
//! runs, and a distributed run reproduces the single-process run with the same seed.
//!
//! [`Ensemble`]: crate::ensemble::Ensemble

mod threads;

use std::ops::Range;
use std::sync::Arc;

use thiserror::Error;

pub use threads::ThreadGroup;

use crate::error::SamplerError;

/// A failed exchange between ranks.
#[derive(Clone, Debug, Error, PartialEq)]
#[error("communication failed: {0}")]
pub struct CommError(pub String);

impl From<CommError> for SamplerError {
    fn from(e: CommError) -> Self {
        SamplerError::Communication(e.0)
    }
}

/// How the ranks of a run talk: a handful of collective operations on small buffers, and one
/// point-to-point exchange between two ranks.
///
/// Every rank must call the same collectives in the same order (they block until all ranks
/// reach them). A rank that cannot continue should end the job with [`Communicator::abort`]
/// rather than return: the others would wait forever in their next collective.
pub trait Communicator: Send + Sync {
    /// This process's rank, `0..size`.
    fn rank(&self) -> usize;

    /// Number of ranks.
    fn size(&self) -> usize;

    /// Every rank's `local` concatenated in rank order into `global`, on every rank; rank `r`
    /// contributes `counts[r]` values (`counts` is the same on every rank, `local.len() ==
    /// counts[rank]`, `global.len()` their sum).
    fn all_gather(
        &self,
        local: &[f64],
        counts: &[usize],
        global: &mut [f64],
    ) -> Result<(), CommError>;

    /// Gathers one byte string from every rank to rank 0: `Some(strings in rank order)` on rank
    /// 0, `None` elsewhere (the final collection of samples).
    fn gather_bytes(&self, local: &[u8]) -> Result<Option<Vec<Vec<u8>>>, CommError>;

    /// Rank 0's `bytes` on every rank.
    fn broadcast_bytes(&self, bytes: &mut Vec<u8>) -> Result<(), CommError>;

    /// Blocks until every rank has called it.
    fn barrier(&self) -> Result<(), CommError>;

    /// Sends `send` to rank `peer` and returns what `peer` sent this rank in its own call
    /// (point to point: only the two ranks take part, and both must call it, in the same order
    /// with respect to their other exchanges). Replica exchange with velocities sends a
    /// chain's kernel state this way when a swap pairs chains of two ranks.
    fn exchange(&self, peer: usize, send: &[f64]) -> Result<Vec<f64>, CommError>;

    /// Ends the whole job with exit code `code` (MPI_Abort); never returns.
    fn abort(&self, code: i32) -> !;
}

/// One process, one rank: every collective is a copy.
#[derive(Clone, Copy, Debug, Default)]
pub struct Local;

impl Communicator for Local {
    fn rank(&self) -> usize {
        0
    }

    fn size(&self) -> usize {
        1
    }

    fn all_gather(
        &self,
        local: &[f64],
        counts: &[usize],
        global: &mut [f64],
    ) -> Result<(), CommError> {
        check_gather(0, local, counts, global)?;
        global.copy_from_slice(local);
        Ok(())
    }

    fn gather_bytes(&self, local: &[u8]) -> Result<Option<Vec<Vec<u8>>>, CommError> {
        Ok(Some(vec![local.to_vec()]))
    }

    fn broadcast_bytes(&self, _: &mut Vec<u8>) -> Result<(), CommError> {
        Ok(())
    }

    fn barrier(&self) -> Result<(), CommError> {
        Ok(())
    }

    fn exchange(&self, peer: usize, send: &[f64]) -> Result<Vec<f64>, CommError> {
        match peer {
            0 => Ok(send.to_vec()),
            _ => Err(CommError(format!("no rank {peer} in a one-rank run"))),
        }
    }

    fn abort(&self, code: i32) -> ! {
        std::process::exit(code)
    }
}

/// Checks the buffers of an [`Communicator::all_gather`] on rank `rank`.
pub fn check_gather(
    rank: usize,
    local: &[f64],
    counts: &[usize],
    global: &[f64],
) -> Result<(), CommError> {
    let total: usize = counts.iter().sum();
    match counts.get(rank) {
        Some(&n) if n == local.len() && total == global.len() => Ok(()),
        _ => Err(CommError(format!(
            "rank {rank}: gather of {} values into {} with counts {counts:?}",
            local.len(),
            global.len()
        ))),
    }
}

/// Which rank steps which chains: rank `r` holds the `counts[r]` chains after those of ranks
/// `0..r`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainLayout {
    counts: Vec<usize>,
}

impl ChainLayout {
    /// A layout with `counts[r]` chains on rank `r`; every rank needs at least one chain.
    pub fn new(counts: Vec<usize>) -> Result<Self, SamplerError> {
        if counts.is_empty() || counts.contains(&0) {
            return Err(SamplerError::InvalidSetting(format!(
                "every rank needs at least one chain (chains per rank: {counts:?})"
            )));
        }
        Ok(Self { counts })
    }

    /// `total` chains over `ranks` ranks in contiguous blocks, the first `total mod ranks` ranks
    /// one chain more; errors when a rank would have none.
    pub fn even(total: usize, ranks: usize) -> Result<Self, SamplerError> {
        if ranks == 0 || total < ranks {
            return Err(SamplerError::InvalidSetting(format!(
                "{total} chains cannot be spread over {ranks} ranks (each rank needs at least \
                 one chain: run with at most {total} ranks)"
            )));
        }
        let (q, r) = (total / ranks, total % ranks);
        Self::new((0..ranks).map(|i| q + usize::from(i < r)).collect())
    }

    /// All `n` chains on one rank.
    pub fn single(n: usize) -> Self {
        Self { counts: vec![n] }
    }

    /// Chains per rank.
    pub fn counts(&self) -> &[usize] {
        &self.counts
    }

    /// Number of ranks.
    pub fn ranks(&self) -> usize {
        self.counts.len()
    }

    /// Number of chains over all ranks.
    pub fn total(&self) -> usize {
        self.counts.iter().sum()
    }

    /// The global index of rank `rank`'s first chain.
    pub fn first(&self, rank: usize) -> usize {
        self.counts[..rank].iter().sum()
    }

    /// The global indices of rank `rank`'s chains.
    pub fn range(&self, rank: usize) -> Range<usize> {
        let first = self.first(rank);
        first..first + self.counts[rank]
    }

    /// The rank that steps global chain `chain`.
    pub fn owner(&self, chain: usize) -> usize {
        let mut end = 0;
        for (r, n) in self.counts.iter().enumerate() {
            end += n;
            if chain < end {
                return r;
            }
        }
        self.counts.len() - 1
    }
}

/// Where a sampler's chains live: the communicator of the ranks and the layout of the chains
/// over them. [`Placement::local`] is the single-process default.
#[derive(Clone)]
pub struct Placement {
    comm: Arc<dyn Communicator>,
    layout: ChainLayout,
}

impl std::fmt::Debug for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Placement")
            .field("rank", &self.comm.rank())
            .field("layout", &self.layout)
            .finish()
    }
}

impl Placement {
    /// `n` chains in this process.
    pub fn local(n: usize) -> Self {
        Self {
            comm: Arc::new(Local),
            layout: ChainLayout::single(n),
        }
    }

    /// Chains laid out over the ranks of `comm`; errors when the layout has another number of
    /// ranks.
    pub fn new(comm: Arc<dyn Communicator>, layout: ChainLayout) -> Result<Self, SamplerError> {
        if layout.ranks() != comm.size() {
            return Err(SamplerError::InvalidSetting(format!(
                "a layout over {} ranks for a communicator of {}",
                layout.ranks(),
                comm.size()
            )));
        }
        Ok(Self { comm, layout })
    }

    /// The communicator.
    pub fn comm(&self) -> &Arc<dyn Communicator> {
        &self.comm
    }

    /// The layout.
    pub fn layout(&self) -> &ChainLayout {
        &self.layout
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.comm.rank()
    }

    /// Whether the chains span more than one rank.
    pub fn is_distributed(&self) -> bool {
        self.layout.ranks() > 1
    }

    /// Number of chains over all ranks.
    pub fn total(&self) -> usize {
        self.layout.total()
    }

    /// The global indices of this rank's chains.
    pub fn here(&self) -> Range<usize> {
        self.layout.range(self.comm.rank())
    }

    /// Every rank's per-chain `local` values into the global `global` (one value per chain).
    pub fn gather(&self, local: &[f64], global: &mut [f64]) -> Result<(), SamplerError> {
        Ok(self.comm.all_gather(local, self.layout.counts(), global)?)
    }

    /// Every rank's per-chain rows of `width` values (chain-major) into the global rows.
    pub fn gather_rows(
        &self,
        local: &[f64],
        width: usize,
        global: &mut [f64],
    ) -> Result<(), SamplerError> {
        let counts: Vec<usize> = self.layout.counts().iter().map(|n| n * width).collect();
        Ok(self.comm.all_gather(local, &counts, global)?)
    }

    /// Checks that an ensemble of `n` chains is this rank's part of the layout.
    pub fn check_chains(&self, n: usize) -> Result<(), SamplerError> {
        let want = self.here().len();
        if n != want {
            return Err(SamplerError::InvalidSetting(format!(
                "rank {} holds {n} chains, its part of the layout {:?} is {want}",
                self.rank(),
                self.layout.counts()
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_split_chains_into_contiguous_blocks() {
        let l = ChainLayout::even(10, 4).unwrap();
        assert_eq!(l.counts(), &[3, 3, 2, 2]);
        assert_eq!(l.range(2), 6..8);
        assert_eq!(l.total(), 10);
        assert_eq!(
            (0..10).map(|c| l.owner(c)).collect::<Vec<_>>(),
            [0, 0, 0, 1, 1, 1, 2, 2, 3, 3]
        );
        assert!(ChainLayout::even(3, 4).is_err());
        assert!(ChainLayout::new(vec![2, 0]).is_err());
        let p = Placement::local(3);
        assert_eq!(p.here(), 0..3);
        assert!(!p.is_distributed());
        let mut g = [0.0; 3];
        p.gather(&[1.0, 2.0, 3.0], &mut g).unwrap();
        assert_eq!(g, [1.0, 2.0, 3.0]);
        assert!(p.gather(&[1.0], &mut g).is_err());
        assert!(Placement::new(Arc::new(Local), ChainLayout::even(4, 2).unwrap()).is_err());
    }
}
