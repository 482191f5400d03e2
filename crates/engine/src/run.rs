//! The run loop: a sampler, a batch source, a length, which steps to keep, and observers.
//!
//! ```text
//! for each step k:  batch (epoch, index)  ->  [points before the step, if kept]
//!                   ->  Sampler::step  ->  observers' on_step
//!                   ->  kept?  observers' on_sample (points, target chains, log weights)
//!                   ->  checkpoint due?  flush observers, write sampler + observer states
//! ```
//!
//! The sampler owns the algorithm, the run owns the loop (argmin's split of solver and
//! executor): a sampler never loops, and a run never knows which algorithm it drives. A run
//! starts from the sampler's own step counter, so [`Run::resume`] only has to restore the
//! sampler and the observers.

use std::path::{Path, PathBuf};
use std::time::Instant;

use sgmcmc_samplers::collect::Thinning;
use sgmcmc_samplers::control::Phase;
use sgmcmc_samplers::ensemble::Ensemble;
use sgmcmc_samplers::sampler::{Sampler, StepReport};

use crate::batches::BatchSource;
use crate::checkpoint::{Checkpoint, Checkpoints, VERSION};
use crate::checkpoint_parts::write_part;
use crate::error::RunError;
use crate::observer::{Kept, Observer, Points, Progress};
use crate::ranks::Ranks;

/// A run's stop condition ([`Run::stop_when`]).
type StopCondition<'a> = Box<dyn FnMut(&Progress, &StepReport) -> bool + 'a>;

/// How long a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Length {
    /// This many steps in all.
    Steps(u64),
    /// This many epochs of the batch source.
    Epochs(u64),
}

impl Length {
    /// The steps of this length over a batch source of `per_epoch` batches an epoch (`None`:
    /// one addressed by step alone, which has no epochs).
    pub fn steps(self, per_epoch: Option<u64>) -> Result<u64, RunError> {
        match self {
            Self::Steps(n) => Ok(n),
            Self::Epochs(e) => match per_epoch {
                Some(0) => Err(RunError::Setting("an epoch has no batch".into())),
                Some(p) => e.checked_mul(p).ok_or_else(|| {
                    RunError::Setting(format!("{e} epochs of {p} batches overflow"))
                }),
                None => Err(RunError::Setting(
                    "a length in epochs needs a batch source with epochs".into(),
                )),
            },
        }
    }
}

/// Which steps' pre-move points are samples.
pub enum Keep<'a> {
    /// After a burn-in, every `thin`-th step (and never in the exploration phase of a cyclical
    /// schedule).
    Thin(Thinning),
    /// The steps a rule names (e.g. the first step of every evaluation epoch).
    When(Box<dyn Fn(u64) -> bool + 'a>),
}

impl Keep<'_> {
    fn keeps(&self, k: u64) -> bool {
        match self {
            Self::Thin(t) => t.keeps(k),
            Self::When(rule) => rule(k),
        }
    }
}

/// What a finished (or stopped) run did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunReport {
    /// Steps done in all (including steps before a resume).
    pub steps: u64,
    /// Steps done in this session.
    pub session_steps: u64,
    /// Wall time of this session's loop, seconds.
    pub wall_seconds: f64,
    /// Whether the run stopped early ([`Run::stop_after`]) rather than finishing.
    pub stopped: bool,
    /// Whether the run ended because its stop condition held ([`Run::stop_when`]); then
    /// [`RunReport::steps`] counts the steps up to and including the one that met it.
    pub condition_met: bool,
}

impl RunReport {
    /// Steps per second of this session.
    pub fn steps_per_second(&self) -> f64 {
        self.session_steps as f64 / self.wall_seconds.max(f64::MIN_POSITIVE)
    }
}

