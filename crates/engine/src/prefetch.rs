//! Batches prepared ahead on a background thread.
//!
//! A [`BatchSource`] is a pure function of `(epoch, index)`, so the batches a run will ask for
//! next are known before it asks: [`Prefetch`] computes them on a thread of its own (reading,
//! augmenting, normalising and uploading the images while the device runs the step) and hands
//! them out in order. It holds at most `depth` finished batches. The run sees exactly the
//! batches the wrapped source gives, in the same order, so a run with prefetching is bit for
//! bit the run without it; and a resumed run, or any out-of-order request, simply restarts the
//! thread's stream at the batch asked for (the batches already made are dropped), so there is
//! no state to checkpoint.
//!
//! The thread stops when the wrapper is dropped. An error of the wrapped source reaches the
//! run at the batch it belongs to; a panic in it ends the thread and is reported as a
//! [`RunError::Batch`] naming the panic.

use std::sync::mpsc::{self, Receiver, Sender, SyncSender, TryRecvError};
use std::thread::JoinHandle;

use crate::batches::BatchSource;
use crate::error::RunError;

/// A [`BatchSource`] whose next batches are prepared on a background thread.
pub struct Prefetch<B: BatchSource> {
    per_epoch: Option<u64>,
    /// The stream the thread is making: requests are answered from it while they follow on.
    generation: u64,
    /// The key the current stream delivers next (`None`: no stream, or it ended on an error).
    next: Option<(u64, u64)>,
    worker: Option<Worker<B::Batch>>,
}

/// Where the thread's stream (re)starts.
struct Start {
    generation: u64,
    epoch: u64,
    index: u64,
}

/// One prepared batch.
struct Ready<T> {
    generation: u64,
    key: (u64, u64),
    batch: Result<T, RunError>,
}

struct Worker<T> {
    control: Sender<Start>,
    ready: Receiver<Ready<T>>,
    thread: JoinHandle<()>,
}

/// The batch after `(epoch, index)` in a run's order (`Run` counts an endless source's steps
/// as indices of epoch 0); `None` past `u64::MAX`.
fn following(per_epoch: Option<u64>, (epoch, index): (u64, u64)) -> Option<(u64, u64)> {
    match per_epoch {
        Some(n) if index + 1 >= n => Some((epoch.checked_add(1)?, 0)),
        _ => Some((epoch, index.checked_add(1)?)),
    }
}

impl<B> Prefetch<B>
where
    B: BatchSource + Send + 'static,
    B::Batch: Send + 'static,
{
    /// `source` on a background thread that keeps up to `depth` batches ready (2 is enough to
    /// hide a batch that takes less time than a step). Errors on a depth of 0.
    pub fn new(source: B, depth: usize) -> Result<Self, RunError> {
        if depth == 0 {
            return Err(RunError::Setting(
                "prefetch depth must be at least 1 (batches kept ready)".into(),
            ));
        }
        let per_epoch = source.batches_per_epoch();
        let (control, commands) = mpsc::channel();
        let (done, ready) = mpsc::sync_channel(depth);
        let thread = std::thread::Builder::new()
            .name("sgmcmc-prefetch".into())
            .spawn(move || work(source, per_epoch, &commands, &done))
            .map_err(|e| RunError::Batch(format!("starting the prefetching thread: {e}")))?;
        Ok(Self {
            per_epoch,
            generation: 0,
            next: None,
            worker: Some(Worker {
                control,
                ready,
                thread,
            }),
        })
    }
}

/// The thread: make the batches of the current stream in order, switching to a new stream as
/// soon as one is asked for; end when the wrapper goes.
fn work<B: BatchSource>(
    mut source: B,
    per_epoch: Option<u64>,
    commands: &Receiver<Start>,
    done: &SyncSender<Ready<B::Batch>>,
) {
    let mut at: Option<(u64, (u64, u64))> = None;
    loop {
        // The newest request wins; wait for one when there is nothing to make.
        loop {
            let start = if at.is_some() {
                match commands.try_recv() {
                    Ok(s) => s,
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => return,
                }
            } else {
                match commands.recv() {
                    Ok(s) => s,
                    Err(_) => return,
                }
            };
            at = Some((start.generation, (start.epoch, start.index)));
        }
        let Some((generation, key)) = at else {
            continue;
        };
        let batch = source.batch(key.0, key.1);
        let failed = batch.is_err();
        let ready = Ready {
            generation,
            key,
            batch,
        };
        if done.send(ready).is_err() {
            return;
        }
        at = if failed {
            None
        } else {
            following(per_epoch, key).map(|k| (generation, k))
        };
    }
}

impl<B: BatchSource> Prefetch<B> {
    /// Why the thread is gone (its panic message, if it panicked).
    fn ended(&mut self) -> RunError {
        let why = match self.worker.take().map(|w| {
            drop(w.control);
            drop(w.ready);
            w.thread.join()
        }) {
            Some(Err(panic)) => panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into()),
            _ => "it stopped".into(),
        };
        RunError::Batch(format!("the batch-prefetching thread ended: {why}"))
    }
}

