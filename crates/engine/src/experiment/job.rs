//! A command's job: the order every command that can run over the ranks of an MPI job follows.
//! Rank 0 prepares the run (its folder, its settings) and the other ranks follow what it
//! shares; every rank runs its part; rank 0 reports. A failure on any rank ends the job: the
//! rank that failed prints its line and aborts it ([`Ranks::fail`]); in one process the error
//! is returned. The command supplies the three parts and calls no collective of its own.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::ranks::{JobError, Ranks};

/// How rank 0 prepares a run and the other ranks follow ([`Ranks::lead`]).
pub struct Lead<Prepare, Share, Follow> {
    /// Rank 0's preparation: a fresh run folder, the settings of a repeated or continued run.
    pub prepare: Prepare,
    /// What rank 0 sends the others of what it prepared.
    pub share: Share,
    /// How another rank builds its own from what rank 0 sent (e.g. reads the data rank 0
    /// recorded).
    pub follow: Follow,
}

/// Runs a command over the ranks `distributed` asks for ([`Ranks::of`]):
///
/// 1. `lead`: rank 0 prepares the run and the other ranks follow what it shares ([`Lead`];
///    [`leader_only`] when they need nothing);
/// 2. `run(&prepared, &ranks)` on every rank: its part of the run, the ranks passed on to the
///    engine's runs (which return rank 0 the whole run's result);
/// 3. `report(prepared, result, over)` on rank 0 while the others wait, `over` the number of
///    ranks of a distributed job (`None` in one process).
pub fn run_job<P, S, R, E, Prepare, Share, Follow>(
    distributed: bool,
    lead: Lead<Prepare, Share, Follow>,
    run: impl FnOnce(&P, &Ranks) -> Result<R, E>,
    report: impl FnOnce(P, R, Option<usize>) -> Result<(), E>,
) -> Result<(), E>
where
    Prepare: FnOnce() -> Result<P, E>,
    Share: FnOnce(&P) -> S,
    Follow: FnOnce(S) -> Result<P, E>,
    S: Serialize + DeserializeOwned,
    E: JobError,
{
    run_job_on(&Ranks::of(distributed)?, lead, run, report)
}

/// [`run_job`] over `ranks` (e.g. thread ranks in a test).
pub fn run_job_on<P, S, R, E, Prepare, Share, Follow>(
    ranks: &Ranks,
    lead: Lead<Prepare, Share, Follow>,
    run: impl FnOnce(&P, &Ranks) -> Result<R, E>,
    report: impl FnOnce(P, R, Option<usize>) -> Result<(), E>,
) -> Result<(), E>
where
    Prepare: FnOnce() -> Result<P, E>,
    Share: FnOnce(&P) -> S,
    Follow: FnOnce(S) -> Result<P, E>,
    S: Serialize + DeserializeOwned,
    E: JobError,
{
    let prepared = ranks.lead(lead.prepare, lead.share, lead.follow)?;
    let result = ranks.check(run(&prepared, ranks))?;
    let over = ranks.is_distributed().then(|| ranks.size());
    ranks.on_leader(|| report(prepared, result, over))
}

/// The [`Lead`] of [`leader_only`]: rank 0 runs `F`, the others receive nothing.
pub type LeaderOnly<F, E> = Lead<F, fn(&()), fn(()) -> Result<(), E>>;