/// A run of a sampler over a batch source, with observers.
///
/// ```
/// use sgmcmc_engine::{Kept, Repeat, Run, observers::OnSample};
/// use sgmcmc_testfunctions::by_name;
/// use sgmcmc_samplers::ensemble::{HostEnsemble, HostPoints};
/// use sgmcmc_samplers::registry::{BuildContext, SamplerSettings};
///
/// let chains = HostEnsemble::new(by_name("normal")?, &[vec![0.0]], 1)?;
/// let mut sgld = SamplerSettings::named("sgld").spec(&BuildContext::steps(2000))?.build(chains, 1)?;
/// let (mut sum, mut n) = (0.0, 0);
/// let mut mean = OnSample::new(|kept: &Kept<HostPoints>| {
///     sum += kept.points.chain(0)[0];
///     n += 1;
/// });
/// Run::steps(2000).burn_in(500).thin(10).observe(&mut mean).run(&mut sgld, &mut Repeat(()))?;
/// drop(mean);
/// assert_eq!(n, 150);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Run<'a, S: Sampler> {
    length: Length,
    keep: Keep<'a>,
    observers: Vec<&'a mut dyn Observer<S>>,
    checkpoints: Option<Checkpoints>,
    resume: Option<Checkpoint>,
    stop_after: Option<Length>,
    /// The stop condition ([`Run::stop_when`]).
    until: Option<StopCondition<'a>>,
    /// This rank's part of the last checkpoint of a distributed run (deleted after the next).
    last_part: Option<PathBuf>,
    /// The ranks the run spans ([`Run::over`]).
    ranks: Option<&'a Ranks>,
}

impl<'a, S: Sampler> Run<'a, S> {
    /// A run of `length`, keeping every step from the start.
    pub fn new(length: Length) -> Self {
        Self {
            length,
            keep: Keep::Thin(Thinning {
                burn_in: 0,
                thin: 1,
            }),
            observers: Vec::new(),
            checkpoints: None,
            resume: None,
            stop_after: None,
            until: None,
            last_part: None,
            ranks: None,
        }
    }

    /// A run of `n` steps.
    pub fn steps(n: u64) -> Self {
        Self::new(Length::Steps(n))
    }

    /// A run of `n` epochs of the batch source.
    pub fn epochs(n: u64) -> Self {
        Self::new(Length::Epochs(n))
    }

    /// Discards the first `n` steps' points.
    pub fn burn_in(mut self, n: u64) -> Self {
        if let Keep::Thin(t) = &mut self.keep {
            t.burn_in = n;
        } else {
            self.keep = Keep::Thin(Thinning {
                burn_in: n,
                thin: 1,
            });
        }
        self
    }

    /// Keeps every `n`-th step after the burn-in.
    pub fn thin(mut self, n: u64) -> Self {
        if let Keep::Thin(t) = &mut self.keep {
            t.thin = n;
        } else {
            self.keep = Keep::Thin(Thinning {
                burn_in: 0,
                thin: n,
            });
        }
        self
    }

    /// Keeps exactly the steps `rule` names (replaces burn-in and thinning).
    pub fn keep_when(mut self, rule: impl Fn(u64) -> bool + 'a) -> Self {
        self.keep = Keep::When(Box::new(rule));
        self
    }

    /// Adds an observer (called after the ones added before it).
    pub fn observe(mut self, observer: &'a mut dyn Observer<S>) -> Self {
        self.observers.push(observer);
        self
    }

    /// Writes checkpoints (every [`Checkpoints::every`] steps, at an early stop, and at the
    /// end).
    pub fn checkpoints(mut self, c: Checkpoints) -> Self {
        self.checkpoints = Some(c);
        self
    }

    /// Continues from `checkpoint`: the sampler and the observers (the same ones, added in the
    /// same order) get their saved states back before the first step.
    pub fn resume(mut self, checkpoint: Checkpoint) -> Self {
        self.resume = Some(checkpoint);
        self
    }

    /// Continues from this rank's part of a distributed checkpoint
    /// ([`crate::checkpoint_parts::read_part`]); the part is deleted after the next checkpoint.
    pub fn resume_part(mut self, checkpoint: Checkpoint, part: PathBuf) -> Self {
        self.resume = Some(checkpoint);
        self.last_part = Some(part);
        self
    }

    /// Stops once `steps` steps are done in all, writing a checkpoint there if checkpoints are
    /// on.
    pub fn stop_after(self, steps: u64) -> Self {
        self.stop_at(Length::Steps(steps))
    }

    /// Stops once `length` is done in all (steps, or epochs of the batch source), writing a
    /// checkpoint there if checkpoints are on; a stop at or past the run's end is none.
    pub fn stop_at(mut self, length: Length) -> Self {
        self.stop_after = Some(length);
        self
    }