impl<B: BatchSource> BatchSource for Prefetch<B> {
    type Batch = B::Batch;

    fn batches_per_epoch(&self) -> Option<u64> {
        self.per_epoch
    }

    fn batch(&mut self, epoch: u64, index: u64) -> Result<B::Batch, RunError> {
        let Some(w) = self.worker.as_ref() else {
            return Err(self.ended());
        };
        if self.next != Some((epoch, index)) {
            self.generation += 1;
            let start = Start {
                generation: self.generation,
                epoch,
                index,
            };
            if w.control.send(start).is_err() {
                return Err(self.ended());
            }
        }
        loop {
            let Some(w) = self.worker.as_ref() else {
                return Err(self.ended());
            };
            let Ok(ready) = w.ready.recv() else {
                return Err(self.ended());
            };
            if ready.generation != self.generation {
                continue; // made for a stream the run left
            }
            debug_assert_eq!(ready.key, (epoch, index), "a stream delivers in order");
            self.next = match ready.batch {
                Ok(_) => following(self.per_epoch, ready.key),
                Err(_) => None,
            };
            return ready.batch;
        }
    }
}

impl<B: BatchSource> Drop for Prefetch<B> {
    fn drop(&mut self) {
        if let Some(w) = self.worker.take() {
            // Closing both channels ends the thread at its next send or wait.
            drop(w.control);
            drop(w.ready);
            let _ = w.thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    /// Batch `(e, i)` is `e * 100 + i`; counts the batches made; fails at `fail`.
    struct Numbers {
        per_epoch: Option<u64>,
        made: Arc<AtomicU64>,
        fail: Option<(u64, u64)>,
        panic_at: Option<(u64, u64)>,
    }

    impl BatchSource for Numbers {
        type Batch = u64;
        fn batches_per_epoch(&self) -> Option<u64> {
            self.per_epoch
        }
        fn batch(&mut self, epoch: u64, index: u64) -> Result<u64, RunError> {
            self.made.fetch_add(1, Ordering::Relaxed);
            if self.fail == Some((epoch, index)) {
                return Err(RunError::Batch(format!("no batch {epoch}/{index}")));
            }
            assert!(self.panic_at != Some((epoch, index)), "planted panic");
            Ok(epoch * 100 + index)
        }
    }

    fn numbers(per_epoch: Option<u64>) -> (Numbers, Arc<AtomicU64>) {
        let made = Arc::new(AtomicU64::new(0));
        let n = Numbers {
            per_epoch,
            made: Arc::clone(&made),
            fail: None,
            panic_at: None,
        };
        (n, made)
    }

    #[test]
    fn gives_the_sources_batches_in_run_order_and_on_jumps() {
        let (plain, _) = numbers(Some(3));
        let mut plain = plain;
        let (source, made) = numbers(Some(3));
        let mut p = Prefetch::new(source, 2).unwrap();
        assert_eq!(p.batches_per_epoch(), Some(3));
        // A run's order across an epoch boundary, then a resume-like jump back and a jump on.
        let keys: Vec<(u64, u64)> = (0..7)
            .map(|k| (k / 3, k % 3))
            .chain([(0, 1), (0, 2), (5, 0), (5, 1)])
            .collect();
        for (e, i) in keys {
            assert_eq!(p.batch(e, i).unwrap(), plain.batch(e, i).unwrap());
        }
        drop(p);
        // Bounded: each of the three streams made at most its batches plus depth + 1 ahead.
        let made = made.load(Ordering::Relaxed);
        assert!(made <= 11 + 3 * 3, "{made} batches made for 11 asked");
    }

    #[test]
    fn an_endless_source_counts_indices_of_epoch_zero() {
        let (source, _) = numbers(None);
        let mut p = Prefetch::new(source, 1).unwrap();
        for k in 0..5 {
            assert_eq!(p.batch(0, k).unwrap(), k);
        }
        assert_eq!(following(None, (0, u64::MAX)), None);
        assert_eq!(following(Some(4), (u64::MAX, 3)), None);
    }

    #[test]
    fn errors_and_panics_reach_the_run_as_errors() {
        let (mut source, _) = numbers(Some(4));
        source.fail = Some((0, 2));
        source.panic_at = Some((1, 1));
        let mut p = Prefetch::new(source, 2).unwrap();
        assert_eq!(p.batch(0, 1).unwrap(), 1);
        let e = p.batch(0, 2).unwrap_err();
        assert!(e.to_string().contains("no batch 0/2"), "{e}");
        // The stream stopped at the error; asking again restarts it.
        assert!(p.batch(0, 3).is_ok());
        let e = p.batch(1, 1).unwrap_err();
        assert!(e.to_string().contains("planted panic"), "{e}");
        assert!(p.batch(1, 2).is_err(), "the thread is gone");
        assert!(Prefetch::new(numbers(None).0, 0).is_err());
    }
}