/// A [`run_job`] lead where rank 0 alone prepares (e.g. its run folder) and the other ranks
/// need nothing from it.
pub fn leader_only<E, F>(prepare: F) -> LeaderOnly<F, E>
where
    F: FnOnce() -> Result<(), E>,
{
    Lead {
        prepare,
        share: |_| (),
        follow: Ok,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use sgmcmc_samplers::comm::ThreadGroup;

    use super::*;
    use crate::error::RunError;

    #[test]
    fn one_process_prepares_runs_and_reports_in_turn() {
        let order = std::cell::RefCell::new(Vec::new());
        run_job(
            false,
            Lead {
                prepare: || {
                    order.borrow_mut().push("prepare");
                    Ok::<_, RunError>(7)
                },
                share: |p: &i32| *p,
                follow: |_| unreachable!("one process follows no one"),
            },
            |p, ranks| {
                order.borrow_mut().push("run");
                assert!(!ranks.is_distributed());
                Ok(p * 6)
            },
            |p, r, over| {
                order.borrow_mut().push("report");
                assert_eq!((p, r, over), (7, 42, None));
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(order.into_inner(), ["prepare", "run", "report"]);
    }

    #[test]
    fn one_process_returns_each_part_s_error_and_skips_the_rest() {
        let fails = |at: usize| {
            let ran = std::cell::RefCell::new(Vec::new());
            let part = |k| {
                ran.borrow_mut().push(k);
                if k == at {
                    Err(RunError::Setting(format!("part {k}")))
                } else {
                    Ok(())
                }
            };
            let out = run_job(
                false,
                leader_only(|| part(0)),
                |_, _| part(1),
                |_, _, _| part(2),
            );
            (out, ran.into_inner())
        };
        for at in 0..3 {
            let (out, ran) = fails(at);
            assert_eq!(out.unwrap_err().to_string(), format!("part {at}"));
            assert_eq!(ran, (0..=at).collect::<Vec<_>>());
        }
        let (out, ran) = fails(3);
        assert!(out.is_ok());
        assert_eq!(ran, [0, 1, 2]);
    }

    #[test]
    fn over_ranks_a_failing_part_ends_the_job_before_the_report() {
        // Rank 1's part fails: it aborts the job (a panic of every thread rank) and rank 0
        // never reports.
        let reports = AtomicUsize::new(0);
        let ended: Vec<bool> = std::thread::scope(|s| {
            let handles: Vec<_> = ThreadGroup::new(2)
                .into_iter()
                .map(|g| {
                    let reports = &reports;
                    s.spawn(move || {
                        let ranks = Ranks::over(Arc::new(g));
                        run_job_on(
                            &ranks,
                            leader_only(|| Ok::<_, RunError>(())),
                            |(), ranks| match ranks.rank() {
                                1 => Err(RunError::Setting("rank 1 cannot".into())),
                                _ => Ok(ranks.gather(0u8)?),
                            },
                            |(), _, _| {
                                reports.fetch_add(1, Ordering::Relaxed);
                                Ok(())
                            },
                        )
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().is_err()).collect()
        });
        assert_eq!(ended, [true, true]);
        assert_eq!(reports.into_inner(), 0);
    }

    #[test]
    fn over_ranks_the_others_follow_each_runs_its_part_and_rank_zero_alone_reports() {
        let reports = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for g in ThreadGroup::new(3) {
                let reports = &reports;
                s.spawn(move || {
                    let ranks = Ranks::over(Arc::new(g));
                    run_job_on(
                        &ranks,
                        Lead {
                            prepare: || Ok::<_, RunError>(String::from("folder")),
                            share: |p: &String| format!("{p} of rank 0"),
                            follow: Ok,
                        },
                        // Every rank's part, gathered to rank 0 as an engine run would.
                        |p, ranks| {
                            let want = if ranks.is_leader() {
                                "folder"
                            } else {
                                "folder of rank 0"
                            };
                            assert_eq!(p, want);
                            ranks.gather(ranks.rank() * 10)
                        },
                        |p, gathered, over| {
                            reports.lock().unwrap().push((p, gathered, over));
                            Ok(())
                        },
                    )
                    .unwrap();
                });
            }
        });
        let want = (String::from("folder"), Some(vec![0, 10, 20]), Some(3));
        assert_eq!(reports.into_inner().unwrap(), [want]);
    }

    #[test]
    fn over_ranks_a_lead_of_rank_zero_alone_reaches_every_rank() {
        let (prepared, ran) = (AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|s| {
            for g in ThreadGroup::new(2) {
                let (prepared, ran) = (&prepared, &ran);
                s.spawn(move || {
                    run_job_on(
                        &Ranks::over(Arc::new(g)),
                        leader_only(|| {
                            prepared.fetch_add(1, Ordering::Relaxed);
                            Ok::<_, RunError>(())
                        }),
                        |(), _| Ok(ran.fetch_add(1, Ordering::Relaxed)),
                        |(), _, over| {
                            assert_eq!(over, Some(2));
                            Ok(())
                        },
                    )
                    .unwrap();
                });
            }
        });
        assert_eq!((prepared.into_inner(), ran.into_inner()), (1, 2));
    }
}
