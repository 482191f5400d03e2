//! A series of independent runs in one command (the seeds of a configuration, the cells of a
//! table): side by side in one process, one after another over the ranks of an MPI job, and a
//! run whose result file an earlier start of the folder wrote is read back, not run again.

use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::RunError;
use crate::jobs::{side_by_side, with_threads};
use crate::ranks::{JobError, Ranks};

/// Runs `jobs` and returns their results in job order. `run(job, ranks)` runs one job on this
/// rank's chains of `ranks` and returns rank 0's result (`None` on the other ranks); `done` is
/// called after each job (a progress bar).
///
/// * In one process `workers` jobs run side by side, each computing on one thread of its own
///   ([`side_by_side`]), and every job's outcome comes back, so one failed run (a diverged
///   chain) does not lose the others; a job that could not start (its worker's compute pool)
///   ends the series, whatever the other jobs' outcomes.
/// * Over the ranks of an MPI job ([`Ranks::is_distributed`]) the jobs run one after another,
///   each over every rank on one compute thread per rank; a failure on any rank ends the job
///   ([`Ranks::check`]), and rank 0 alone gets the results (the others an empty list).
pub fn run_series<J, R, E>(
    ranks: &Ranks,
    jobs: &[J],
    workers: usize,
    done: impl Fn() + Sync,
    run: impl Fn(&J, &Ranks) -> Result<Option<R>, E> + Sync,
) -> Result<Vec<Result<R, E>>, E>
where
    J: Sync,
    R: Send,
    E: JobError + Send,
{
    if ranks.is_distributed() {
        return with_threads(1, || {
            let mut results = Vec::new();
            for job in jobs {
                results.extend(ranks.check(run(job, ranks))?.map(Ok));
                done();
            }
            Ok(results)
        })?;
    }
    side_by_side(jobs, workers, |job| {
        let r = run(job, &Ranks::local()).and_then(|r| {
            r.ok_or_else(|| RunError::Observer("a one-process run has no result".into()).into())
        });
        done();
        r
    })
    .into_iter()
    .map(|r| r.ok_or_else(|| RunError::Resources("a run did not finish".into()).into()))
    .collect()
}

/// One run of a series that keeps its result in the file `path` (JSON; `None`: a run that
/// keeps no file). A file an earlier start of the folder wrote is read back by rank 0 and
/// checked against this run by `check` (e.g. its recorded settings); else `run` runs, and
/// rank 0 writes its result there. Every rank follows rank 0's view of the file; rank 0 alone
/// returns the result.
pub fn with_result_file<R, E>(
    ranks: &Ranks,
    path: Option<&Path>,
    check: impl FnOnce(&R, &Path) -> Result<(), E>,
    run: impl FnOnce() -> Result<Option<R>, E>,
) -> Result<Option<R>, E>
where
    R: Serialize + DeserializeOwned,
    E: From<RunError>,
{
    let finished = path.is_some_and(Path::exists);
    if ranks.broadcast(finished)? {
        let Some(path) = path.filter(|_| ranks.is_leader()) else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| RunError::Input(format!("cannot read {}: {e}", path.display())))?;
        let r: R = serde_json::from_str(&text)
            .map_err(|e| RunError::Input(format!("{}: {e}", path.display())))?;
        check(&r, path)?;
        return Ok(Some(r));
    }
    let r = run()?;
    if let (Some(path), Some(r)) = (path, &r) {
        crate::fs::write_json(path, r)?;
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_process_returns_every_outcome_in_order() {
        let jobs: Vec<u64> = (0..9).collect();
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let out = run_series(
            &Ranks::local(),
            &jobs,
            3,
            || {
                calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            },
            |j, _| {
                if j % 4 == 3 {
                    Err(RunError::Observer(format!("job {j}")))
                } else {
                    Ok(Some(j * 10))
                }
            },
        )
        .unwrap();
        assert_eq!(calls.into_inner(), 9);
        for (j, r) in out.into_iter().enumerate() {
            match r {
                Ok(v) => assert_eq!(v, j as u64 * 10),
                Err(e) => assert_eq!((j % 4, e.to_string()), (3, format!("job {j}"))),
            }
        }
    }

    #[test]
    fn over_ranks_the_jobs_run_in_turn_and_rank_zero_gets_the_results() {
        use std::sync::Arc;

        use sgmcmc_samplers::comm::ThreadGroup;

        let jobs: Vec<u64> = (0..5).collect();
        let per_rank: Vec<(usize, Vec<u64>, usize)> = std::thread::scope(|s| {
            let handles: Vec<_> = ThreadGroup::new(3)
                .into_iter()
                .map(|g| {
                    let jobs = &jobs;
                    s.spawn(move || {
                        let ranks = Ranks::over(Arc::new(g));
                        let done = std::sync::atomic::AtomicUsize::new(0);
                        let tick = || {
                            done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        };
                        // Each job is a collective: every rank must reach it, in job order.
                        let run = |j: &u64, r: &Ranks| {
                            let all = r.gather(*j)?;
                            Ok::<_, RunError>(all.map(|v| v.iter().sum::<u64>()))
                        };
                        let out = run_series(&ranks, jobs, 4, tick, run).unwrap();
                        let values = out.into_iter().map(Result::unwrap).collect();
                        (ranks.rank(), values, done.into_inner())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (rank, values, done) in per_rank {
            assert_eq!(done, 5);
            let want: Vec<u64> = if rank == 0 {
                jobs.iter().map(|j| 3 * j).collect()
            } else {
                Vec::new()
            };
            assert_eq!(values, want, "rank {rank}");
        }
    }

    #[test]
    fn a_result_file_is_written_then_read_back_and_checked() {
        let dir = std::env::temp_dir().join(format!("sgmcmc-series-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("result.json");
        let _ = std::fs::remove_file(&path);
        let local = Ranks::local();
        let ok = |_: &Vec<f64>, _: &Path| Ok::<(), RunError>(());
        let first = with_result_file(&local, Some(&path), ok, || Ok(Some(vec![1.5, -2.0])));
        assert_eq!(first.unwrap(), Some(vec![1.5, -2.0]));
        // The second start reads the file: `run` is not called.
        let again = with_result_file(&local, Some(&path), ok, || -> Result<_, RunError> {
            panic!("a finished run ran again")
        });
        assert_eq!(again.unwrap(), Some(vec![1.5, -2.0]));
        let refused = with_result_file(
            &local,
            Some(&path),
            |r: &Vec<f64>, _| Err(RunError::Input(format!("changed: {}", r.len()))),
            || Ok(None),
        );
        assert_eq!(refused.unwrap_err().to_string(), "changed: 2");
        std::fs::write(&path, "{").unwrap();
        let bad = with_result_file::<Vec<f64>, RunError>(&local, Some(&path), ok, || Ok(None));
        assert!(
            bad.unwrap_err()
                .to_string()
                .starts_with(&path.display().to_string())
        );
        // Without a file the run runs and nothing is written.
        let plain = with_result_file(&local, None, ok, || Ok(Some(vec![3.0])));
        assert_eq!(plain.unwrap(), Some(vec![3.0]));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