    /// Ends the run after the first step whose report meets `condition` (argmin's
    /// `terminate`): e.g. the first iterate in a target set, or a tolerance reached. The run
    /// then ends as a finished one does (observers' [`Observer::on_end`], the last checkpoint)
    /// after fewer steps, and its report says [`RunReport::condition_met`]. The condition is
    /// asked after the step's observers, so it sees what they recorded.
    ///
    /// Over several ranks every rank must reach the same answer at the same step (the end
    /// writes a checkpoint and calls observers that gather): read what every rank sees alike,
    /// e.g. the energies of coupled samplers, which are gathered each step, not the energies
    /// of independent chains, which a rank knows for its own block only. A checkpoint written
    /// at the end does not record that the condition was met: a resumed run steps on.
    pub fn stop_when(mut self, condition: impl FnMut(&Progress, &StepReport) -> bool + 'a) -> Self {
        self.until = Some(Box::new(condition));
        self
    }

    /// Runs on this rank of `ranks` ([`Ranks::local`]: one process, as without it): the
    /// checkpoints are this rank's part and a manifest when the run spans several
    /// ([`Ranks::checkpoints`]), a failing rank's line names the step it was at, and over
    /// several ranks an error ends the job from the rank that saw it, a divergence every rank
    /// saw alike from the rank that steps the chain ([`Ranks::settle`]). The sampler must be
    /// placed over the ranks (its [`Sampler::local_chains`] the global indices of its chains),
    /// as the registry's `build_placed` samplers are. The observers learn the ranks before the
    /// first step ([`Observer::over_ranks`]).
    pub fn over(mut self, ranks: &'a Ranks) -> Self {
        self.ranks = Some(ranks);
        self
    }

    /// Runs the sampler to the end (or to [`Run::stop_after`], or to the step that meets
    /// [`Run::stop_when`]).
    pub fn run<B>(mut self, sampler: &mut S, batches: &mut B) -> Result<RunReport, RunError>
    where
        B: BatchSource<Batch = S::Batch>,
    {
        let Some(ranks) = self.ranks else {
            return self.drive(sampler, batches);
        };
        for o in &mut self.observers {
            o.over_ranks(ranks);
        }
        ranks.note_step(sampler.steps_done());
        self.checkpoints = self.checkpoints.take().map(|c| ranks.checkpoints(c));
        let local = sampler.local_chains();
        ranks.settle(self.drive(sampler, batches), &local)
    }

    fn drive<B>(mut self, sampler: &mut S, batches: &mut B) -> Result<RunReport, RunError>
    where
        B: BatchSource<Batch = S::Batch>,
    {
        let per_epoch = batches.batches_per_epoch();
        let total = self.total(per_epoch)?;
        // A stop past the run's end is none, however far past (it saturates, never overflows).
        let stop_after = self
            .stop_after
            .map(|l| match (l, per_epoch) {
                (Length::Epochs(e), Some(p)) => Ok(e.saturating_mul(p)),
                (l, _) => l.steps(per_epoch),
            })
            .transpose()?;
        if let Some(c) = self.resume.take() {
            self.restore(sampler, c, total)?;
        }
        let start = sampler.steps_done();
        if start > total {
            return Err(RunError::Setting(format!(
                "the sampler has done {start} steps, more than the run's {total}"
            )));
        }
        let wants_points = self.observers.iter().any(|o| o.wants_points());
        let mut points = Points::<S>::default();
        let local = sampler.local_chains();
        let mut chains = Vec::with_capacity(local.len());
        let mut at = Progress {
            step: start,
            total,
            per_epoch,
        };
        if let Some(r) = self.ranks {
            r.note_step(start);
        }
        for o in &mut self.observers {
            o.on_start(&at, sampler)?;
        }
        let clock = Instant::now();
        for k in start..total {
            let (epoch, index) = match per_epoch {
                Some(e) => (k / e, k % e),
                None => (0, k),
            };
            let batch = batches.batch(epoch, index)?;
            at.step = k;
            if let Some(r) = self.ranks {
                r.note_step(k);
            }
            for o in &mut self.observers {
                o.before_step(&at, sampler)?;
            }
            let keep = self.keep.keeps(k);
            if keep && wants_points {
                sampler.ensemble().snapshot_into(&mut points);
            }
            sampler.step(&batch)?;
            let sampler = &*sampler;
            let report = sampler.report();
            for o in &mut self.observers {
                o.on_step(&at, sampler, report)?;
            }
            if keep && report.phase != Some(Phase::Exploration) {
                chains.clear();
                if report.rungs.is_empty() {
                    chains.extend(local.clone());
                } else {
                    chains.extend(
                        report
                            .rungs
                            .iter()
                            .position(|r| *r == 0)
                            .filter(|c| local.contains(c)),
                    );
                }
                let kept = Kept {
                    step: k,
                    points: &points,
                    first_chain: local.start,
                    chains: &chains,
                    log_weights: &report.log_weights,
                    report,
                };
                for o in &mut self.observers {
                    o.on_sample(&at, &kept)?;
                }
            }
            let done = k + 1;
            if self.until.as_mut().is_some_and(|met| met(&at, report)) {
                return self.end(sampler, &at, done, start, clock, true);
            }
            let stop = stop_after == Some(done) && done < total;
            let due = self
                .checkpoints
                .as_ref()
                .is_some_and(|c| c.every > 0 && done.is_multiple_of(c.every) && done < total);
            if due || (stop && self.checkpoints.is_some()) {
                self.checkpoint(sampler, done, total)?;
            }
            if stop {
                return Ok(RunReport {
                    steps: done,
                    session_steps: done - start,
                    wall_seconds: clock.elapsed().as_secs_f64(),
                    stopped: true,
                    condition_met: false,
                });
            }
        }
        at.step = total.saturating_sub(1);
        self.end(sampler, &at, total, start, clock, false)
    }

