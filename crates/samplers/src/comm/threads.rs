//! Ranks as threads of one process.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::{CommError, Communicator, check_gather};

/// A [`Communicator`] whose ranks are threads of one process: [`ThreadGroup::new`] returns one
/// handle per rank, each to be moved into its thread. The collectives meet at a barrier over
/// shared slots. It exercises the distributed code paths (chains split over ranks, replicated
/// control layers) without MPI; an aborted rank makes every other rank's next collective fail
/// instead of waiting forever.
pub struct ThreadGroup {
    rank: usize,
    shared: Arc<Shared>,
}

struct Shared {
    size: usize,
    state: Mutex<State>,
    turn: Condvar,
}

struct State {
    arrived: usize,
    generation: u64,
    aborted: Option<usize>,
    values: Vec<Vec<f64>>,
    bytes: Vec<Vec<u8>>,
    /// Point-to-point messages in flight, by `(from, to)`, oldest first.
    mail: HashMap<(usize, usize), VecDeque<Vec<f64>>>,
}

impl ThreadGroup {
    /// The `size` ranks' handles, rank `r` at index `r`.
    pub fn new(size: usize) -> Vec<Self> {
        let shared = Arc::new(Shared {
            size,
            state: Mutex::new(State {
                arrived: 0,
                generation: 0,
                aborted: None,
                values: vec![Vec::new(); size],
                bytes: vec![Vec::new(); size],
                mail: HashMap::new(),
            }),
            turn: Condvar::new(),
        });
        (0..size)
            .map(|rank| Self {
                rank,
                shared: Arc::clone(&shared),
            })
            .collect()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for every rank; the guard is held again on return.
    fn meet<'a>(
        &'a self,
        mut s: MutexGuard<'a, State>,
    ) -> Result<MutexGuard<'a, State>, CommError> {
        let aborted = |s: &State| s.aborted.map(|r| CommError(format!("rank {r} aborted")));
        if let Some(e) = aborted(&s) {
            return Err(e);
        }
        let generation = s.generation;
        s.arrived += 1;
        if s.arrived == self.shared.size {
            s.arrived = 0;
            s.generation += 1;
            self.shared.turn.notify_all();
            return Ok(s);
        }
        while s.generation == generation && s.aborted.is_none() {
            s = self.shared.turn.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        match aborted(&s) {
            Some(e) if s.generation == generation => Err(e),
            _ => Ok(s),
        }
    }

    /// Puts this rank's contribution in its slot, meets, reads, and meets again (so no rank
    /// overwrites a slot another still reads).
    fn collective<T>(
        &self,
        put: impl FnOnce(&mut State),
        read: impl FnOnce(&State) -> T,
    ) -> Result<T, CommError> {
        let mut s = self.lock();
        put(&mut s);
        let s = self.meet(s)?;
        let out = read(&s);
        drop(self.meet(s)?);
        Ok(out)
    }
}

impl Communicator for ThreadGroup {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.shared.size
    }

    fn all_gather(
        &self,
        local: &[f64],
        counts: &[usize],
        global: &mut [f64],
    ) -> Result<(), CommError> {
        check_gather(self.rank, local, counts, global)?;
        self.collective(
            |s| s.values[self.rank] = local.to_vec(),
            |s| {
                let mut at = 0;
                for v in &s.values {
                    global[at..at + v.len()].copy_from_slice(v);
                    at += v.len();
                }
            },
        )
    }

    fn gather_bytes(&self, local: &[u8]) -> Result<Option<Vec<Vec<u8>>>, CommError> {
        self.collective(
            |s| s.bytes[self.rank] = local.to_vec(),
            |s| (self.rank == 0).then(|| s.bytes.clone()),
        )
    }

    fn broadcast_bytes(&self, bytes: &mut Vec<u8>) -> Result<(), CommError> {
        let root = self.collective(
            |s| {
                if self.rank == 0 {
                    s.bytes[0] = bytes.clone();
                }
            },
            |s| s.bytes[0].clone(),
        )?;
        *bytes = root;
        Ok(())
    }

    fn barrier(&self) -> Result<(), CommError> {
        drop(self.meet(self.lock())?);
        Ok(())
    }

    fn exchange(&self, peer: usize, send: &[f64]) -> Result<Vec<f64>, CommError> {
        if peer >= self.shared.size {
            return Err(CommError(format!(
                "no rank {peer} among {} ranks",
                self.shared.size
            )));
        }
        let mut s = self.lock();
        s.mail
            .entry((self.rank, peer))
            .or_default()
            .push_back(send.to_vec());
        self.shared.turn.notify_all();
        loop {
            if let Some(v) = s
                .mail
                .get_mut(&(peer, self.rank))
                .and_then(VecDeque::pop_front)
            {
                return Ok(v);
            }
            if let Some(r) = s.aborted {
                return Err(CommError(format!("rank {r} aborted")));
            }
            s = self.shared.turn.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn abort(&self, code: i32) -> ! {
        self.lock().aborted = Some(self.rank);
        self.shared.turn.notify_all();
        panic!("rank {} aborted (exit code {code})", self.rank)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_gather_in_rank_order_exchange_in_pairs_and_an_abort_releases_the_others() {
        let counts = [2, 1, 3];
        let out: Vec<Vec<f64>> = std::thread::scope(|s| {
            let handles: Vec<_> = ThreadGroup::new(3)
                .into_iter()
                .map(|g| {
                    s.spawn(move || {
                        let r = g.rank();
                        let mut all = Vec::new();
                        for round in 0..50 {
                            let local = vec![(10 * r + round) as f64; counts[r]];
                            let mut global = vec![0.0; 6];
                            g.all_gather(&local, &counts, &mut global).unwrap();
                            all.extend(global);
                        }
                        let mut b = if r == 0 { vec![7u8] } else { Vec::new() };
                        g.broadcast_bytes(&mut b).unwrap();
                        assert_eq!(b, vec![7]);
                        let gathered = g.gather_bytes(&[r as u8]).unwrap();
                        assert_eq!(gathered.is_some(), r == 0);
                        // Ranks 0 and 2 trade two messages point to point; rank 1 sits out.
                        if r != 1 {
                            let peer = 2 - r;
                            for k in 0..2 {
                                let got = g.exchange(peer, &[r as f64, k as f64]).unwrap();
                                assert_eq!(got, [peer as f64, k as f64]);
                            }
                        }
                        all
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for o in &out {
            assert_eq!(&o[..6], &[0.0, 0.0, 10.0, 20.0, 20.0, 20.0]);
            assert_eq!(&o[6 * 49..], &[49.0, 49.0, 59.0, 69.0, 69.0, 69.0]);
        }
        // Rank 1 aborts; rank 0's next collective errors instead of waiting.
        let mut g = ThreadGroup::new(2);
        let (g1, g0) = (g.pop().unwrap(), g.pop().unwrap());
        let waiter = std::thread::spawn(move || g0.barrier());
        let aborter = std::thread::spawn(move || g1.abort(3));
        assert!(aborter.join().is_err());
        assert!(waiter.join().unwrap().is_err());
    }
}
