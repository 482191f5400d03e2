//! Independent runs side by side on the machine's cores.
//!
//! burn-flex splits GEMMs and large element-wise ops over rayon's pool. That pays for a CNN
//! (batch 256: 3.0 -> 3.6 steps/s from one to two threads on a 2-core machine) but costs on
//! small networks, whose ops take microseconds: handing a 100x64x100 GEMM to a second thread
//! and waiting for it costs more than it saves (a digits MLP: ~4,800 steps/s on one thread vs
//! ~3,400 on two). Small networks therefore compute inside a pool of their own size
//! ([`with_threads`]), and the machine's other cores go to independent runs ([`side_by_side`]:
//! the seeds of a benchmark, the cells of a table).

use std::sync::Mutex;

use rayon::ThreadPoolBuilder;

use crate::RunError;

/// Runs `f` with burn's CPU kernels on `threads` threads (0: rayon's default, one per core).
pub fn with_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> Result<T, RunError> {
    let pool = ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("sgmcmc-compute-{i}"))
        .build()
        .map_err(|e| RunError::Resources(format!("cannot start {threads} compute threads: {e}")))?;
    Ok(pool.install(f))
}

/// Runs every job on `workers` threads (at most one per core: more only share the cores),
/// each computing on one thread of its own ([`with_threads`]); the results in job order. A
/// job is taken by the next free worker, so the order in which jobs finish varies, not their
/// results. A job that did not run (its worker's compute pool could not start) is `None`.
pub fn side_by_side<J: Sync, R: Send>(
    jobs: &[J],
    workers: usize,
    run: impl Fn(&J) -> R + Sync,
) -> Vec<Option<R>> {
    let next = Mutex::new(0usize);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..jobs.len()).map(|_| None).collect());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..workers.clamp(1, cores) {
            scope.spawn(|| {
                // A worker whose pool cannot start leaves its jobs to the others, or unrun.
                let _started = with_threads(1, || {
                    loop {
                        let i = {
                            let mut n = next.lock().expect("job counter");
                            let i = *n;
                            *n += 1;
                            i
                        };
                        let Some(job) = jobs.get(i) else {
                            break;
                        };
                        let r = run(job);
                        results.lock().expect("results")[i] = Some(r);
                    }
                });
            });
        }
    });
    results.into_inner().expect("results")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_come_back_in_order_each_on_one_compute_thread() {
        let jobs: Vec<u64> = (0..20).collect();
        let out = side_by_side(&jobs, 4, |j| (j * j, rayon::current_num_threads()));
        assert_eq!(out.len(), 20);
        for (j, r) in out.into_iter().enumerate() {
            assert_eq!(r, Some(((j * j) as u64, 1)));
        }
        assert_eq!(with_threads(3, rayon::current_num_threads).unwrap(), 3);
    }
}