    /// The end of a run after `done` steps (the last one `at.step`): observers' `on_end` and
    /// `flush`, the last checkpoint.
    fn end(
        &mut self,
        sampler: &S,
        at: &Progress,
        done: u64,
        start: u64,
        clock: Instant,
        condition_met: bool,
    ) -> Result<RunReport, RunError> {
        let wall_seconds = clock.elapsed().as_secs_f64();
        for o in &mut self.observers {
            o.on_end(at, sampler)?;
            o.flush()?;
        }
        // The last checkpoint holds the final state (a longer run can continue from it).
        if self.checkpoints.is_some() {
            self.checkpoint(sampler, done, at.total)?;
        }
        Ok(RunReport {
            steps: done,
            session_steps: done - start,
            wall_seconds,
            stopped: false,
            condition_met,
        })
    }

    fn total(&self, per_epoch: Option<u64>) -> Result<u64, RunError> {
        let total = self.length.steps(per_epoch)?;
        if total == 0 {
            return Err(RunError::Setting("a run needs at least one step".into()));
        }
        if let Keep::Thin(t) = &self.keep {
            if t.thin == 0 {
                return Err(RunError::Setting("thin must be >= 1".into()));
            }
            if t.burn_in >= total {
                return Err(RunError::Setting(format!(
                    "a burn-in of {} steps leaves no sample in a run of {total} steps",
                    t.burn_in
                )));
            }
        }
        Ok(total)
    }

    fn checkpoint(&mut self, sampler: &S, done: u64, total: u64) -> Result<(), RunError> {
        let Some(c) = &self.checkpoints else {
            return Ok(());
        };
        let mut observers = Vec::with_capacity(self.observers.len());
        for o in &mut self.observers {
            o.flush()?;
            observers.push(o.save()?);
        }
        let checkpoint = Checkpoint {
            version: VERSION,
            next_step: done,
            total_steps: total,
            sampler: sampler.state()?,
            observers,
            meta: c.meta.clone(),
        };
        match &c.ranks {
            None => checkpoint.write(&c.path),
            Some(comm) => {
                let chains = sampler.local_chains().len();
                let previous = self.last_part.as_deref();
                let part = write_part(&checkpoint, &c.path, comm.as_ref(), chains, previous)?;
                self.last_part = Some(part);
                Ok(())
            }
        }
    }

    fn restore(&mut self, sampler: &mut S, c: Checkpoint, total: u64) -> Result<(), RunError> {
        let bad = |reason: String| {
            let path = self
                .checkpoints
                .as_ref()
                .map_or_else(|| Path::new("checkpoint").to_path_buf(), |c| c.path.clone());
            RunError::Malformed { path, reason }
        };
        if c.total_steps != total {
            return Err(bad(format!(
                "the checkpoint is of a run of {} steps, this run has {total}",
                c.total_steps
            )));
        }
        if c.observers.len() != self.observers.len() {
            return Err(bad(format!(
                "the checkpoint holds {} observers' states, this run has {} observers",
                c.observers.len(),
                self.observers.len()
            )));
        }
        if c.sampler.step != c.next_step {
            return Err(bad(
                "the sampler's step counter disagrees with the run's".into()
            ));
        }
        sampler.restore(c.sampler)?;
        for (o, s) in self.observers.iter_mut().zip(&c.observers) {
            o.restore(s)?;
        }
        Ok(())
    }
}
